/**
 * backoff(options): exponential backoff with jitter, for
 * `failAttempt({ ..., retryAfterMs })` (a2 0.3.0).
 *
 *   const retryAfter = backoff({ baseMs: 1000, maxMs: 300_000 })
 *   await store.failAttempt({ sessionId, index: e.index, attempt: e.attemptCount,
 *     error: String(err), maxFailures: 5, retryAfterMs: retryAfter(e.id, e.attemptCount) })
 *
 * For the attempt `attempt` (1, 2, 3, ...) of the event with id `eventId`:
 *
 *   delay = baseMs * factor^(attempt - 1), capped at maxMs
 *   ms    = floor(delay * (1 - jitter * u))
 *
 * where u in [0, 1) is a hash of the event id and the attempt: the
 * result lies in [delay * (1 - jitter), delay], spread over that range for
 * different events, but the same for the same event and attempt. No
 * Math.random: a test with an injected clock gets the same schedule on
 * every run, and a retried failAttempt computes the same value.
 *
 * The arithmetic is exact IEEE-754 double steps in a fixed order (the
 * power is repeated multiplication, not Math.pow), so the Python client's
 * `a2_client.backoff` gives the same number for the same inputs; both test
 * suites check one table of expected values (clients/shared).
 *
 * u is FNV-1a (32 bit) over the UTF-8 bytes of `${eventId}\0${attempt}`
 * (lone surrogates encoded as U+FFFD, as TextEncoder does), finished with
 * MurmurHash3's 32-bit finalizer so that close inputs spread, divided by
 * 2^32.
 */

export type BackoffOptions = {
  /** The delay after attempt 1, in ms (default 1000). */
  baseMs?: number | undefined
  /** The largest delay, in ms (default 300,000: five minutes). */
  maxMs?: number | undefined
  /** Growth per attempt (default 2; 1 = a constant delay). */
  factor?: number | undefined
  /** The randomized fraction of the delay, 0..1 (default 0.5; 0 = none). */
  jitter?: number | undefined
}

/** Given an event id and the attempt that failed, the ms to wait. */
export type BackoffPolicy = (eventId: string, attempt: number) => number

const encoder = new TextEncoder()

/** FNV-1a, 32 bit. */
export const fnv1a32 = (bytes: Uint8Array): number => {
  let h = 0x811c9dc5
  for (const b of bytes) {
    h ^= b
    h = Math.imul(h, 0x01000193) >>> 0
  }
  return h
}

/** MurmurHash3's 32-bit finalizer: every input bit reaches every output bit. */
export const fmix32 = (h: number): number => {
  h >>>= 0
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b) >>> 0
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35) >>> 0
  h ^= h >>> 16
  return h >>> 0
}

/** u in [0, 1) for one event id and attempt. */
export const jitterFraction = (eventId: string, attempt: number): number =>
  fmix32(fnv1a32(encoder.encode(`${eventId}\u0000${attempt}`))) / 4294967296

const check = (ok: boolean, what: string): void => {
  if (!ok) throw new RangeError(`backoff: ${what}`)
}

export function backoff(options: BackoffOptions = {}): BackoffPolicy {
  const baseMs = options.baseMs ?? 1000
  const maxMs = options.maxMs ?? 300_000
  const factor = options.factor ?? 2
  const jitter = options.jitter ?? 0.5
  check(Number.isFinite(baseMs) && baseMs >= 0, `baseMs must be a finite number >= 0, not ${baseMs}`)
  check(
    Number.isFinite(maxMs) && maxMs >= 0 && maxMs <= Number.MAX_SAFE_INTEGER,
    `maxMs must be a number from 0 to ${Number.MAX_SAFE_INTEGER}, not ${maxMs}`,
  )
  check(Number.isFinite(factor) && factor >= 1, `factor must be a finite number >= 1, not ${factor}`)
  check(jitter >= 0 && jitter <= 1, `jitter must be from 0 to 1, not ${jitter}`)

  return (eventId: string, attempt: number): number => {
    if (typeof eventId !== 'string') throw new TypeError('backoff: eventId must be a string')
    check(Number.isSafeInteger(attempt) && attempt >= 1, `attempt must be an integer >= 1, not ${attempt}`)
    let delay = Math.min(baseMs, maxMs)
    // one multiplication per attempt, until maxMs (the same steps as the Python client)
    if (factor > 1 && delay > 0) {
      for (let i = 1; i < attempt && delay < maxMs; i++) delay = Math.min(delay * factor, maxMs)
    }
    return Math.floor(delay * (1 - jitter * jitterFraction(eventId, attempt)))
  }
}
