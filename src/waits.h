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

/*
 * The not_before of an event that waits without a timeout: the largest
 * time a2 stores (+275760-09-13T00:00:00.000Z, JavaScript's last Date).
 */
#define A2_WAIT_FOREVER		INT64CONST(8640000000000000)

/*
 * A waiting event's gate, the not_before it stores while it waits: the
 * later of its own notBefore and its timeout's due time (until), or
 * A2_WAIT_FOREVER without a timeout.  a2_waits_prepare stores it;
 * json_out.c tells from it whether the wait still holds the column.
 */
static inline int64
a2_wait_gate(bool has_until, int64 until, bool has_own, int64 own)
{
	if (!has_until)
		return A2_WAIT_FOREVER;
	return has_own && own > until ? own : until;
}

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
