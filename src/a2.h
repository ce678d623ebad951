/*-------------------------------------------------------------------------
 *
 * a2.h
 *	  Declarations shared by every a2 module: SQLSTATEs, limits, and the
 *	  small helpers each operation uses to lock a session.
 *
 * IDENTIFICATION
 *	  src/a2.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_H
#define A2_H

#include "postgres.h"

/* the supported majors (it refuses the others) and their differences */
#include "pg_compat.h"

/* SQLSTATEs of docs/errors.md (the standard ones come from errcodes.h) */
#define ERRCODE_A2_PARTIAL_DUPLICATE_BATCH	MAKE_SQLSTATE('Z','2','0','0','1')
#define ERRCODE_A2_SUPERSEDED_ATTEMPT		MAKE_SQLSTATE('Z','2','0','0','2')
#define ERRCODE_A2_NOT_FOUND				MAKE_SQLSTATE('Z','2','0','0','3')
/* a2_redrive of an event that is not dead-lettered (0.2.0) */
#define ERRCODE_A2_NOT_DEAD_LETTERED		MAKE_SQLSTATE('Z','2','0','0','4')

/* a2_drop_session without force: the session has unfinished events */
#define ERRCODE_A2_SESSION_UNFINISHED		MAKE_SQLSTATE('Z','2','0','1','0')

/* Limits of docs/errors.md, "What is checked" */
#define A2_MAX_NAME_BYTES	1024	/* ids, session ids, lanes, holders, ... */
#define A2_MAX_LIST_ITEMS	10000	/* elements of any batch or list */

/*
 * Take the session lock (layer.h: a transaction advisory lock on one node,
 * a row lock in distributed mode), held to the end of the transaction.
 */
extern void a2_lock_session(const char *session_id);

/* The same lock without waiting; false when another transaction holds it. */
extern bool a2_try_lock_session(const char *session_id);

#endif							/* A2_H */
