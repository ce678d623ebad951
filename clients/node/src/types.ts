/**
 * The A2Store contract of experimental-a2 (store-postgres 0.5.0 plus the
 * 0.8.0 snapshot changes), defined here because that package is not on
 * the npm registry. Field names, nullability and value types are the
 * seed's: Dates for timestamps, numbers for indexes and counts.
 */

/** Where an event came from: attempt `attempt` of the event at `index`. */
export type EventCause = {
  index: number
  attempt: number
  /** How many events that attempt returned, when the producer said so. */
  batchSize?: number
}

/**
 * a2 0.4.0 durable wait: not claimable until an event of one of `types` is
 * appended to the session after this one, or until `timeoutMs` has passed
 * since it was appended (absent: no timeout).
 */
export type WaitFor = {
  types: string[]
  timeoutMs?: number | undefined
}

/** How a wait ended: the event that ended it, or its timeout. */
export type WaitResult = { index: number; type: string } | { timedOut: true }

/** An immutable log entry, as reducers see it. */
export type Event = {
  id: string
  type: string
  payload: unknown
  index: number
  sessionId: string
  createdAt: Date
}

/** A log entry with its dispatch bookkeeping. */
export type StoredEvent = Event & {
  cause: EventCause | null
  lane: string | null
  processedAt: Date | null
  processedByAttempt: number | null
  returnedEventIds: string[] | null
  firstClaimedAt: Date | null
  lastClaimedAt: Date | null
  attemptCount: number
  failureCount: number
  lastFailedAt: Date | null
  lastFailedAttempt: number | null
  lastError: string | null
  failedAt: Date | null
  claimHolder: string | null
  claimExpiresAt: Date | null
  /**
   * a2 0.3.0 scheduling: not claimable before this time. Present only when
   * the event has one, so events without it keep the seed's exact shape.
   */
  notBefore?: Date
  /** a2 0.4.0: the event's queue; present only when not 'default'. */
  queue?: string
  /** a2 0.4.0: its priority; present only when not 0. */
  priority?: number
  /** a2 0.4.0: its concurrency key; present only when set. */
  concurrencyKey?: string
  /**
   * a2 0.4.0 cancel: when a2_cancel cancelled the event (processedAt is the
   * same time, processedByAttempt stays null). Present only on a cancelled
   * event, with cancelReason (null when no reason was given).
   */
  cancelledAt?: Date
  cancelReason?: string | null
  /** a2 0.4.0: the event's wait, present only on an event appended with one. */
  waitFor?: WaitFor
  /** a2 0.4.0: how its wait ended, present only once it has. */
  waitResult?: WaitResult
}

/**
 * a2 0.4.0 dispatch fields of an appended or returned event (docs/json.md):
 * sent only when given.
 */
export type DispatchFields = {
  /** The queue (default 'default'). */
  queue?: string | null | undefined
  /** -32768..32767, higher first within a queue (default 0). */
  priority?: number | null | undefined
  /** The key whose concurrency and rate limits apply to its claims. */
  concurrencyKey?: string | null | undefined
}

/** One event to append. A missing id is generated. */
export type AppendEvent = {
  id?: string | undefined
  type: string
  payload?: unknown
  cause?: EventCause | undefined
  lane?: string | null | undefined
  /** Store it already processed (an audit record nobody dispatches). */
  settled?: boolean | undefined
  /**
   * a2 0.3.0: not claimable before this time (a Date, or a timestamp string
   * the server parses, e.g. ISO-8601). Sent only when given.
   */
  notBefore?: Date | string | null | undefined
  /** a2 0.4.0: a durable wait. Sent only when given. */
  waitFor?: WaitFor | null | undefined
} & DispatchFields

/** One event a handler returns from its attempt: it needs an id. */
export type ReturnedEvent = {
  id: string
  type: string
  payload?: unknown
  lane?: string | null | undefined
  settled?: boolean | undefined
  /** a2 0.3.0: a delayed event (a durable timer). Sent only when given. */
  notBefore?: Date | string | null | undefined
  /** a2 0.4.0: "continue when X happens" (a durable wait). Sent only when given. */
  waitFor?: WaitFor | null | undefined
} & DispatchFields

