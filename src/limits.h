/*-------------------------------------------------------------------------
 *
 * limits.h
 *	  Concurrency and rate limits per concurrency key (limits.c): the claim
 *	  pass around one run of the claim statement, with keys parked at
 *	  their limit (key_park.h).  Lock order: the session lock, then a key's
 *	  try-lock (never waited for), then event rows; the parked keys'
 *	  LWLock is taken alone.
 *
 * IDENTIFICATION
 *	  src/limits.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_LIMITS_H
#define A2_LIMITS_H

/* Start a pass: a2_admit() answers for it until a2_limits_pass_end(). */
extern void a2_limits_pass_begin(void);

/*
 * Bracket an a2_claim_next call: the keys' budgets carry over from pass to
 * pass within it (limits.c says why that is safe).  The keys parked at
 * now_ms (key_park.h) are held from the start.
 */
extern void a2_limits_call_begin(int64 now_ms);
extern void a2_limits_call_end(void);

/* Within a call: the first until of the keys parked at its start. */
extern bool a2_limits_call_parked_until(int64 *until);

/*
 * Within a call: decide the key now if the call has not (the caller holds
 * the session lock of the event that carries it) and answer whether it
 * admits one more event; false with *retry_at, when it may admit again.
 */
extern bool a2_limits_key_open(const char *key, int64 now_ms, int64 *retry_at);

/* Within a call: whether the key was found to admit nothing more. */
extern bool a2_limits_key_held(const char *key);

/* Within a call: those keys as text[] (empty outside a call). */
extern Datum a2_limits_held_keys(void);

/*
 * End the pass; *denied: an event was skipped for a limit, *retry_at: the
 * earliest time a denied key may admit again (PG_INT64_MAX: none).
 */
extern void a2_limits_pass_end(bool *denied, int64 *retry_at);

/*
 * Log the claims of the last pass's rate-limited keys among the n claimed
 * rows in SPI_tuptable (A2_EVENT_COLUMNS), which it leaves in place.
 */
extern void a2_limits_note_claims(uint64 n, int64 now_ms);

#endif							/* A2_LIMITS_H */
