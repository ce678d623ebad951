/*-------------------------------------------------------------------------
 *
 * direct_pins.c
 *	  Whether a completion has snapshot pins to release (direct.h), read
 *	  without the executor (docs/internals.md, "Direct writes"): a pin of
 *	  the event in a2_snapshot_pins, or any row of its session in
 *	  a2_snapshot_history, the rows complete.c's finish_event statement
 *	  would release.
 *
 *	  A table with no pages has no row: that is read from its size, and
 *	  no index is scanned.  A deployment that never pins a snapshot
 *	  answers every completion so.  Otherwise each table's primary key is
 *	  probed on its leading columns, as an index-only scan reads it
 *	  (direct_scan.h).  It reads only where the statement would read the
 *	  same rows: the conditions of every direct read (a2.direct_writes on,
 *	  SELECT held on the whole table, no row-level security, a plain
 *	  table, not read-only, not distributed), and the primary key a valid
 *	  btree led by the columns a2 gave it, in their default orderings.
 *	  The snapshot is the statement's (the latest committed state, after a
 *	  command counter increment).  Pins and history rows are written only
 *	  under the session lock, which the completion holds, so none can
 *	  appear between this read and the completion's write.
 *
 *	  Locks: a2_snapshot_pins and a2_snapshot_history, and their primary
 *	  keys when probed, in ACCESS SHARE mode, as the statement's subqueries
 *	  took them.
 *
 * IDENTIFICATION
 *	  src/direct_pins.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "storage/bufmgr.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_scan.h"
#include "direct_shape.h"
#include "extension.h"

/* One table the release reads, and the leading key columns probed. */
typedef struct PinTable
{
	const char *table;
	const char *pkey;
	int			ncols;
	const char *cols[2];
	Oid			types[2];
} PinTable;

static const PinTable pins = {
	"a2_snapshot_pins", "a2_snapshot_pins_pkey", 2,
	{"session_id", "event_index"}, {TEXTOID, INT8OID}
};
static const PinTable history = {
	"a2_snapshot_history", "a2_snapshot_history_pkey", 1,
	{"session_id"}, {TEXTOID}
};

/* The primary key is led by t's columns, a btree a scan reads in order. */
static bool
usable_key(const PinTable *t, Relation rel, Relation ind)
{
	AttrNumber	atts[lengthof(t->cols)];

	for (int i = 0; i < t->ncols; i++)
		atts[i] = get_attnum(RelationGetRelid(rel), t->cols[i]);
	return a2_direct_btree_led_by(rel, ind, t->ncols, atts, t->types);
}

/*
 * Whether table t has a row of session `session` (and, for the pins, of
 * event `index`) that the active snapshot sees: 1 yes, 0 no, -1 not read.
 */
static int
has_rows(const PinTable *t, Datum session, int64 index)
{
	Relation	rel = a2_direct_open_table(t->table);
	Oid			indexid;
	Relation	ind;
	A2ScanKeys	keys = {.n = 0};
	Datum		v;
	bool		n;
	int			found = -1;

	if (rel == NULL)
		return -1;
	if (RelationGetNumberOfBlocks(rel) == 0)
	{
		table_close(rel, NoLock);
		return 0;
	}
	indexid = a2_relid(t->pkey);
	if (!OidIsValid(indexid))
	{
		table_close(rel, NoLock);
		return -1;
	}
	ind = index_open(indexid, AccessShareLock);
	if (usable_key(t, rel, ind))
	{
		a2_scan_key(&keys, 0, 1, BTEqualStrategyNumber, ind->rd_indcollation[0],
					F_TEXTEQ, session);
		if (t->ncols > 1)
			a2_scan_int8_key(&keys, 2, BTEqualStrategyNumber, index);
		found = a2_scan_first_visible(rel, ind, &keys, ForwardScanDirection,
									  NULL, NULL, 0, &v, &n, NULL) ? 1 : 0;
	}
	index_close(ind, NoLock);
	table_close(rel, NoLock);
	return found;
}

int
a2_direct_pins_to_release(Datum session, int64 index)
{
	int			found;

	a2_direct_push_snapshot(true);
	found = has_rows(&pins, session, index);
	if (found == 0)
		found = has_rows(&history, session, index);
	PopActiveSnapshot();
	return found;
}
