/*-------------------------------------------------------------------------
 *
 * direct_update.c
 *	  An event row given its new version without the executor (direct.h;
 *	  docs/internals.md, "Direct writes"): a claim's, a completion's and a
 *	  failure's.
 *
 *	  The caller's lock statement (claim.lock_eligible, complete.lock_event,
 *	  fail.lock_event) read the row FOR UPDATE with the latest snapshot and
 *	  returned its version (ctid).  That version becomes a new one through
 *	  the table access method, with its index entries unless the update
 *	  was HOT; the row lock keeps every other writer out.
 *
 *	  A completion and a failure read their row here instead, without the
 *	  lock (a2_direct_read_event: the primary key, the same snapshot).
 *	  The session lock they hold keeps a2's writers out; the update then
 *	  takes the row's lock itself, and tells a writer without the session
 *	  lock (a TypeScript store's claim, an UPDATE by hand) that changed the
 *	  row in between, as a TM_Updated: nothing is written, and the caller
 *	  locks the row and decides again.  This saves the lock statement and
 *	  its WAL record (a row lock is logged).
 *
 *	  complete.c's finish_event statement does three things: it marks the
 *	  event processed, makes the next event of its lane lane-ready, and
 *	  releases the event's snapshot pins with the history rows no other
 *	  pin holds.  For an event with no lane, no pin of its own and no
 *	  history row in its session, only the first finds a row: that one is
 *	  done here.  The statement would also have checked DELETE on
 *	  a2_snapshot_pins and a2_snapshot_history and fired their statement
 *	  triggers, finding no row: those tables are checked for both
 *	  (a2_direct_bystander), and the statement runs when either would.
 *
 *	  fail.c's record_failure statement and the update of claim.c's claim
 *	  statement write the row alone: they are done here whenever the
 *	  table allows.
 *
 * IDENTIFICATION
 *	  src/direct_update.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_collation.h"
#include "nodes/bitmapset.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_shape.h"
#include "pg_compat.h"

/* The columns finish_event, the claim and record_failure set. */
static const A2DirectColumn finished[] = {
	A2D_PROCESSED_AT, A2D_PROCESSED_BY_ATTEMPT, A2D_RETURNED_EVENT_IDS,
	A2D_LANE_READY, A2D_CLAIM_HOLDER, A2D_CLAIM_EXPIRES_AT
};
static const A2DirectColumn claimed[] = {
	A2D_ATTEMPT_COUNT, A2D_FIRST_CLAIMED_AT, A2D_LAST_CLAIMED_AT,
	A2D_CLAIM_HOLDER, A2D_CLAIM_EXPIRES_AT
};
static const A2DirectColumn failed[] = {
	A2D_FAILURE_COUNT, A2D_LAST_ERROR, A2D_LAST_FAILED_AT,
	A2D_LAST_FAILED_ATTEMPT, A2D_FAILED_AT, A2D_CLAIM_HOLDER,
	A2D_CLAIM_EXPIRES_AT, A2D_NOT_BEFORE
};

/*
 * Row version `tid`, which the caller holds locked, as the row to change:
 * it must be there and be event `index` of `session`.
 */
static void
fetch_locked(A2DirectTable *t, Datum session, int64 index, ItemPointer tid)
{
	TupleTableSlot *slot = t->slot;
	int			s = a2_direct_att(A2D_SESSION_ID) - 1;
	int			i = a2_direct_att(A2D_IDX) - 1;

	if (!a2_direct_row_from(t, tid) ||
		slot->tts_isnull[s] || slot->tts_isnull[i] ||
		DatumGetInt64(slot->tts_values[i]) != index ||
		!DatumGetBool(DirectFunctionCall2Coll(texteq, C_COLLATION_OID,
											  slot->tts_values[s], session)))
		elog(ERROR, "a2: row %u/%u is not event %lld of its session",
			 ItemPointerGetBlockNumber(tid), ItemPointerGetOffsetNumber(tid),
			 (long long) index);
}

/*
 * Open a2_events for an update of the row version `tid`, which must be
 * event `index` of `session`; false, with nothing open: the statement is
 * to run.
 */
static bool
open_locked(A2DirectTable *t, Datum session, int64 index, ItemPointer tid,
			bool finish)
{
	if (!a2_direct_open(t, ACL_UPDATE | ACL_SELECT))
		return false;
	/* the statement's lock order: a2_events, then the pins' tables */
	if (finish &&
		(!a2_direct_bystander("a2_snapshot_pins", ACL_DELETE | ACL_SELECT) ||
		 !a2_direct_bystander("a2_snapshot_history", ACL_DELETE | ACL_SELECT)))
	{
		a2_direct_close(t);
		return false;
	}
	fetch_locked(t, session, index, tid);
	return true;
}

/*
 * Write the new version (its columns `set` changed); false, having written
 * nothing: a NOT NULL column is null, the statement raises, or, not
 * `locked`, a writer without the session lock changed the row first.
 */