export type StoreAppendResult = {
  events: StoredEvent[]
  /** The session had an unprocessed event before, or gained one now. */
  hasPending: boolean
}

export type StoreReadOptions = {
  afterIndex?: number | undefined
  throughIndex?: number | undefined
}

export type StoreClaimOptions = {
  sessionId: string
  holder: string
  ttlMs: number
  /** Replaces `now + ttlMs` as the lease expiry (epoch milliseconds). */
  expiresAtMs?: number | undefined
  excludeIndexes?: readonly number[] | undefined
  /** a2 0.4.0: only events in these queues (default: every queue not paused). */
  queues?: readonly string[] | undefined
}

/** a2 0.4.0: a2_claim_next's options. */
export type StoreClaimNextOptions = {
  holder: string
  ttlMs: number
  /** Sessions to claim at most (default 1). */
  maxSessions?: number | undefined
  /** Replaces `now + ttlMs` as the lease expiry (epoch milliseconds). */
  expiresAtMs?: number | undefined
  /** Only these queues (default: every queue not paused). */
  queues?: readonly string[] | undefined
}

/** a2_claim_next's answer: the sessions claimed, and when to look again. */
export type StoreClaimNextResult = {
  claims: { sessionId: string; events: StoredEvent[] }[]
  retryAt: Date | null
}

/** One row of a2_list_queues(). */
export type QueueInfo = {
  queue: string
  paused: boolean
  available: number
  leased: number
  scheduled: number
  oldestAvailableAt: Date | null
  keysAtLimit: string[]
}

/** One row of a2_list_limits(). */
export type LimitInfo = {
  key: string
  maxLeased: number | null
  leased: number
  rateMax: number | null
  ratePerMs: number | null
  claimsInWindow: number
  atLimit: boolean
}

/**
 * a2 0.4.0 dispatch control (docs/functions.md "Queues and limits"): not
 * part of the seed's A2Store contract.
 */
export interface A2DispatchControl {
  claimNext(options: StoreClaimNextOptions): Promise<StoreClaimNextResult>
  /** At most `maxLeased` live leases with the key; null removes the limit. */
  setConcurrencyLimit(key: string, maxLeased: number | null): Promise<void>
  /** At most `maxClaims` claims start per `perMs` window; nulls remove it. */
  setRateLimit(key: string, maxClaims: number | null, perMs: number | null): Promise<void>
  /** Claims skip the queue from the commit on; true when it was not paused. */
  pauseQueue(queue: string): Promise<boolean>
  /** Claimable at once again; true when it was paused. */
  resumeQueue(queue: string): Promise<boolean>
  listQueues(): Promise<QueueInfo[]>
  listLimits(): Promise<LimitInfo[]>
}

/** The result of atomically claiming every currently eligible event. */
export type StoreClaimAvailableResult =
  | { outcome: 'claimed'; events: StoredEvent[] }
  | { outcome: 'busy'; retryAt: Date }
  | { outcome: 'settled' }

export type StoreRenewOptions = {
  sessionId: string
  holder: string
  claims: readonly { index: number; attempt: number }[]
  ttlMs: number
  expiresAtMs?: number | undefined
}

export type StoreRenewResult = { renewed: number[]; superseded: number[] }

export type StoreCompleteOptions = {
  sessionId: string
  index: number
  attempt: number
  events: readonly ReturnedEvent[]
}

export type StoreCompleteResult =
  | { outcome: 'completed'; events: StoredEvent[] }
  | { outcome: 'superseded' }

/**
 * What the strict form's completeAttempt resolves to (`store.transaction`,
 * or `superseded: 'throw'`): a stale attempt (the contract's
 * `{ outcome: 'superseded' }`) rejects with A2Error('SUPERSEDED_ATTEMPT').
 */
export type A2CompleteResult = { outcome: 'completed'; events: StoredEvent[] }

