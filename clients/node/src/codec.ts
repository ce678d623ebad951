/**
 * JSON in both directions.
 *
 * Out: every JSON argument is sent as text (JSON.stringify) and cast to
 * jsonb in the statement, so `[]` arrives as `[]` and never as a
 * PostgreSQL array literal. Only the keys the contract defines are sent,
 * so an object with extra properties (the seed ignored them) is not
 * refused by the server's unknown-key check.
 *
 * In: the functions answer jsonb in the contract's camelCase names with
 * ISO-8601 timestamps; these decoders rebuild the seed's objects (Dates,
 * the seed's key order, null where the seed has null).
 */

import { A2Error } from './errors.js'
import type {
  AppendEvent,
  DispatchFields,
  Event,
  EventCause,
  PresenceRow,
  ReturnedEvent,
  StoreSnapshotWrite,
  StoreStateRead,
  StoreStateReadRequest,
  StoredEvent,
  WaitFor,
} from './types.js'

type Json = Record<string, unknown>

/** JSON text for a jsonb parameter; undefined becomes null, as in the seed. */
export const jsonText = (value: unknown): string => {
  let text: string | undefined
  try {
    text = JSON.stringify(value)
  } catch (err) {
    throw new A2Error('INVALID_PAYLOAD', `value cannot be encoded as JSON: ${(err as Error).message}`, {
      cause: err,
    })
  }
  return text ?? 'null'
}

const defined = (o: Json): Json => {
  for (const key of Object.keys(o)) if (o[key] === undefined) delete o[key]
  return o
}

const causeJson = (c: EventCause): Json =>
  defined({ index: c.index, attempt: c.attempt, batchSize: c.batchSize })

/**
 * notBefore as sent: a Date as ISO text (an invalid Date is bad input, not
 * JSON null), a string as it is (the server parses any timestamptz literal
 * and refuses anything else with 22023), null or undefined not at all.
 */
const notBeforeJson = (v: Date | string | null | undefined, what: string): unknown =>
  v === null || v === undefined ? undefined : v instanceof Date ? isoText(v, what) : v

/** a2 0.4.0: queue, priority, concurrencyKey, only when given. */
const dispatchJson = (e: DispatchFields): Json =>
  defined({
    queue: e.queue ?? undefined,
    priority: e.priority ?? undefined,
    concurrencyKey: e.concurrencyKey ?? undefined,
  })

/** waitFor as sent: only when given, timeoutMs only when set. */
const waitForJson = (w: WaitFor | null | undefined): unknown =>
  w === null || w === undefined
    ? undefined
    : defined({ types: w.types === undefined ? undefined : [...w.types], timeoutMs: w.timeoutMs ?? undefined })

export const appendEventJson = (e: AppendEvent, id: string | undefined, i = 0): Json =>
  defined({
    id,
    type: e.type,
    payload: e.payload === undefined ? null : e.payload,
    cause: e.cause === undefined || e.cause === null ? undefined : causeJson(e.cause),
    lane: e.lane ?? undefined,
    settled: e.settled,
    notBefore: notBeforeJson(e.notBefore, `events[${i}].notBefore`),
    ...dispatchJson(e),
    waitFor: waitForJson(e.waitFor),
  })

export const returnedEventJson = (e: ReturnedEvent, i = 0): Json =>
  defined({
    id: e.id,
    type: e.type,
    payload: e.payload === undefined ? null : e.payload,
    lane: e.lane ?? undefined,
    settled: e.settled,
    notBefore: notBeforeJson(e.notBefore, `events[${i}].notBefore`),
    ...dispatchJson(e),
    waitFor: waitForJson(e.waitFor),
  })

export const snapshotWriteJson = (w: StoreSnapshotWrite): Json =>
  defined({
    index: w.index,
    state: w.state === undefined ? null : w.state,
    pinEventIndexes: w.pinEventIndexes === undefined ? undefined : [...w.pinEventIndexes],
  })

export const stateRequestJson = (r: StoreStateReadRequest): Json =>
  defined({
    sessionId: r.sessionId,
    throughIndex: r.throughIndex,
    snapshotThroughIndex: r.snapshotThroughIndex,
  })

/**
 * A jsonb result: pg parses it already; a client that does not gives text.
 * A void function's result arrives as '' (or null): undefined.
 */
export const parseResult = (value: unknown): unknown =>
  typeof value === 'string' ? (value === '' ? undefined : JSON.parse(value)) : value

const date = (v: unknown): Date => new Date(v as string)
const dateOrNull = (v: unknown): Date | null =>
  v === null || v === undefined ? null : new Date(v as string)
const numOrNull = (v: unknown): number | null =>
  v === null || v === undefined ? null : Number(v)
const strOrNull = (v: unknown): string | null =>
  v === null || v === undefined ? null : (v as string)

