/*-------------------------------------------------------------------------
 *
 * direct_lowwater.c
 *	  The claim's low-water probe (claim.c's claim.low_water statement)
 *	  read without the executor (direct.h; docs/internals.md, "Claim
 *	  low-water marks"): the anchor, a hash of the session's lowest row,
 *	  and the least index of an unprocessed event of the session at or
 *	  above the mark known so far.
 *
 *	  The statement's two index probes, done as it does them: the first
 *	  entry of the session in a2_events_pkey whose row the snapshot sees,
 *	  and the first at or above the mark in a2_events_unprocessed; the
 *	  statement's snapshot (the latest, a2_exec_latest); the anchor its
 *	  expression, hashtextextended(concat_ws('/', idx, xmin, event_id), 0),
 *	  computed by the same function in the collation the expression
 *	  derives (event_id's).  The probe runs only while a snapshot holds
 *	  dead versions, and then its executor start-up was half its cost
 *	  (bench/RESULTS.md, "W9 under the held snapshot").
 *
 *	  Locks: a2_events and both indexes in ACCESS SHARE mode, as the
 *	  statement (direct_shape.h).
 *
 * IDENTIFICATION
 *	  src/direct_lowwater.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "catalog/pg_collation.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_shape.h"

/* hashtextextended(concat_ws('/', idx, xmin, event_id), 0) of the row */
static uint64
row_anchor(Relation rel, HeapTuple tup)
{
	TupleDesc	desc = RelationGetDescr(rel);
	AttrNumber	event_id = a2_direct_att(A2D_EVENT_ID);
	Oid			collation = TupleDescAttr(desc, event_id - 1)->attcollation;
	bool		isnull;
	int64		idx;
	Datum		id;
	char	   *key;

	idx = DatumGetInt64(heap_getattr(tup, a2_direct_att(A2D_IDX), desc, &isnull));
	id = heap_getattr(tup, event_id, desc, &isnull);
	/* concat_ws skips nulls; both columns are NOT NULL */
	key = psprintf(INT64_FORMAT "/%u/%s", idx, HeapTupleHeaderGetRawXmin(tup->t_data),
				   isnull ? "" : TextDatumGetCString(id));
	return (uint64) DatumGetInt64(DirectFunctionCall2Coll(hashtextextended,
														  OidIsValid(collation) ?
														  collation : DEFAULT_COLLATION_OID,
														  CStringGetTextDatum(key),
														  Int64GetDatum(0)));
}

int
a2_direct_low_water(Datum session, int64 from, uint64 *anchor, int64 *first,
					bool *have_first)
{
	A2DirectRead r;
	Relation	pkey;
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	bool		found;

	if (!a2_direct_open_read(&r, A2D_READ_UNPROCESSED))
		return -1;
	pkey = a2_direct_open_read_pkey();
	a2_direct_push_snapshot(true);

	scan = a2_direct_session_scan(r.rel, pkey, session, InvalidStrategy, 0,
								  GetActiveSnapshot(), keys);
	tup = systable_getnext_ordered(scan, ForwardScanDirection);
	found = HeapTupleIsValid(tup);
	if (found)
		*anchor = row_anchor(r.rel, tup);
	systable_endscan_ordered(scan);

	*have_first = false;
	if (found)
	{
		scan = a2_direct_session_scan(r.rel, r.index, session,
									  BTGreaterEqualStrategyNumber, from,
									  GetActiveSnapshot(), keys);
		tup = systable_getnext_ordered(scan, ForwardScanDirection);
		if (HeapTupleIsValid(tup))
		{
			bool		isnull;

			*have_first = true;
			*first = DatumGetInt64(heap_getattr(tup, a2_direct_att(A2D_IDX),
												RelationGetDescr(r.rel), &isnull));
		}
		systable_endscan_ordered(scan);
	}

	PopActiveSnapshot();
	index_close(pkey, NoLock);
	a2_direct_close_read(&r);
	return found ? 1 : 0;
}
