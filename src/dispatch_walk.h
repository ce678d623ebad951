/*-------------------------------------------------------------------------
 *
 * dispatch_walk.h
 *	  a2_claim_next's walk over queues and priority levels (0.4.0,
 *	  dispatch_walk.c; the queues argument and the paused queues are
 *	  queues.h).  Takes no lock of its own: the walk tries each
 *	  candidate's session lock through the caller's callback (the lock
 *	  order of layer.h); reading a2_events_queue_available's size takes
 *	  the AccessShareLock on it that the probe it saves would take.
 *
 * IDENTIFICATION
 *	  src/dispatch_walk.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DISPATCH_WALK_H
#define A2_DISPATCH_WALK_H

#include "fmgr.h"

/*
 * a2_claim_next's walk over the queues served (queues: a text[] Datum, 0
 * for every queue not paused), highest priority first, then oldest
 * available first.  For each candidate session it calls
 * try_claim(session_id, key, arg), key being the concurrency key (or
 * NULL) of the event that made the session a candidate; stops after
 * max_sessions claims.  A2_WALK_HELD: the session was not claimed because
 * that key admits nothing more in this call (limits.c); from then on the
 * walk leaves out the key's events without visiting their sessions, and
 * the session may be offered again for its other work.  Otherwise each
 * session is offered at most once.  Must be called between
 * a2_limits_call_begin() and a2_limits_call_end().  *paused: set to the
 * paused queues (text[]) before the first try_claim.  *retry_at: the first
 * available-since time after now among the queues served (false: none).
 */
typedef enum A2WalkAnswer
{
	A2_WALK_PASSED,				/* not claimed (locked elsewhere, or nothing eligible) */
	A2_WALK_CLAIMED,
	A2_WALK_HELD				/* not claimed: the key admits nothing more */
} A2WalkAnswer;

typedef A2WalkAnswer (*A2TryClaim) (char *session_id, char *key, void *arg);

extern void a2_dispatch_walk(Datum queues, Datum *paused, int64 now_ms,
							 int max_sessions, A2TryClaim try_claim, void *arg,
							 bool *has_retry, int64 *retry_at);

#endif							/* A2_DISPATCH_WALK_H */
