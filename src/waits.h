/*-------------------------------------------------------------------------
 *
 * waits.h
 *	  Durable waits (docs/semantics.md, "Waits"): an event appended with
 *	  "waitFor": {"types": [...], "timeoutMs": n} is not eligible until an
 *	  event of one of those types is appended to its session after it, or
 *	  until its timeout, whichever comes first.  See waits.c.
 *
 * IDENTIFICATION
 *	  src/waits.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_WAITS_H
#define A2_WAITS_H

#include "utils/jsonb.h"

#include "validate.h"
#include "wait_gate.h"		/* A2_WAIT_FOREVER, a2_wait_gate */

/*
 * Before a batch is inserted: for each event with a wait, refuse (0A000)
 * when the database's objects are older than 0.4.0 or a2 is distributed,
 * and compute what the row stores: ev->wait_stored (the wait_for column)
 * and ev->wait_gate (its not_before while it waits).
 */
extern void a2_waits_prepare(A2EventInput *events, int count, int64 now_ms);

/*
 * After a batch was inserted at indexes base + 1 .. base + count, under the
 * session lock: end every wait of the session that one of the batch's
 * events satisfies (the first such event after the waiting one, before its
 * timeout).  Returns NULL when none of the batch's own events was
 * satisfied, else an array of `count` results ({"index", "type"} or NULL)
 * for the batch's events, for the StoredEvents the call returns.  Records
 * the due announcement of each wait it ends.
 */
extern Jsonb **a2_waits_satisfy(const char *session_id, A2EventInput *events,
								int count, int64 base, int64 now_ms);

/*
 * Replay check of row `row` of SPI_tuptable (A2_EVENT_COLUMNS): the same
 * wait (or none), and the same own notBefore when the row has a wait
 * (*handled true; false: the row has no wait, the caller compares
 * notBefore itself).
 */
extern bool a2_wait_matches(uint64 row, const A2EventInput *ev, bool check_not_before,
							bool *handled);

#endif							/* A2_WAITS_H */
