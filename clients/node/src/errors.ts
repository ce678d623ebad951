/**
 * A2Error, and the one place where a PostgreSQL error becomes one.
 *
 * The mapping (README "Errors"):
 *   Z2001               PARTIAL_DUPLICATE_BATCH
 *   Z2002               SUPERSEDED_ATTEMPT (also thrown, in the strict form and
 *                       in store.transaction, for a completion or failure
 *                       the server answers "superseded")
 *   Z2003               TypeError "no event at index N in session 'S'"
 *                       (what store-postgres 0.5.0 throws for a missing event)
 *   class 22 (22023, 22004, 22P02, 22003, ...)   INVALID_PAYLOAD
 *   42501               FORBIDDEN
 *   XX001               TypeError "stored event has an invalid cause ..."
 *   anything else       STORE_UNAVAILABLE, the pg error as `cause`
 * Bad input is never STORE_UNAVAILABLE: a caller that retries on that code
 * would retry bad input forever.
 */

export type A2ErrorCode =
  | 'INVALID_PAYLOAD'
  | 'FORBIDDEN'
  | 'UNKNOWN_EVENT_TYPE'
  | 'PARTIAL_DUPLICATE_BATCH'
  | 'SUPERSEDED_ATTEMPT'
  | 'STORE_UNAVAILABLE'
  | 'STORE_NOT_CONFIGURED'

export class A2Error extends Error {
  readonly code: A2ErrorCode

  constructor(code: A2ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'A2Error'
    this.code = code
  }
}

/** The SQLSTATE of a pg error (or of anything carrying a string `code`). */
export const sqlState = (err: unknown): string | undefined => {
  if (typeof err !== 'object' || err === null) return undefined
  const code = (err as { code?: unknown }).code
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined
}

const messageOf = (err: unknown): string =>
  err instanceof Error ? err.message : String(err)

// The server says: no event at index 3 in session "s"; the seed said 's'.
const NOT_FOUND = /^no event at index (\d+) in session "([\s\S]*)"$/

/** Turn whatever a query threw into what the seed's callers expect. */
export const toA2Error = (err: unknown): Error => {
  if (err instanceof A2Error || err instanceof TypeError) return err
  const state = sqlState(err)
  const message = messageOf(err)
  switch (state) {
    case 'Z2001':
      return new A2Error('PARTIAL_DUPLICATE_BATCH', message, { cause: err })
    case 'Z2002':
      return new A2Error('SUPERSEDED_ATTEMPT', message, { cause: err })
    case 'Z2003': {
      const m = NOT_FOUND.exec(message)
      return new TypeError(
        m ? `no event at index ${m[1]} in session '${m[2]}'` : message,
        { cause: err },
      )
    }
    case 'XX001':
      return new TypeError(message, { cause: err })
    case '42501':
      return new A2Error('FORBIDDEN', message, { cause: err })
    default:
      break
  }
  if (state?.startsWith('22')) {
    return new A2Error('INVALID_PAYLOAD', message, { cause: err })
  }
  return new A2Error('STORE_UNAVAILABLE', 'postgres store operation failed: ' + message, {
    cause: err,
  })
}

/**
 * The strict form's error for a completion or failure the server answered
 * `{"outcome": "superseded"}`: the same code and wording as its Z2002 for
 * a caused append, so a stale attempt looks one way wherever it throws.
 */
export const supersededError = (sessionId: string, index: number, attempt: number): A2Error =>
  new A2Error(
    'SUPERSEDED_ATTEMPT',
    `attempt ${attempt} no longer owns event ${index} in session "${sessionId}"`,
  )

/** Is this error worth retrying as it is (the store, not the input, failed)? */
export const isUnavailable = (err: unknown): boolean =>
  err instanceof A2Error && err.code === 'STORE_UNAVAILABLE'
