/*-------------------------------------------------------------------------
 *
 * direct_insert.c
 *	  One appended event written without the executor (direct.h;
 *	  docs/internals.md, "Direct writes").
 *
 *	  What the statements local.insert_one_generated and local.insert_one
 *	  (an id the caller gave: ON CONFLICT (event_id) DO NOTHING) do for
 *	  such an event, in three steps:
 *	    1. the session's last index: the primary key read backwards from
 *	       the session's end, with the latest snapshot (the statement's
 *	       a2_exec_latest), after a command counter increment, as SPI
 *	       does before each statement;
 *	    2. whether the session has a waiting event (a2_events_waiting),
 *	       with the same snapshot, so without this row, as the statement's
 *	       RETURNING subquery reads it;
 *	    3. the row (the next index, the columns the statement names, the
 *	       others their fill values) through the table access method, and
 *	       its index entries (direct_shape.h); with a given id, as a
 *	       speculative insertion arbitrated by a2_events_event_id, as the
 *	       executor makes ON CONFLICT's, so that a concurrent insert of
 *	       the same id makes this one do nothing, never fail.
 *	  Then a command counter increment, so the call's next statements see
 *	  the row.
 *
 * IDENTIFICATION
 *	  src/direct_insert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_scan.h"
#include "direct_shape.h"
#include "pg_compat.h"

SysScanDesc
a2_direct_session_scan(Relation rel, Relation index, Datum session,
					   StrategyNumber strategy, int64 idx, Snapshot snap,
					   ScanKeyData *keys)
{
	ScanKeyEntryInitialize(&keys[0], 0, a2_direct_att(A2D_SESSION_ID),
						   BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, session);
	if (strategy != InvalidStrategy)
		ScanKeyEntryInitialize(&keys[1], 0, a2_direct_att(A2D_IDX), strategy,
							   InvalidOid, InvalidOid, a2_scan_int8_proc(strategy),
							   Int64GetDatum(idx));
	return systable_beginscan_ordered(rel, index, snap,
									  strategy != InvalidStrategy ? 2 : 1, keys);
}

/*
 * The index this backend last wrote for one session.  A backwards scan of
 * the session's rows reads a whole leaf page of them at a time; bounded
 * below by it, it reads the few rows written since.
 */
static char *recent_session = NULL;
static int64 recent_idx = 0;

static bool
recent_is(Datum session)
{
	text	   *t = DatumGetTextPP(session);

	return recent_session != NULL &&
		strlen(recent_session) == VARSIZE_ANY_EXHDR(t) &&
		memcmp(recent_session, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) == 0;
}

static int64
recent_guess(Datum session)
{
	return recent_is(session) ? recent_idx : 0;
}

/* A copy of the session id only when it is another session than the last. */
static void
recent_remember(Datum session, int64 idx)
{
	if (!recent_is(session))
	{
		if (recent_session)
			pfree(recent_session);
		recent_session = MemoryContextStrdup(TopMemoryContext,
											 TextDatumGetCString(session));
	}
	recent_idx = idx;
}

/* The session's greatest index from from_idx on (0: any); false: none. */
static bool
last_index_from(Relation rel, Relation pkey, Datum session, int64 from_idx,
				Snapshot snap, int64 *last)
{
	ScanKeyData keys[2];
	SysScanDesc scan = a2_direct_session_scan(rel, pkey, session,
												from_idx > 0 ? BTGreaterEqualStrategyNumber : InvalidStrategy,
												from_idx, snap, keys);
	HeapTuple	tup = systable_getnext_ordered(scan, BackwardScanDirection);
	bool		found = HeapTupleIsValid(tup);

	if (found)
	{
		bool		isnull;

		*last = DatumGetInt64(heap_getattr(tup, a2_direct_att(A2D_IDX),
										   RelationGetDescr(rel), &isnull));
		found = !isnull;
	}
	systable_endscan_ordered(scan);
	return found;
}

/*
 * The session's greatest index; false: it has no row.  From the index this
 * backend last wrote for it when it has one: rows are never renumbered, so
 * the greatest at or above it, if any, is the greatest (a row this backend
 * wrote may have been rolled back or dropped: then the whole session).
 */
static bool
last_index(Relation rel, Relation pkey, Datum session, Snapshot snap,
		   int64 *last)
{
	int64		guess = recent_guess(session);

	if (guess > 0 && last_index_from(rel, pkey, session, guess, snap, last))
		return true;
	return last_index_from(rel, pkey, session, 0, snap, last);
}

