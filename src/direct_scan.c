/*-------------------------------------------------------------------------
 *
 * direct_scan.c
 *	  One ordered read of an index, as an index-only scan reads it
 *	  (direct_scan.h): the direct reads' scan keys, and their first (or
 *	  every) entry whose row the active snapshot sees.
 *
 *	  As nodeIndexonlyscan.c does: an entry's values come from the index
 *	  tuple; its row is fetched only where the visibility map does not
 *	  say the page is all visible (the fetch also marks dead entries for
 *	  the access method), and an all-visible page gets the predicate lock
 *	  the fetch would have taken under SERIALIZABLE.
 *
 *	  Locks: none of its own.
 *
 * IDENTIFICATION
 *	  src/direct_scan.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "access/visibilitymap.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct_scan.h"
#include "pg_compat.h"

void
a2_scan_key(A2ScanKeys *keys, int flags, AttrNumber att, StrategyNumber strategy,
			Oid collation, RegProcedure proc, Datum arg)
{
	Assert(keys->n < lengthof(keys->k));
	ScanKeyEntryInitialize(&keys->k[keys->n++], flags, att, strategy, InvalidOid,
						   collation, proc, arg);
}

RegProcedure
a2_scan_int8_proc(StrategyNumber strategy)
{
	switch (strategy)
	{
		case BTLessStrategyNumber:
			return F_INT8LT;
		case BTLessEqualStrategyNumber:
			return F_INT8LE;
		case BTEqualStrategyNumber:
			return F_INT8EQ;
		case BTGreaterEqualStrategyNumber:
			return F_INT8GE;
		default:
			return F_INT8GT;
	}
}

void
a2_scan_int8_key(A2ScanKeys *keys, AttrNumber att, StrategyNumber strategy, int64 value)
{
	a2_scan_key(keys, 0, att, strategy, InvalidOid, a2_scan_int8_proc(strategy),
				Int64GetDatum(value));
}

bool
a2_scan_first_visible(Relation rel, Relation index, A2ScanKeys *keys, ScanDirection dir,
					  A2ScanSkip skip, const void *skip_arg, int natts,
					  Datum *values, bool *isnull, int64 *count)
{
	Snapshot	snapshot = GetActiveSnapshot();
	IndexScanDesc scan;
	TupleTableSlot *slot = NULL;
	Buffer		vmbuffer = InvalidBuffer;
	ItemPointer tid;
	bool		found = false;

	scan = a2_index_beginscan(rel, index, snapshot, keys->n);
	scan->xs_want_itup = true;
	index_rescan(scan, keys->k, keys->n, NULL, 0);
	while ((tid = index_getnext_tid(scan, dir)) != NULL)
	{
		BlockNumber block = ItemPointerGetBlockNumber(tid);

		CHECK_FOR_INTERRUPTS();
		if (skip && skip(scan->xs_itup, scan->xs_itupdesc, skip_arg))
			continue;
		if (VM_ALL_VISIBLE(rel, block, &vmbuffer))
			PredicateLockPage(rel, block, snapshot);
		else
		{
			if (slot == NULL)
				slot = table_slot_create(rel, NULL);
			if (!index_fetch_heap(scan, slot))
				continue;
			ExecClearTuple(slot);
		}
		if (count)
			(*count)++;
		if (found)
			continue;
		for (int i = 0; i < natts; i++)
		{
			Form_pg_attribute att = TupleDescAttr(scan->xs_itupdesc, i);

			values[i] = index_getattr(scan->xs_itup, i + 1, scan->xs_itupdesc, &isnull[i]);
			if (!isnull[i])
				values[i] = datumCopy(values[i], att->attbyval, att->attlen);
		}
		found = true;
		if (count == NULL)
			break;
	}
	if (BufferIsValid(vmbuffer))
		ReleaseBuffer(vmbuffer);
	index_endscan(scan);
	if (slot)
		ExecDropSingleTupleTableSlot(slot);
	return found;
}
