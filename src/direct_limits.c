/*-------------------------------------------------------------------------
 *
 * direct_limits.c
 *	  What a limit's decision reads (limits.c), read without the executor
 *	  (docs/internals.md, "Direct writes"): the a2_limits row of one key,
 *	  as the key_limits statement reads it, through the table's primary
 *	  key a2_limits_pkey; and the key's live leases, counted in
 *	  a2_events_key_leases as the key_leases statement counts them.
 *
 *	  It reads only where the statement would read the same row: the
 *	  conditions of every direct read (a2.direct_writes on, SELECT held on
 *	  the whole table, no row-level security, a plain table, not
 *	  read-only, not distributed), the primary key valid, unique and on
 *	  the key alone in its column's collation, and the three limit
 *	  columns of the types a2 gave them (found once, and again after any
 *	  relcache invalidation of a2_limits).  The snapshot is the statement's
 *	  (a2_exec_latest's: the latest committed state, after a command
 *	  counter increment).
 *
 *	  Locks: a2_limits and its primary key, a2_events and
 *	  a2_events_key_leases, in ACCESS SHARE mode, as the statements take
 *	  them.
 *
 * IDENTIFICATION
 *	  src/direct_limits.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_scan.h"
#include "direct_shape.h"
#include "extension.h"
#include "pg_compat.h"

/* a2_limits' columns a decision reads */
enum
{
	L_KEY,
	L_MAX_LEASED,
	L_RATE_MAX,
	L_RATE_PER_MS,
	L_NCOLUMNS
};

static const struct
{
	const char *name;
	Oid			type;
}			columns[L_NCOLUMNS] = {
	[L_KEY] = {"key", TEXTOID},
	[L_MAX_LEASED] = {"max_leased", INT4OID},
	[L_RATE_MAX] = {"rate_max", INT4OID},
	[L_RATE_PER_MS] = {"rate_per_ms", INT8OID},
};

/* Each column's attribute, of a2's type; false: one is not. */
static bool
find_columns(Relation rel, AttrNumber *att)
{
	TupleDesc	desc = RelationGetDescr(rel);

	for (int k = 0; k < L_NCOLUMNS; k++)
	{
		att[k] = get_attnum(RelationGetRelid(rel), columns[k].name);
		if (att[k] <= 0 || TupleDescAttr(desc, att[k] - 1)->atttypid != columns[k].type)
			return false;
	}
	return true;
}

/* The primary key is a2's: valid, unique, a btree on the key alone. */
static bool
key_index(Relation rel, Relation ind, AttrNumber key_att)
{
	static const Oid key_type = TEXTOID;

	return ind->rd_index->indisunique && ind->rd_index->indnatts == 1 &&
		a2_direct_btree_led_by(rel, ind, 1, &key_att, &key_type);
}

/* What this backend last found of a2_limits (InvalidOid: not known). */
static struct
{
	Oid			relid;
	bool		usable;
	Oid			index;
	AttrNumber	att[L_NCOLUMNS];
}			known;
static bool callback_registered = false;

static void
forget(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == known.relid)
		known.relid = InvalidOid;
}

/* Learn a2_limits (open, locked: its invalidations are in). */
static void
learn(Relation rel)
{
	Relation	ind;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(forget, (Datum) 0);
		callback_registered = true;
	}
	known.relid = RelationGetRelid(rel);
	known.index = a2_relid("a2_limits_pkey");
	known.usable = false;
	if (!find_columns(rel, known.att) || !OidIsValid(known.index))
		return;
	ind = index_open(known.index, AccessShareLock);
	known.usable = key_index(rel, ind, known.att[L_KEY]);
	index_close(ind, NoLock);
}

int
a2_direct_key_limits(const char *key, int32 *max_leased, int32 *rate_max, int64 *per_ms)
{
	Relation	rel = a2_direct_open_table("a2_limits");
	Relation	ind;
	ScanKeyData skey;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	bool		found;

	if (rel == NULL)
		return -1;
	if (known.relid != RelationGetRelid(rel))
		learn(rel);
	if (!known.usable)
	{
		table_close(rel, NoLock);
		return -1;
	}
	ind = index_open(known.index, AccessShareLock);

	a2_direct_push_snapshot(true);
	ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
						   ind->rd_indcollation[0], F_TEXTEQ, CStringGetTextDatum(key));
	slot = table_slot_create(rel, NULL);
	scan = a2_index_beginscan(rel, ind, GetActiveSnapshot(), 1);
	index_rescan(scan, &skey, 1, NULL, 0);
	found = index_getnext_slot(scan, ForwardScanDirection, slot);
	if (found)
	{
		bool		isnull;
		Datum		v;

		v = slot_getattr(slot, known.att[L_MAX_LEASED], &isnull);
		*max_leased = isnull ? -1 : DatumGetInt32(v);
		v = slot_getattr(slot, known.att[L_RATE_MAX], &isnull);
		*rate_max = isnull ? -1 : DatumGetInt32(v);
		v = slot_getattr(slot, known.att[L_RATE_PER_MS], &isnull);
		*per_ms = isnull ? 0 : DatumGetInt64(v);
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	PopActiveSnapshot();
	index_close(ind, NoLock);
	table_close(rel, NoLock);
	return found ? 1 : 0;
}

/*
 * The key's live leases in a2_events_key_leases (concurrency_key,
 * claim_expires_at), as the key_leases statement's index-only count(*)
 * reads them.
 */
int
a2_direct_key_leases(const char *key, int64 now_ms, int64 *leased, int64 *first_expiry)
{
	A2DirectRead r;
	A2ScanKeys	keys = {.n = 0};
	Datum		v[2];
	bool		n[2];
	bool		found;

	if (!a2_direct_open_read(&r, A2D_READ_KEY_LEASES))
		return -1;
	a2_direct_push_snapshot(true);
	a2_scan_key(&keys, 0, 1, BTEqualStrategyNumber, r.index->rd_indcollation[0],
				F_TEXTEQ, CStringGetTextDatum(key));
	a2_scan_int8_key(&keys, 2, BTGreaterStrategyNumber, now_ms);
	*leased = 0;
	found = a2_scan_first_visible(r.rel, r.index, &keys, ForwardScanDirection, NULL, NULL,
								  2, v, n, leased);
	PopActiveSnapshot();
	a2_direct_close_read(&r);
	if (found)
		*first_expiry = DatumGetInt64(v[1]);
	return found ? 1 : 0;
}
