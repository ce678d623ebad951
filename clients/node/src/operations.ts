/**
 * The store's methods over any `Queryable`: the pool for the store itself,
 * one connection inside `store.transaction`. One statement per method.
 */

import {
  appendEventJson,
  isoText,
  jsonText,
  parseResult,
  returnedEventJson,
  snapshotWriteJson,
  stateRequestJson,
  toPresenceRow,
  toStateRead,
  toStored,
} from './codec.js'
import type { Queryable, Statements } from './client.js'
import { supersededError, toA2Error } from './errors.js'
import type {
  A2CompleteResult,
  A2FailResult,
  A2Store,
  Clock,
  IdSource,
  StoreCompleteOptions,
  StoreFailOptions,
} from './types.js'

/**
 * Everything of A2Store that is one statement (all but the stream).
 * `completeAttempt` and `failAttempt` never answer `superseded`: a stale
 * attempt throws A2Error('SUPERSEDED_ATTEMPT'), as a caused append does
 * (README "Stale attempts"). The narrower results keep the store an A2Store.
 */
export type A2Operations = Omit<A2Store, 'stream' | 'completeAttempt' | 'failAttempt'> & {
  completeAttempt(options: StoreCompleteOptions): Promise<A2CompleteResult>
  failAttempt(options: StoreFailOptions): Promise<A2FailResult>
}

export type OperationContext = {
  sql: Statements
  clock: Clock | undefined
  ids: IdSource | undefined
}

type Json = Record<string, unknown>

export const operations = (
  ctx: OperationContext,
  handle: () => Promise<Queryable>,
): A2Operations => {
  const { sql, clock, ids } = ctx

  // One statement; its single column `r` is the function's jsonb answer.
  const run = async (
    name: string,
    args: string[],
    values: () => unknown[],
    useClock = true,
  ): Promise<unknown> => {
    try {
      const q = sql.call(name, args, values(), useClock ? clock : undefined)
      const c = await handle()
      const { rows } = await c.query(q.text, q.values)
      return parseResult(rows[0]?.['r'])
    } catch (err) {
      throw toA2Error(err)
    }
  }

  return {
    async append(sessionId, events) {
      const r = (await run('a2_append', ['$1::text', '$2::jsonb'], () => [
        sessionId,
        jsonText(events.map((e) => appendEventJson(e, e.id ?? ids?.()))),
      ])) as Json
      return {
        events: (r['events'] as unknown[]).map(toStored),
        hasPending: r['hasPending'] === true,
      }
    },

    async read(sessionId, options) {
      const r = (await run(
        'a2_read',
        ['$1::text', '$2::bigint', '$3::bigint'],
        () => [sessionId, options?.afterIndex ?? null, options?.throughIndex ?? null],
        false,
      )) as unknown[]
      return r.map(toStored)
    },

    async claimAvailable({ sessionId, holder, ttlMs, expiresAtMs, excludeIndexes }) {
      const r = (await run(
        'a2_claim',
        ['$1::text', '$2::text', '$3::bigint', '$4::timestamptz', '$5::bigint[]'],
        () => [
          sessionId,
          holder,
          ttlMs,
          expiresAtMs === undefined ? null : isoText(expiresAtMs, 'expiresAtMs'),
          [...(excludeIndexes ?? [])],
        ],
      )) as Json
      switch (r['outcome']) {
        case 'claimed':
          return { outcome: 'claimed', events: (r['events'] as unknown[]).map(toStored) }
        case 'busy':
          return { outcome: 'busy', retryAt: new Date(r['retryAt'] as string) }
        default:
          return { outcome: 'settled' }
      }
    },

    async renewClaims({ sessionId, holder, claims, ttlMs, expiresAtMs }) {
      // As the seed: an empty list asks nothing of the database.
      if (claims.length === 0) return { renewed: [], superseded: [] }
      const r = (await run(
        'a2_renew',
        ['$1::text', '$2::text', '$3::jsonb', '$4::bigint', '$5::timestamptz'],
        () => [
          sessionId,
          holder,
          jsonText(claims.map((c) => ({ index: c.index, attempt: c.attempt }))),
          ttlMs,
          expiresAtMs === undefined ? null : isoText(expiresAtMs, 'expiresAtMs'),
        ],
      )) as Json
      return {
        renewed: (r['renewed'] as unknown[]).map(Number),
        superseded: (r['superseded'] as unknown[]).map(Number),
      }
    },

    async completeAttempt({ sessionId, index, attempt, events }) {
      const r = (await run(
        'a2_complete',
        ['$1::text', '$2::bigint', '$3::integer', '$4::jsonb'],
        () => [sessionId, index, attempt, jsonText(events.map(returnedEventJson))],
      )) as Json
      // The server answers a stale attempt with {"outcome": "superseded"};
      // the client throws, so that in transaction() the handler's writes
      // roll back with it, as they do after a caused append's Z2002.
      if (r['outcome'] !== 'completed') throw supersededError(sessionId, index, attempt)
      return { outcome: 'completed', events: (r['events'] as unknown[]).map(toStored) }
    },

    async failAttempt({ sessionId, index, attempt, error, maxFailures }) {
      const r = (await run(
        'a2_fail',
        ['$1::text', '$2::bigint', '$3::integer', '$4::text', '$5::integer'],
        () => [sessionId, index, attempt, error ?? null, maxFailures],
      )) as Json
      if (r['outcome'] !== 'failed' && r['outcome'] !== 'dead_lettered') {
        throw supersededError(sessionId, index, attempt)
      }
      return { outcome: r['outcome'], failureCount: Number(r['failureCount']) }
    },

    async readState(sessionId, reducerName, options) {
      const r = await run(
        'a2_read_state',
        ['$1::text', '$2::text', '$3::bigint', '$4::bigint'],
        () => [
          sessionId,
          reducerName,
          options?.throughIndex ?? null,
          options?.snapshotThroughIndex ?? null,
        ],
        false,
      )
      return toStateRead(r)
    },

    async readStates(requests, reducerName) {
      if (requests.length === 0) return []
      const r = (await run(
        'a2_read_states',
        ['$1::jsonb', '$2::text'],
        () => [jsonText(requests.map(stateRequestJson)), reducerName],
        false,
      )) as unknown[]
      return r.map(toStateRead)
    },

    async putSnapshots(sessionId, reducerName, snapshots) {
      if (snapshots.length === 0) return
      await run('a2_put_snapshots', ['$1::text', '$2::text', '$3::jsonb'], () => [
        sessionId,
        reducerName,
        jsonText(snapshots.map(snapshotWriteJson)),
      ])
    },

    presence: {
      async set(ns, participant, values, meta) {
        // As the seed: no fields, no write.
        if (Object.keys(values).length === 0) return
        await run(
          'a2_presence_set',
          ['$1::text', '$2::text', '$3::jsonb', '$4::timestamptz', '$5::bigint', '$6::bigint'],
          () => [
            ns,
            participant,
            jsonText(values),
            isoText(meta.at, 'meta.at'),
            meta.seen,
            meta.ttlMs,
          ],
        )
      },

      async read(ns) {
        const r = (await run('a2_presence_read', ['$1::text'], () => [ns])) as unknown[]
        return r.map(toPresenceRow)
      },
    },
  }
}
