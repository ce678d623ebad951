/*-------------------------------------------------------------------------
 *
 * direct_insert.h
 *	  One appended event written without the executor: the heap tuple and
 *	  its index entries straight from C, as core writes its catalogs
 *	  (docs/internals.md, "Direct writes").
 *
 *	  Offers a2_direct_insert_one(), which the single-node layer (local.c)
 *	  tries before its INSERT statement, and the a2.direct_writes setting.
 *	  It writes only where the statement would do nothing more than that
 *	  row and its index entries; everywhere else it answers false and the
 *	  statement runs:
 *	    - the event: an id a2 generated (no ON CONFLICT), no lane, and the
 *	      caller does not ask whether the session was pending;
 *	    - the session already has a row (its first append reads a dropped
 *	      session's mark through the statement);
 *	    - a2_events: 0.4.0 objects on one server, a plain table with no
 *	      trigger, rule, CHECK constraint or row-level security, every
 *	      column a2 does not write either nullable without a default or
 *	      with a constant default, the column types a2 created;
 *	    - the caller holds INSERT and SELECT on the whole table, no
 *	      executor permission hook is installed (sepgsql, pgaudit), and
 *	      the transaction may write (not read-only, not parallel).
 *	  So users' triggers, rules, policies and privileges keep applying
 *	  exactly as through the statement.
 *
 *	  Locks: a2_events in ROW EXCLUSIVE mode and its indexes, as the
 *	  statement takes them, after the caller's session lock (layer.h's
 *	  order); nothing of its own.
 *
 * IDENTIFICATION
 *	  src/direct_insert.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_DIRECT_INSERT_H
#define A2_DIRECT_INSERT_H

#include "postgres.h"

#include "layer.h"
#include "validate.h"

/* From _PG_init: the a2.direct_writes setting. */
extern void a2_direct_insert_init(void);

/*
 * Insert one event of session `session` (a text datum) at the session's
 * next index, as local.c's insert_one_generated statement would, and fill
 * `out` (base, inserted = 1, waiting; pending is false).  False, having
 * written nothing: the statement is to run instead.
 */
extern bool a2_direct_insert_one(Datum session, A2EventInput *ev,
								 int64 now_ms, bool need_pending,
								 A2InsertOutcome *out);

#endif							/* A2_DIRECT_INSERT_H */
