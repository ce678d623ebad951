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
  A2Controls,
  A2DispatchControl,
  A2FailResult,
  A2Store,
  Clock,
  IdSource,
  StoreCompleteOptions,
  StoreCompleteResult,
  StoreFailOptions,
  StoreFailResult,
} from './types.js'

/**
 * Everything of A2Store that is one statement (all but the stream), as the
 * contract has it: a stale attempt's completion or failure resolves
 * `{ outcome: 'superseded' }` (README "Stale attempts").
 */
export type A2ContractOperations = Omit<A2Store, 'stream'> & A2Controls & A2DispatchControl

/**
 * The strict form of the same calls: `completeAttempt` and `failAttempt`
 * never resolve `superseded`; a stale attempt throws
 * A2Error('SUPERSEDED_ATTEMPT'), as a caused append does. What
 * `store.transaction` hands its callback, and what the store's own calls
 * are with `superseded: 'throw'`. The narrower results still make an A2Store.
 */
export type A2Operations = Omit<A2Store, 'stream' | 'completeAttempt' | 'failAttempt'> & A2Controls & A2DispatchControl & {
  completeAttempt(options: StoreCompleteOptions): Promise<A2CompleteResult>
  failAttempt(options: StoreFailOptions): Promise<A2FailResult>
}

/**
 * How completeAttempt and failAttempt report a stale attempt: `'return'`
 * resolves the contract's `{ outcome: 'superseded' }` (with `failureCount`
 * for failAttempt); `'throw'` rejects with A2Error('SUPERSEDED_ATTEMPT').
 */
export type SupersededForm = 'return' | 'throw'

export type OperationContext = {
  sql: Statements
  clock: Clock | undefined
  ids: IdSource | undefined
}

type Json = Record<string, unknown>

const numOrNull = (v: unknown): number | null => (v === null || v === undefined ? null : Number(v))