const cause = (v: unknown): EventCause | null => {
  if (v === null || v === undefined) return null
  const c = v as Json
  return {
    index: Number(c['index']),
    attempt: Number(c['attempt']),
    ...(c['batchSize'] === undefined || c['batchSize'] === null
      ? {}
      : { batchSize: Number(c['batchSize']) }),
  }
}

export const toEvent = (v: unknown): Event => {
  const e = v as Json
  return {
    id: e['id'] as string,
    type: e['type'] as string,
    payload: e['payload'] ?? null,
    index: Number(e['index']),
    sessionId: e['sessionId'] as string,
    createdAt: date(e['createdAt']),
  }
}

// A StoredEvent starts with the Event's fields, in the seed's key order;
// notBefore (a2 0.3.0) comes last, and only when the server sent it; so do
// the a2 0.4.0 keys: queue, priority, concurrencyKey, cancelledAt and
// cancelReason (only on a cancelled event), waitFor and waitResult.
export const toStored = (v: unknown): StoredEvent => {
  const e = v as Json
  const stored: StoredEvent = {
    ...toEvent(v),
    cause: cause(e['cause']),
    lane: strOrNull(e['lane']),
    processedAt: dateOrNull(e['processedAt']),
    processedByAttempt: numOrNull(e['processedByAttempt']),
    returnedEventIds:
      e['returnedEventIds'] === null || e['returnedEventIds'] === undefined
        ? null
        : [...(e['returnedEventIds'] as string[])],
    firstClaimedAt: dateOrNull(e['firstClaimedAt']),
    lastClaimedAt: dateOrNull(e['lastClaimedAt']),
    attemptCount: Number(e['attemptCount']),
    failureCount: Number(e['failureCount']),
    lastFailedAt: dateOrNull(e['lastFailedAt']),
    lastFailedAttempt: numOrNull(e['lastFailedAttempt']),
    lastError: strOrNull(e['lastError']),
    failedAt: dateOrNull(e['failedAt']),
    claimHolder: strOrNull(e['claimHolder']),
    claimExpiresAt: dateOrNull(e['claimExpiresAt']),
  }
  if (e['notBefore'] !== null && e['notBefore'] !== undefined) stored.notBefore = date(e['notBefore'])
  // a2 0.4.0, each only when the server sent it
  if (typeof e['queue'] === 'string') stored.queue = e['queue']
  if (e['priority'] !== null && e['priority'] !== undefined) stored.priority = Number(e['priority'])
  if (typeof e['concurrencyKey'] === 'string') stored.concurrencyKey = e['concurrencyKey']
  // cancelledAt and cancelReason (a2 0.4.0): only on a cancelled event
  if (e['cancelledAt'] !== null && e['cancelledAt'] !== undefined) {
    stored.cancelledAt = date(e['cancelledAt'])
    stored.cancelReason = strOrNull(e['cancelReason'])
  }
  const waitFor = e['waitFor'] as Json | null | undefined
  if (waitFor !== null && waitFor !== undefined)
    stored.waitFor = {
      types: [...(waitFor['types'] as string[])],
      ...(waitFor['timeoutMs'] === undefined || waitFor['timeoutMs'] === null
        ? {}
        : { timeoutMs: Number(waitFor['timeoutMs']) }),
    }
  const waitResult = e['waitResult'] as Json | null | undefined
  if (waitResult !== null && waitResult !== undefined)
    stored.waitResult =
      waitResult['timedOut'] === true
        ? { timedOut: true }
        : { index: Number(waitResult['index']), type: waitResult['type'] as string }
  return stored
}

export const toStateRead = (v: unknown): StoreStateRead => {
  const r = v as Json
  const snap = r['snapshot'] as Json | null | undefined
  return {
    headIndex: numOrNull(r['headIndex']),
    snapshot:
      snap === null || snap === undefined
        ? null
        : { index: Number(snap['index']), state: snap['state'] ?? null },
    events: ((r['events'] as unknown[] | undefined) ?? []).map(toEvent),
  }
}

export const toPresenceRow = (v: unknown): PresenceRow => {
  const r = v as Json
  return {
    participant: r['participant'] as string,
    field: r['field'] as string,
    value: r['value'] ?? null,
    seen: Number(r['seen']),
    at: date(r['at']),
    expiresAt: date(r['expiresAt']),
  }
}

/** ISO-8601 text for a timestamptz parameter; an invalid Date is bad input. */
export const isoText = (value: Date | number, what: string): string => {
  const d = typeof value === 'number' ? new Date(value) : value
  if (!(d instanceof Date) || Number.isNaN(d.getTime())) {
    throw new A2Error('INVALID_PAYLOAD', `${what} is not a valid time`)
  }
  return d.toISOString()
}
