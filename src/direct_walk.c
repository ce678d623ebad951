/*-------------------------------------------------------------------------
 *
 * direct_walk.c
 *	  The two index probes of a2_claim_next's plain walk read without the
 *	  executor (docs/internals.md, "Direct writes"): the first entry of
 *	  a2_events_default_available available at now after a position
 *	  (local.c's next_candidate statement), and the first available-since
 *	  time after now (its next_after_now, the retryAt).
 *
 *	  Each is an ordered scan of the index with the statement's bounds as
 *	  scan keys, returning the first entry whose row the statement's
 *	  snapshot sees: the rows, the order and the visibility rules are the
 *	  statement's, and so are the access method's side effects (dead
 *	  entries marked, SERIALIZABLE's predicate locks).  The row's key is
 *	  computed from its columns as the index expression computes it.
 *
 *	  Snapshots, as SPI takes them for a call that writes
 *	  (a2_direct_push_snapshot): a command counter increment first, so
 *	  this call's own claims are seen; the walk's probe reads the latest
 *	  committed state (a2_exec_latest), the retryAt probe the statement's
 *	  snapshot (the transaction's under REPEATABLE READ and SERIALIZABLE).
 *
 *	  Locks: a2_events and the index in ACCESS SHARE mode, as the
 *	  statements (direct_shape.h).
 *
 * IDENTIFICATION
 *	  src/direct_walk.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/skey.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_scan.h"
#include "direct_shape.h"
#include "limits.h"
#include "pg_compat.h"

/* COALESCE(claim_expires_at, GREATEST(not_before, created_at)) of the row */
static int64
available_at(TupleTableSlot *slot)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, a2_direct_att(A2D_CLAIM_EXPIRES_AT), &isnull);
	int64		at;

	if (!isnull)
		return DatumGetInt64(v);
	at = DatumGetInt64(slot_getattr(slot, a2_direct_att(A2D_CREATED_AT), &isnull));
	v = slot_getattr(slot, a2_direct_att(A2D_NOT_BEFORE), &isnull);
	if (!isnull && DatumGetInt64(v) > at)
		at = DatumGetInt64(v);
	return at;
}

/* A bound on the index's first column, the available-since time. */
static void
time_key(ScanKey key, StrategyNumber strategy, int64 value)
{
	ScanKeyEntryInitialize(key, 0, 1, strategy, InvalidOid, InvalidOid,
						   a2_scan_int8_proc(strategy), Int64GetDatum(value));
}

/* A text column of the row, NULL when null. */
static char *
text_column(TupleTableSlot *slot, A2DirectColumn col)
{
	bool		isnull;
	Datum		v = slot_getattr(slot, a2_direct_att(col), &isnull);

	return isnull ? NULL : TextDatumGetCString(v);
}

/*
 * The first entry within the keys whose row the active snapshot sees
 * (and, with skip_held, whose concurrency key the call does not hold):
 * its time and, where asked, its session id and concurrency key.
 */
static bool
first_entry(A2DirectRead *r, ScanKey keys, int nkeys, bool skip_held,
			int64 *at, char **session, char **key)
{
	IndexScanDesc scan;
	TupleTableSlot *slot = table_slot_create(r->rel, NULL);
	bool		found;

	scan = a2_index_beginscan(r->rel, r->index, GetActiveSnapshot(), nkeys);
	index_rescan(scan, keys, nkeys, NULL, 0);
	while ((found = index_getnext_slot(scan, ForwardScanDirection, slot)))
	{
		char	   *k = skip_held || key ? text_column(slot, A2D_CONCURRENCY_KEY) : NULL;

		CHECK_FOR_INTERRUPTS();
		if (skip_held && k != NULL && a2_limits_key_held(k))
			continue;
		*at = available_at(slot);
		if (session)
			*session = text_column(slot, A2D_SESSION_ID);
		if (key)
			*key = k;
		break;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return found;
}

int
a2_direct_next_available(int64 now_ms, int64 *after_at, char **after_session,
						 char **key, bool skip_held)
{
	A2DirectRead r;
	ScanKeyData keys[2];
	bool		found = false;

	if (!a2_direct_open_read(&r, A2D_READ_DEFAULT_AVAILABLE))
		return -1;
	a2_direct_push_snapshot(true);

	/*
	 * (time, session) > (after_at, after_session): first the rest of
	 * after_at's entries, then the times after it.  Session ids are never
	 * empty, so an empty after_session starts at after_at itself.
	 */
	if ((*after_session)[0] != '\0' && *after_at <= now_ms)
	{
		time_key(&keys[0], BTEqualStrategyNumber, *after_at);
		ScanKeyEntryInitialize(&keys[1], 0, 2, BTGreaterStrategyNumber, InvalidOid,
							   r.index->rd_indcollation[1], F_TEXT_GT,
							   CStringGetTextDatum(*after_session));
		found = first_entry(&r, keys, 2, skip_held, after_at, after_session, key);
	}
	if (!found)
	{
		time_key(&keys[0], (*after_session)[0] != '\0' ?
				 BTGreaterStrategyNumber : BTGreaterEqualStrategyNumber, *after_at);
		time_key(&keys[1], BTLessEqualStrategyNumber, now_ms);
		found = first_entry(&r, keys, 2, skip_held, after_at, after_session, key);
	}
	PopActiveSnapshot();
	a2_direct_close_read(&r);
	return found ? 1 : 0;
}

int
a2_direct_next_retry_at(int64 now_ms, int64 *at)
{
	A2DirectRead r;
	ScanKeyData key;
	bool		found;

	if (!a2_direct_open_read(&r, A2D_READ_DEFAULT_AVAILABLE))
		return -1;
	a2_direct_push_snapshot(false);
	time_key(&key, BTGreaterStrategyNumber, now_ms);
	found = first_entry(&r, &key, 1, false, at, NULL, NULL);
	PopActiveSnapshot();
	a2_direct_close_read(&r);
	return found ? 1 : 0;
}