export function operations(
  ctx: OperationContext,
  handle: () => Promise<Queryable>,
  superseded: 'throw',
): A2Operations
export function operations(
  ctx: OperationContext,
  handle: () => Promise<Queryable>,
  superseded: SupersededForm,
): A2ContractOperations
export function operations(
  ctx: OperationContext,
  handle: () => Promise<Queryable>,
  superseded: SupersededForm,
): A2ContractOperations {
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

  // A set-returning function's rows as one jsonb array, the clock first
  // (a scalar subquery in the select list runs after the FROM's set_config).
  const rowsOf = async (name: string): Promise<Json[]> => {
    try {
      const q = sql.call(name, [], [], clock)
      const text = q.text.replace(
        `SELECT ${sql.fn(name)}() AS r`,
        `SELECT (SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(x)), '[]'::jsonb) FROM ${sql.fn(name)}() x) AS r`,
      )
      const c = await handle()
      const { rows } = await c.query(text, q.values)
      return parseResult(rows[0]?.['r']) as Json[]
    } catch (err) {
      throw toA2Error(err)
    }
  }

  return {
    async append(sessionId, events) {
      const r = (await run('a2_append', ['$1::text', '$2::jsonb'], () => [
        sessionId,
        jsonText(events.map((e, i) => appendEventJson(e, e.id ?? ids?.(), i))),
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
        // clocked: a waiting event's timeout is judged at the store clock
        () => [sessionId, options?.afterIndex ?? null, options?.throughIndex ?? null],
      )) as unknown[]
      return r.map(toStored)
    },

    async claimNext({ holder, ttlMs, maxSessions, expiresAtMs, queues }) {
      const r = (await run(
        'a2_claim_next',
        ['$1::text', '$2::bigint', '$3::integer', '$4::timestamptz'].concat(
          queues === undefined ? [] : ['$5::text[]'],
        ),
        () => [
          holder,
          ttlMs,
          maxSessions ?? 1,
          expiresAtMs === undefined ? null : isoText(expiresAtMs, 'expiresAtMs'),
          ...(queues === undefined ? [] : [[...queues]]),
        ],
      )) as Json
      return {
        claims: (r['claims'] as Json[]).map((c) => ({
          sessionId: c['sessionId'] as string,
          events: (c['events'] as unknown[]).map(toStored),
        })),
        retryAt: r['retryAt'] === null || r['retryAt'] === undefined ? null : new Date(r['retryAt'] as string),
      }
    },

    async setConcurrencyLimit(key, maxLeased) {
      await run('a2_set_concurrency_limit', ['$1::text', '$2::integer'], () => [key, maxLeased], false)
    },

    async setRateLimit(key, maxClaims, perMs) {
      await run('a2_set_rate_limit', ['$1::text', '$2::integer', '$3::bigint'], () => [key, maxClaims, perMs], false)
    },

    async pauseQueue(queue) {
      const r = (await run('a2_pause_queue', ['$1::text'], () => [queue], false)) as Json
      return r['changed'] === true
    },

    async resumeQueue(queue) {
      const r = (await run('a2_resume_queue', ['$1::text'], () => [queue])) as Json
      return r['changed'] === true
    },

    async listQueues() {
      const r = await rowsOf('a2_list_queues')
      return r.map((q) => ({
        queue: q['queue'] as string,
        paused: q['paused'] === true,
        available: Number(q['available']),
        leased: Number(q['leased']),
        scheduled: Number(q['scheduled']),
        oldestAvailableAt:
          q['oldest_available_at'] === null ? null : new Date(q['oldest_available_at'] as string),
        keysAtLimit: [...(q['keys_at_limit'] as string[])],
      }))
    },

    async listLimits() {
      const r = await rowsOf('a2_list_limits')
      return r.map((l) => ({
        key: l['key'] as string,
        maxLeased: numOrNull(l['max_leased']),
        leased: Number(l['leased']),
        rateMax: numOrNull(l['rate_max']),
        ratePerMs: numOrNull(l['rate_per_ms']),
        claimsInWindow: Number(l['claims_in_window']),
        atLimit: l['at_limit'] === true,
      }))
    },

    async claimAvailable({ sessionId, holder, ttlMs, expiresAtMs, excludeIndexes, queues }) {
      // queues (a2 0.4.0) is sent only when given, so a 0.3.0 server still serves the rest
      const r = (await run(
        'a2_claim',
        ['$1::text', '$2::text', '$3::bigint', '$4::timestamptz', '$5::bigint[]'].concat(
          queues === undefined ? [] : ['$6::text[]'],
        ),
        () => [
          sessionId,
          holder,
          ttlMs,
          expiresAtMs === undefined ? null : isoText(expiresAtMs, 'expiresAtMs'),
          [...(excludeIndexes ?? [])],
          ...(queues === undefined ? [] : [[...queues]]),
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
        () => [sessionId, index, attempt, jsonText(events.map((e, i) => returnedEventJson(e, i)))],
      )) as Json
      // The server answers a stale attempt with {"outcome": "superseded"}:
      // the contract's result, or (strict form, and always in transaction(),
      // so that the handler's writes roll back) the error a caused append's
      // Z2002 becomes.
      if (r['outcome'] !== 'completed') {
        if (superseded === 'throw') throw supersededError(sessionId, index, attempt)
        return { outcome: 'superseded' } satisfies StoreCompleteResult
      }
      return { outcome: 'completed', events: (r['events'] as unknown[]).map(toStored) }
    },

    async failAttempt({ sessionId, index, attempt, error, maxFailures, retryAfterMs }) {
      // retry_after_ms only when given: a2 before 0.3.0 has the five-argument a2_fail.
      const backoff = retryAfterMs !== undefined && retryAfterMs !== null
      const r = (await run(
        'a2_fail',
        ['$1::text', '$2::bigint', '$3::integer', '$4::text', '$5::integer', ...(backoff ? ['$6::bigint'] : [])],
        () => [sessionId, index, attempt, error ?? null, maxFailures, ...(backoff ? [retryAfterMs] : [])],
      )) as Json
      const failureCount = Number(r['failureCount'])
      if (r['outcome'] !== 'failed' && r['outcome'] !== 'dead_lettered') {
        if (superseded === 'throw') throw supersededError(sessionId, index, attempt)
        return { outcome: 'superseded', failureCount } satisfies StoreFailResult
      }
      return { outcome: r['outcome'], failureCount }
    },

    async cancel(sessionId, indexes, reason) {
      const r = (await run('a2_cancel', ['$1::text', '$2::bigint[]', '$3::text'], () => [
        sessionId,
        indexes === undefined || indexes === null ? null : [...indexes],
        reason ?? null,
      ])) as Json
      return (r['cancelled'] as unknown[]).map(toStored)
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