/* The session has an unprocessed event whose wait is open. */
static bool
any_waiting(Relation rel, Relation waiting, Datum session, Snapshot snap)
{
	ScanKeyData keys[1];
	SysScanDesc scan = a2_direct_session_scan(rel, waiting, session, InvalidStrategy,
												0, snap, keys);
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	tup;
	bool		found = false;

	while (!found &&
		   HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		wait_null,
					result_null,
					processed_null;

		(void) heap_getattr(tup, a2_direct_att(A2D_WAIT_FOR), desc, &wait_null);
		(void) heap_getattr(tup, a2_direct_att(A2D_WAIT_RESULT), desc, &result_null);
		(void) heap_getattr(tup, a2_direct_att(A2D_PROCESSED_AT), desc, &processed_null);
		found = !wait_null && result_null && processed_null;
	}
	systable_endscan_ordered(scan);
	return found;
}

/* The row the statement would write; false: a NOT NULL column would be null. */
static bool
fill_row(A2DirectTable *t, Datum session, int64 idx, A2EventInput *ev,
		 int64 now_ms)
{
	a2_direct_row_new(t);
	a2_direct_set(t, A2D_SESSION_ID, session, false);
	a2_direct_set(t, A2D_IDX, Int64GetDatum(idx), false);
	a2_direct_set_text(t, A2D_EVENT_TYPE, ev->type);
	a2_direct_set(t, A2D_PAYLOAD, JsonbPGetDatum(ev->payload), ev->payload == NULL);
	a2_direct_set_text(t, A2D_EVENT_ID, ev->id);
	a2_direct_set(t, A2D_CREATED_AT, Int64GetDatum(now_ms), false);
	a2_direct_set(t, A2D_CAUSE, ev->cause ? JsonbPGetDatum(ev->cause) : (Datum) 0,
				  ev->cause == NULL);
	a2_direct_set(t, A2D_LANE, (Datum) 0, true);
	a2_direct_set(t, A2D_LANE_READY, BoolGetDatum(true), false);
	a2_direct_set(t, A2D_PROCESSED_AT, Int64GetDatum(now_ms), !ev->settled);
	if (ev->wait_stored)
		a2_direct_set(t, A2D_NOT_BEFORE, Int64GetDatum(ev->wait_gate), false);
	else
		a2_direct_set(t, A2D_NOT_BEFORE, Int64GetDatum(ev->not_before), !ev->has_not_before);
	a2_direct_set_text(t, A2D_QUEUE, ev->queue);
	a2_direct_set(t, A2D_PRIORITY, Int32GetDatum(ev->priority), ev->priority == 0);
	a2_direct_set_text(t, A2D_CONCURRENCY_KEY, ev->concurrency_key);
	a2_direct_set(t, A2D_WAIT_FOR, ev->wait_stored ? JsonbPGetDatum(ev->wait_stored) : (Datum) 0,
				  ev->wait_stored == NULL);
	return a2_direct_row_done(t);
}

/* The session's last index and whether it has a waiting event. */
static bool
read_session(A2DirectTable *t, Datum session, int64 *last, bool *waiting)
{
	Snapshot	snap;
	bool		found;

	/* the statement's: the latest committed state (a2_exec_latest) */
	a2_direct_push_snapshot(true);
	snap = GetActiveSnapshot();
	found = last_index(t->rel, a2_direct_index(t, A2D_IX_PKEY), session, snap, last);
	if (found)
		*waiting = any_waiting(t->rel, a2_direct_index(t, A2D_IX_WAITING), session, snap);
	PopActiveSnapshot();
	return found;
}

bool
a2_direct_insert_one(Datum session, A2EventInput *ev, int64 now_ms,
					 bool generated, bool need_pending, A2InsertOutcome *out)
{
	A2DirectTable t;
	int64		last = 0;
	bool		waiting = false;
	bool		written = false;
	bool		inserted = true;

	/*
	 * A supplied id conflicts ON CONFLICT (event_id) DO NOTHING; under
	 * REPEATABLE READ or SERIALIZABLE the executor then also checks that
	 * the conflicting row is visible: left to the statement.
	 */
	if (ev->id == NULL || ev->lane != NULL || need_pending ||
		(!generated && IsolationUsesXactSnapshot()) ||
		!a2_direct_open(&t, ACL_INSERT | ACL_SELECT))
		return false;

	/* at PG_INT64_MAX the statement raises bigint out of range */
	if (read_session(&t, session, &last, &waiting) &&
		last < PG_INT64_MAX && fill_row(&t, session, last + 1, ev, now_ms))
	{
		if (generated)
		{
			table_tuple_insert(t.rel, t.slot, GetCurrentCommandId(true), 0, NULL);
			a2_direct_index_entries(&t, NULL);
		}
		else
			inserted = a2_direct_insert_unless_conflict(&t, A2D_IX_EVENT_ID);
		written = true;
	}
	a2_direct_close(&t);
	if (!written)
		return false;
	CommandCounterIncrement();
	if (!inserted)
	{
		/* as the statement reports a row ON CONFLICT skipped */
		out->base = PG_INT64_MAX;
		out->inserted = 0;
		out->pending = false;
		out->waiting = true;
		return true;
	}
	recent_remember(session, last + 1);
	out->base = last;
	out->inserted = 1;
	out->pending = false;
	out->waiting = waiting;
	return true;
}
