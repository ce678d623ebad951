/*-------------------------------------------------------------------------
 *
 * session.h
 *	  Reads of one session's state that several operations share (append,
 *	  and distributed mode's routed append).  Depends on spi_plans only, so
 *	  the operations and the distributed layer both build on it.
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

/*
 * Whether the session has an unprocessed event, read from the latest
 * committed state (a2_exec_latest): call it inside a2_spi_begin/end.
 */
extern bool a2_session_has_pending(const char *session_id);

#endif							/* A2_SESSION_H */
