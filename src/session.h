/*-------------------------------------------------------------------------
 *
 * session.h
 *	  Reads of one session's state that several operations share, and the
 *	  batch lane rule both layers' inserts apply.  Depends on statements.h
 *	  only, so the operations and both layers (layer.h) build on it.
 *
 *	  Lock order: none taken here; callers hold the session lock when the
 *	  answer must be current.
 *
 * IDENTIFICATION
 *	  src/session.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_SESSION_H
#define A2_SESSION_H

#include "postgres.h"

#include "validate.h"

/*
 * Whether the session has an unprocessed event, read from the latest
 * committed state (a2_exec_latest): call it inside a2_call_begin/end.
 */
extern bool a2_session_has_pending(const char *session_id);

/*
 * blocked[i]: an earlier unsettled event of the batch has event i's lane
 * (the lane rule of docs/semantics.md, "Lanes", shared by both layers' inserts).
 */
extern void a2_batch_blocked_lanes(A2EventInput *events, int count, bool *blocked);

#endif							/* A2_SESSION_H */