export type StoreFailOptions = {
  sessionId: string
  index: number
  attempt: number
  error: string | null
  maxFailures: number
  /**
   * a2 0.3.0 backoff: a `failed` outcome makes the event claimable again
   * only after this many ms (see `backoff()`). Sent, as a2_fail's sixth
   * argument, only when given; absent (or 0): claimable at once.
   */
  retryAfterMs?: number | undefined
}

export type StoreFailResult = {
  outcome: 'failed' | 'dead_lettered' | 'superseded'
  failureCount: number
}

/** What the strict form's failAttempt resolves to; a stale attempt rejects with SUPERSEDED_ATTEMPT. */
export type A2FailResult = {
  outcome: 'failed' | 'dead_lettered'
  failureCount: number
}

/** One consistent cache-plus-tail read for a reducer fold. */
export type StoreStateRead = {
  /** The current head checkpoint, even when an older historical snapshot is selected. */
  headIndex: number | null
  /** The greatest cached fold at or before the requested snapshot frontier. */
  snapshot: { index: number; state: unknown } | null
  /** Immutable events strictly after `snapshot.index`, or the full log on a miss. */
  events: Event[]
}

export type StoreStateReadOptions = {
  throughIndex?: number | undefined
  snapshotThroughIndex?: number | undefined
}

export type StoreStateReadRequest = {
  sessionId: string
  throughIndex?: number | undefined
  snapshotThroughIndex?: number | undefined
}

export type StoreSnapshotWrite = {
  index: number
  state: unknown
  /** Unfinished trigger events that durably retain this exact checkpoint. */
  pinEventIndexes?: readonly number[] | undefined
}

/** One live presence value: one participant's one field. */
export type PresenceRow = {
  participant: string
  field: string
  value: unknown
  seen: number
  at: Date
  expiresAt: Date
}

export type PresenceMeta = {
  /** The sender's time: orders writes (last writer wins). */
  at: Date
  seen: number
  /** Lifetime, from the store's clock. */
  ttlMs: number
}

export type StreamOptions = {
  /** Deliver events with an index greater than this (default 0: all). */
  startAfter?: number | undefined
}

/** The injectable clock. */
export type Clock = { now(): Date }

/** The injectable id source for events appended without an id. */
export type IdSource = () => string

/** a2 0.4.0 calls beyond the store contract (docs/functions.md). */
export interface A2Controls {
  /**
   * a2_cancel: cancel unfinished events of a session (pending, scheduled,
   * leased or dead-lettered); every unfinished one when `indexes` is
   * omitted or null. Resolves the events this call cancelled, in index
   * order (none when they were finished already). A listed index without an
   * event rejects with NOT_FOUND and cancels nothing.
   */
  cancel(sessionId: string, indexes?: readonly number[] | null, reason?: string | null): Promise<StoredEvent[]>
}

/** The store contract. */
export interface A2Store {
  append(
    sessionId: string,
    events: readonly AppendEvent[],
  ): Promise<StoreAppendResult>
  read(sessionId: string, options?: StoreReadOptions): Promise<StoredEvent[]>
  claimAvailable(options: StoreClaimOptions): Promise<StoreClaimAvailableResult>
  renewClaims(options: StoreRenewOptions): Promise<StoreRenewResult>
  completeAttempt(options: StoreCompleteOptions): Promise<StoreCompleteResult>
  failAttempt(options: StoreFailOptions): Promise<StoreFailResult>
  readState(
    sessionId: string,
    reducerName: string,
    options?: StoreStateReadOptions,
  ): Promise<StoreStateRead>
  readStates(
    requests: readonly StoreStateReadRequest[],
    reducerName: string,
  ): Promise<StoreStateRead[]>
  putSnapshots(
    sessionId: string,
    reducerName: string,
    snapshots: readonly StoreSnapshotWrite[],
  ): Promise<void>
  presence: {
    set(
      ns: string,
      participant: string,
      values: Record<string, unknown>,
      meta: PresenceMeta,
    ): Promise<void>
    read(ns: string): Promise<PresenceRow[]>
  }
  /** A live feed of one session's events after `startAfter`, in index order, each once. */
  stream(sessionId: string, options?: StreamOptions): AsyncIterableIterator<StoredEvent>
}