static bool
write_row(A2DirectTable *t, int64 index, ItemPointer tid, bool locked,
		  const A2DirectColumn *set, int nset)
{
	Bitmapset  *changed = NULL;
	bool		need_entries;
	TM_Result	result;

	if (!a2_direct_row_done(t))
		return false;
	/* as SPI does before each statement of a call that writes */
	CommandCounterIncrement();

	/*
	 * The statement ran with the latest snapshot and, under REPEATABLE READ
	 * or SERIALIZABLE, the transaction's as crosscheck (a2_exec_latest):
	 * a row version the transaction cannot see fails the update there, and
	 * here, as the executor reports it.  The row lock the caller holds
	 * keeps every other writer out.  Without it, the session lock keeps
	 * out a2's writers, not a TypeScript store's claim or an UPDATE by
	 * hand: the update waits for such a writer and, if it changed the
	 * row, writes nothing and answers false under READ COMMITTED (the
	 * caller then locks the row and decides again, as the statement's
	 * FOR UPDATE would have, from the new version).
	 */
	result = a2_table_update(t->rel, tid, t->slot, GetCurrentCommandId(true),
							 IsolationUsesXactSnapshot() ? GetTransactionSnapshot() : InvalidSnapshot,
							 &need_entries);
	if ((result == TM_Updated || result == TM_Deleted) && IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent update")));
	if (!locked && (result == TM_Updated || result == TM_Deleted))
		return false;
	if (result != TM_Ok)
		elog(ERROR, "a2: event %lld changed under its row lock (%d)",
			 (long long) index, (int) result);
	if (need_entries)
	{
		for (int i = 0; i < nset; i++)
			changed = bms_add_member(changed, a2_direct_att(set[i]));
		a2_direct_index_entries(t, changed);
	}
	CommandCounterIncrement();
	return true;
}

/* write_row, then close t. */
static bool
write_close(A2DirectTable *t, int64 index, ItemPointer tid, bool locked,
			 const A2DirectColumn *set, int nset)
{
	bool		written = write_row(t, index, tid, locked, set, nset);

	a2_direct_close(t);
	return written;
}

int
a2_direct_read_event(Datum session, int64 index, A2DirectEvent *ev)
{
	A2DirectTable t;
	TupleDesc	desc;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found;
	bool		usable = true;

	/* FOR UPDATE asks UPDATE as well as SELECT */
	if (!a2_direct_open(&t, ACL_UPDATE | ACL_SELECT))
		return -1;
	desc = RelationGetDescr(t.rel);
	/* the statement's: the latest committed state (a2_exec_latest) */
	a2_direct_push_snapshot(true);
	scan = a2_direct_session_scan(t.rel, a2_direct_index(&t, A2D_IX_PKEY), session,
								  BTEqualStrategyNumber, index, GetActiveSnapshot(),
								  keys);
	tup = systable_getnext_ordered(scan, ForwardScanDirection);
	found = HeapTupleIsValid(tup);
	if (found)
	{
		bool		isnull;
		Datum		d;

		ev->tid = tup->t_self;
		(void) heap_getattr(tup, a2_direct_att(A2D_PROCESSED_AT), desc, &isnull);
		ev->processed = !isnull;
		d = heap_getattr(tup, a2_direct_att(A2D_PROCESSED_BY_ATTEMPT), desc, &isnull);
		ev->has_processed_by = !isnull;
		ev->processed_by = isnull ? 0 : DatumGetInt32(d);
		d = heap_getattr(tup, a2_direct_att(A2D_RETURNED_EVENT_IDS), desc, &isnull);
		ev->returned_ids = isnull ? NULL : DatumGetJsonbPCopy(d);
		d = heap_getattr(tup, a2_direct_att(A2D_ATTEMPT_COUNT), desc, &isnull);
		ev->attempt_count = isnull ? 0 : DatumGetInt32(d);
		usable = !isnull;		/* NOT NULL: else the statement raises */
		d = heap_getattr(tup, a2_direct_att(A2D_FAILURE_COUNT), desc, &isnull);
		ev->failure_count = isnull ? 0 : DatumGetInt32(d);
		usable = usable && !isnull;
		d = heap_getattr(tup, a2_direct_att(A2D_LAST_FAILED_ATTEMPT), desc, &isnull);
		ev->has_last_failed = !isnull;
		ev->last_failed_attempt = isnull ? 0 : DatumGetInt32(d);
		(void) heap_getattr(tup, a2_direct_att(A2D_CLAIM_HOLDER), desc, &isnull);
		ev->held = !isnull;
		(void) heap_getattr(tup, a2_direct_att(A2D_FAILED_AT), desc, &isnull);
		ev->dead_lettered = !isnull;
		(void) heap_getattr(tup, a2_direct_att(A2D_LANE), desc, &isnull);
		ev->has_lane = !isnull;
		d = heap_getattr(tup, a2_direct_att(A2D_CONCURRENCY_KEY), desc, &isnull);
		ev->concurrency_key = isnull ? NULL : TextDatumGetCString(d);
	}
	systable_endscan_ordered(scan);
	PopActiveSnapshot();
	a2_direct_close(&t);
	if (!usable)
		return -1;
	return found ? 1 : 0;
}

bool
a2_direct_finish(Datum session, int64 index, ItemPointer tid, bool locked,
				 int64 now_ms, int32 attempt, Jsonb *returned_ids)
{
	A2DirectTable t;

	if (!open_locked(&t, session, index, tid, true))
		return false;
	a2_direct_set(&t, A2D_PROCESSED_AT, Int64GetDatum(now_ms), false);
	a2_direct_set(&t, A2D_PROCESSED_BY_ATTEMPT, Int32GetDatum(attempt), false);
	a2_direct_set(&t, A2D_RETURNED_EVENT_IDS, JsonbPGetDatum(returned_ids), false);
	a2_direct_set(&t, A2D_LANE_READY, BoolGetDatum(false), false);
	a2_direct_set(&t, A2D_CLAIM_HOLDER, (Datum) 0, true);
	a2_direct_set(&t, A2D_CLAIM_EXPIRES_AT, (Datum) 0, true);
	return write_close(&t, index, tid, locked, finished, lengthof(finished));
}

bool
a2_direct_record_failure(Datum session, int64 index, ItemPointer tid,
						 bool locked, const A2DirectFailure *f,
						 int64 *available_at)
{
	A2DirectTable t;
	bool		isnull;
	int32		failures;
	int64		not_before;
	bool		has_not_before;
	int64		created_at;

	if (!open_locked(&t, session, index, tid, false))
		return false;
	failures = DatumGetInt32(a2_direct_get(&t, A2D_FAILURE_COUNT, &isnull));
	if (isnull || failures == PG_INT32_MAX)
	{
		/* the statement raises (NOT NULL, or integer out of range) */
		a2_direct_close(&t);
		return false;
	}
	not_before = DatumGetInt64(a2_direct_get(&t, A2D_NOT_BEFORE, &isnull));
	has_not_before = !isnull;
	if (f->has_retry_at)
	{
		not_before = f->retry_at;
		has_not_before = true;
	}
	created_at = DatumGetInt64(a2_direct_get(&t, A2D_CREATED_AT, &isnull));	/* NOT NULL */

	a2_direct_set(&t, A2D_FAILURE_COUNT, Int32GetDatum(failures + 1), false);
	a2_direct_set_text(&t, A2D_LAST_ERROR, f->error);
	a2_direct_set(&t, A2D_LAST_FAILED_AT, Int64GetDatum(f->now_ms), false);
	a2_direct_set(&t, A2D_LAST_FAILED_ATTEMPT, Int32GetDatum(f->attempt), false);
	a2_direct_set(&t, A2D_FAILED_AT, Int64GetDatum(f->now_ms), !f->dead_letter);
	a2_direct_set(&t, A2D_CLAIM_HOLDER, (Datum) 0, true);
	a2_direct_set(&t, A2D_CLAIM_EXPIRES_AT, (Datum) 0, true);
	a2_direct_set(&t, A2D_NOT_BEFORE, Int64GetDatum(not_before), !has_not_before);
	/* the statement's RETURNING: the available key, the lease cleared */
	*available_at = has_not_before ? Max(not_before, created_at) : created_at;
	return write_close(&t, index, tid, locked, failed, lengthof(failed));
}

/* a2_events, open for the claim's updates */
struct A2DirectClaim
{
	A2DirectTable t;
};

A2DirectClaim *
a2_direct_claim_begin(void)
{
	A2DirectClaim *dc = palloc(sizeof(A2DirectClaim));

	if (a2_direct_open(&dc->t, ACL_UPDATE | ACL_SELECT))
		return dc;
	pfree(dc);
	return NULL;
}

TupleDesc
a2_direct_claim_answer_desc(void)
{
	return a2_direct_answer_desc();
}

HeapTuple
a2_direct_claim_row(A2DirectClaim *dc, Datum session, int64 index,
					ItemPointer tid, Datum attempt_count,
					Datum first_claimed_at, Datum last_claimed_at,
					Datum claim_holder, Datum claim_expires_at,
					TupleDesc answer)
{
	A2DirectTable *t = &dc->t;

	fetch_locked(t, session, index, tid);
	a2_direct_set(t, A2D_ATTEMPT_COUNT, attempt_count, false);
	a2_direct_set(t, A2D_FIRST_CLAIMED_AT, first_claimed_at, false);
	a2_direct_set(t, A2D_LAST_CLAIMED_AT, last_claimed_at, false);
	a2_direct_set(t, A2D_CLAIM_HOLDER, claim_holder, false);
	a2_direct_set(t, A2D_CLAIM_EXPIRES_AT, claim_expires_at, false);
	if (!write_row(t, index, tid, true, claimed, lengthof(claimed)))
		elog(ERROR, "a2: a NOT NULL column of event %lld is null", (long long) index);
	return a2_direct_answer(t, answer);
}

void
a2_direct_claim_end(A2DirectClaim *dc)
{
	a2_direct_close(&dc->t);
	pfree(dc);
}
