/*-------------------------------------------------------------------------
 *
 * direct_insert.c
 *	  One appended event written without the executor (direct_insert.h;
 *	  docs/internals.md, "Direct writes").
 *
 *	  What the statement local.insert_one_generated does for such an
 *	  event, done here in three steps:
 *	    1. the session's last index: the primary key read backwards from
 *	       the session's end, with the latest snapshot (the statement's
 *	       a2_exec_latest), after a command counter increment, as SPI
 *	       does before each statement;
 *	    2. whether the session has a waiting event (a2_events_waiting),
 *	       with the same snapshot, so without this row, as the statement's
 *	       RETURNING subquery reads it;
 *	    3. the row (the next index, the columns the statement writes, the
 *	       others their constant defaults) through the table access
 *	       method, and its entries through ExecInsertIndexTuples, which
 *	       checks the unique indexes and each partial index's predicate.
 *	  Then a command counter increment, so the call's next statements see
 *	  the row.
 *
 *	  The table's shape (which attribute is which column, the constant
 *	  defaults, the two indexes) is kept per backend and dropped at any
 *	  relcache invalidation of a2_events: ALTER TABLE, CREATE or DROP
 *	  INDEX, CREATE TRIGGER, a policy, a grant all send one.  Everything
 *	  that depends on the caller (privileges, the transaction) is checked
 *	  on every call.
 *
 * IDENTIFICATION
 *	  src/direct_insert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "access/htup_details.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/fmgroids.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct_insert.h"
#include "extension.h"
#include "pg_compat.h"
#include "statements.h"

/* The columns a2 writes or reads here, with the types it created them with. */
enum
{
	C_SESSION_ID,
	C_IDX,
	C_EVENT_TYPE,
	C_PAYLOAD,
	C_EVENT_ID,
	C_CREATED_AT,
	C_CAUSE,
	C_LANE,
	C_LANE_READY,
	C_PROCESSED_AT,
	C_NOT_BEFORE,
	C_QUEUE,
	C_PRIORITY,
	C_CONCURRENCY_KEY,
	C_WAIT_FOR,
	C_WAIT_RESULT,				/* read only */
	NCOLUMNS
};

static const struct
{
	const char *name;
	Oid			type;
	bool		written;
}			columns[NCOLUMNS] =
{
	{"session_id", TEXTOID, true},
	{"idx", INT8OID, true},
	{"event_type", TEXTOID, true},
	{"payload", JSONBOID, true},
	{"event_id", TEXTOID, true},
	{"created_at", INT8OID, true},
	{"cause", JSONBOID, true},
	{"lane", TEXTOID, true},
	{"lane_ready", BOOLOID, true},
	{"processed_at", INT8OID, true},
	{"not_before", INT8OID, true},
	{"queue", TEXTOID, true},
	{"priority", INT4OID, true},
	{"concurrency_key", TEXTOID, true},
	{"wait_for", JSONBOID, true},
	{"wait_result", JSONBOID, false},
};

/* One index of a2_events: its IndexInfo with the predicate and expressions prepared. */
typedef struct ShapeIndex
{
	Oid			oid;
	IndexInfo  *info;
	IndexUniqueCheck check;
} ShapeIndex;

/* a2_events as this backend last saw it */
typedef struct Shape
{
	Oid			relid;			/* InvalidOid: not known */
	bool		usable;			/* direct writes may serve it */
	AttrNumber	att[NCOLUMNS];
	int			natts;
	Datum	   *fill;			/* per attribute: the value of a column not written */
	bool	   *fill_null;
	int			nindexes;
	ShapeIndex *indexes;
	int			pkey;			/* a2_events_pkey in indexes[] */
	int			waiting;		/* a2_events_waiting in indexes[] */
	MemoryContext cxt;
} Shape;

static Shape shape;
static bool callback_registered = false;
static uint64 invalidations = 0;
static bool direct_writes = true;

void
a2_direct_insert_init(void)
{
	DefineCustomBoolVariable("a2.direct_writes",
							 "Writes a plain appended event without the executor.",
							 "Off: every append runs its INSERT statement (the result is the same).",
							 &direct_writes,
							 true,
							 PGC_USERSET,
							 0,
							 NULL, NULL, NULL);
}

static void
shape_invalidate(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == shape.relid)
		shape.relid = InvalidOid;
	invalidations++;
}

/* The value a column the statement does not name gets: false when unknown. */
static bool
fill_value(Relation rel, int attnum, Datum *value, bool *isnull)
{
	Form_pg_attribute attr = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	Node	   *def;

	if (attr->attgenerated || attr->attidentity ||
		get_typtype(attr->atttypid) == TYPTYPE_DOMAIN)
		return false;
	def = build_column_default(rel, attnum);
	if (def == NULL)
	{
		*value = (Datum) 0;
		*isnull = true;
		return !attr->attnotnull;
	}
	if (!IsA(def, Const))
		return false;
	*isnull = ((Const *) def)->constisnull;
	*value = *isnull ? (Datum) 0 :
		datumCopy(((Const *) def)->constvalue, attr->attbyval, attr->attlen);
	return true;
}

/*
 * One index, kept with its predicate and expressions ready to evaluate:
 * a btree (other access methods keep per-statement state in the
 * IndexInfo), with no exclusion constraint (it reads other rows) and no
 * deferred uniqueness check (a trigger's business).  In shape.cxt.
 */
static bool
learn_index(Relation ind, ShapeIndex *si)
{
	IndexInfo  *ii;
	List	   *states = NIL;
	ListCell   *lc;

	if (ind->rd_rel->relam != BTREE_AM_OID)
		return false;
	ii = BuildIndexInfo(ind);
	if (ii->ii_ExclusionOps != NULL ||
		(ind->rd_index->indisunique && !ind->rd_index->indimmediate))
		return false;
	if (ii->ii_Predicate != NIL)
		ii->ii_PredicateState =
			ExecInitQual((List *) expression_planner((Expr *) ii->ii_Predicate), NULL);
	foreach(lc, ii->ii_Expressions)
		states = lappend(states,
						 ExecInitExpr(expression_planner((Expr *) lfirst(lc)), NULL));
	ii->ii_ExpressionsState = states;
	si->oid = RelationGetRelid(ind);
	si->info = ii;
	si->check = ind->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO;
	return true;
}

/* Every index of a2_events, and where the two it reads are. */
static bool
learn_indexes(Relation rel)
{
	List	   *oids = RelationGetIndexList(rel);
	Oid			pkey = a2_relid("a2_events_pkey");
	Oid			waiting = a2_relid("a2_events_waiting");
	bool		ok = true;
	ListCell   *lc;

	shape.nindexes = 0;
	shape.indexes = palloc0(sizeof(ShapeIndex) * Max(list_length(oids), 1));
	shape.pkey = shape.waiting = -1;
	foreach(lc, oids)
	{
		Relation	ind = index_open(lfirst_oid(lc), RowExclusiveLock);
		ShapeIndex *si = &shape.indexes[shape.nindexes];

		ok = ok && learn_index(ind, si);
		if (ok && ind->rd_index->indkey.values[0] == shape.att[C_SESSION_ID])
		{
			if (si->oid == pkey && ind->rd_index->indnkeyatts == 2 &&
				ind->rd_index->indkey.values[1] == shape.att[C_IDX])
				shape.pkey = shape.nindexes;
			else if (si->oid == waiting)
				shape.waiting = shape.nindexes;
		}
		index_close(ind, NoLock);
		shape.nindexes++;
	}
	return ok && shape.pkey >= 0 && shape.waiting >= 0;
}

/* Learn a2_events' shape (rel is open); false: not usable. */
static bool
shape_build(Relation rel)
{
	TupleDesc	desc = RelationGetDescr(rel);
	uint64		seen = invalidations;
	MemoryContext old;

	if (!callback_registered)
	{
		CacheRegisterRelcacheCallback(shape_invalidate, (Datum) 0);
		callback_registered = true;
	}
	if (shape.cxt == NULL)
		shape.cxt = AllocSetContextCreate(TopMemoryContext, "a2 direct writes",
										  (Size) 0, (Size) 8192, (Size) 65536);
	MemoryContextReset(shape.cxt);
	old = MemoryContextSwitchTo(shape.cxt);

	shape.usable = true;
	shape.natts = desc->natts;
	shape.fill = palloc0(sizeof(Datum) * desc->natts);
	shape.fill_null = palloc(sizeof(bool) * desc->natts);
	memset(shape.att, 0, sizeof(shape.att));
	for (int i = 0; i < desc->natts && shape.usable; i++)
	{
		Form_pg_attribute attr = TupleDescAttr(desc, i);
		int			k;

		shape.fill_null[i] = true;
		if (attr->attisdropped)
			continue;
		for (k = 0; k < NCOLUMNS; k++)
			if (strcmp(NameStr(attr->attname), columns[k].name) == 0)
				break;
		if (k < NCOLUMNS)
		{
			shape.att[k] = i + 1;
			if (attr->atttypid != columns[k].type)
				shape.usable = false;
			if (columns[k].written)
				continue;
		}
		if (!fill_value(rel, i + 1, &shape.fill[i], &shape.fill_null[i]))
			shape.usable = false;
	}
	for (int k = 0; k < NCOLUMNS; k++)
		if (shape.att[k] == 0)
			shape.usable = false;
	if (shape.usable)
		shape.usable = learn_indexes(rel);
	MemoryContextSwitchTo(old);
	/* an invalidation while building (index_open) leaves it unknown */
	if (invalidations == seen)
		shape.relid = RelationGetRelid(rel);
	return shape.usable;
}

/*
 * What the statement would do beyond the row and its index entries: a
 * trigger, a rule, a CHECK constraint, a policy.
 */
static bool
plain_table(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->trigdesc == NULL &&
		!rel->rd_rel->relhasrules &&
		!rel->rd_rel->relrowsecurity &&
		(rel->rd_att->constr == NULL || rel->rd_att->constr->num_check == 0);
}

/*
 * The session's rows in `index` (keyed session_id first), and, when
 * from_idx > 0, only those from index from_idx on (the primary key).
 */
static SysScanDesc
session_scan(Relation rel, Relation index, Datum session, int64 from_idx,
			 Snapshot snap, ScanKeyData *keys)
{
	ScanKeyEntryInitialize(&keys[0], 0, shape.att[C_SESSION_ID],
						   BTEqualStrategyNumber, InvalidOid,
						   index->rd_indcollation[0], F_TEXTEQ, session);
	if (from_idx > 0)
		ScanKeyEntryInitialize(&keys[1], 0, shape.att[C_IDX],
							   BTGreaterEqualStrategyNumber, InvalidOid,
							   InvalidOid, F_INT8GE, Int64GetDatum(from_idx));
	return systable_beginscan_ordered(rel, index, snap, from_idx > 0 ? 2 : 1, keys);
}

/*
 * The index this backend last wrote for one session.  A backwards scan of
 * the session's rows reads a whole leaf page of them at a time; bounded
 * below by it, it reads the few rows written since.
 */
static char *recent_session = NULL;
static int64 recent_idx = 0;

static int64
recent_guess(Datum session)
{
	text	   *t = DatumGetTextPP(session);

	if (recent_session == NULL ||
		strlen(recent_session) != VARSIZE_ANY_EXHDR(t) ||
		memcmp(recent_session, VARDATA_ANY(t), VARSIZE_ANY_EXHDR(t)) != 0)
		return 0;
	return recent_idx;
}

static void
recent_remember(Datum session, int64 idx)
{
	if (recent_session)
		pfree(recent_session);
	recent_session = MemoryContextStrdup(TopMemoryContext, TextDatumGetCString(session));
	recent_idx = idx;
}

/* The session's greatest index from from_idx on (0: any); false: none. */
static bool
last_index_from(Relation rel, Relation pkey, Datum session, int64 from_idx,
				Snapshot snap, int64 *last)
{
	ScanKeyData keys[2];
	SysScanDesc scan = session_scan(rel, pkey, session, from_idx, snap, keys);
	HeapTuple	tup = systable_getnext_ordered(scan, BackwardScanDirection);
	bool		found = HeapTupleIsValid(tup);

	if (found)
	{
		bool		isnull;

		*last = DatumGetInt64(heap_getattr(tup, shape.att[C_IDX],
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
	SysScanDesc scan = session_scan(rel, waiting, session, 0, snap, keys);
	TupleDesc	desc = RelationGetDescr(rel);
	HeapTuple	tup;
	bool		found = false;

	while (!found &&
		   HeapTupleIsValid(tup = systable_getnext_ordered(scan, ForwardScanDirection)))
	{
		bool		wait_null,
					result_null,
					processed_null;

		(void) heap_getattr(tup, shape.att[C_WAIT_FOR], desc, &wait_null);
		(void) heap_getattr(tup, shape.att[C_WAIT_RESULT], desc, &result_null);
		(void) heap_getattr(tup, shape.att[C_PROCESSED_AT], desc, &processed_null);
		found = !wait_null && result_null && processed_null;
	}
	systable_endscan_ordered(scan);
	return found;
}

static void
set_col(TupleTableSlot *slot, int col, Datum value, bool isnull)
{
	int			i = shape.att[col] - 1;

	slot->tts_values[i] = isnull ? (Datum) 0 : value;
	slot->tts_isnull[i] = isnull;
}

static void
set_text(TupleTableSlot *slot, int col, const char *value)
{
	set_col(slot, col, value ? CStringGetTextDatum(value) : (Datum) 0, value == NULL);
}

/* The row the statement would write; false: a NOT NULL column would be null. */
static bool
fill_row(TupleTableSlot *slot, Datum session, int64 idx, A2EventInput *ev,
		 int64 now_ms)
{
	TupleDesc	desc = slot->tts_tupleDescriptor;

	ExecClearTuple(slot);
	memcpy(slot->tts_values, shape.fill, sizeof(Datum) * shape.natts);
	memcpy(slot->tts_isnull, shape.fill_null, sizeof(bool) * shape.natts);
	set_col(slot, C_SESSION_ID, session, false);
	set_col(slot, C_IDX, Int64GetDatum(idx), false);
	set_text(slot, C_EVENT_TYPE, ev->type);
	set_col(slot, C_PAYLOAD, JsonbPGetDatum(ev->payload), ev->payload == NULL);
	set_text(slot, C_EVENT_ID, ev->id);
	set_col(slot, C_CREATED_AT, Int64GetDatum(now_ms), false);
	set_col(slot, C_CAUSE, ev->cause ? JsonbPGetDatum(ev->cause) : (Datum) 0, ev->cause == NULL);
	set_col(slot, C_LANE, (Datum) 0, true);
	set_col(slot, C_LANE_READY, BoolGetDatum(true), false);
	set_col(slot, C_PROCESSED_AT, Int64GetDatum(now_ms), !ev->settled);
	if (ev->wait_stored)
		set_col(slot, C_NOT_BEFORE, Int64GetDatum(ev->wait_gate), false);
	else
		set_col(slot, C_NOT_BEFORE, Int64GetDatum(ev->not_before), !ev->has_not_before);
	set_text(slot, C_QUEUE, ev->queue);
	set_col(slot, C_PRIORITY, Int32GetDatum(ev->priority), ev->priority == 0);
	set_text(slot, C_CONCURRENCY_KEY, ev->concurrency_key);
	set_col(slot, C_WAIT_FOR, ev->wait_stored ? JsonbPGetDatum(ev->wait_stored) : (Datum) 0,
			ev->wait_stored == NULL);
	for (int i = 0; i < shape.natts; i++)
		if (slot->tts_isnull[i] && TupleDescAttr(desc, i)->attnotnull)
			return false;
	ExecStoreVirtualTuple(slot);
	return true;
}

/* The checks that do not need the table open. */
static bool
may_try(A2EventInput *ev, bool need_pending)
{
	return direct_writes && ev->id != NULL && ev->lane == NULL &&
		!need_pending && !a2_distributed() && a2_has_dispatch() &&
		!XactReadOnly && !IsInParallelMode() &&
		ExecutorCheckPerms_hook == NULL;
}

/*
 * The row's index entries, as ExecInsertIndexTuples makes them for a plain
 * insert: each partial index whose predicate holds, unique ones checked.
 */
static void
insert_entries(Relation rel, Relation *inds, TupleTableSlot *slot,
			   EState *estate)
{
	ExprContext *econtext = GetPerTupleExprContext(estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];

	econtext->ecxt_scantuple = slot;
	for (int i = 0; i < shape.nindexes; i++)
	{
		IndexInfo  *ii = shape.indexes[i].info;

		if (!ii->ii_ReadyForInserts)
			continue;
		if (ii->ii_PredicateState && !ExecQual(ii->ii_PredicateState, econtext))
			continue;
		FormIndexDatum(ii, slot, estate, values, isnull);
		(void) index_insert(inds[i], values, isnull, &slot->tts_tid, rel,
							shape.indexes[i].check, false, ii);
	}
	ResetExprContext(econtext);
}

/* The session's last index and whether it has a waiting event. */
static bool
read_session(Relation rel, Relation *inds, Datum session, int64 *last,
			 bool *waiting)
{
	Snapshot	snap;
	bool		found;

	/* as SPI does before each statement of a call that writes */
	CommandCounterIncrement();
	snap = RegisterSnapshot(GetLatestSnapshot());
	found = last_index(rel, inds[shape.pkey], session, snap, last);
	if (found)
		*waiting = any_waiting(rel, inds[shape.waiting], session, snap);
	UnregisterSnapshot(snap);
	return found;
}

bool
a2_direct_insert_one(Datum session, A2EventInput *ev, int64 now_ms,
					 bool need_pending, A2InsertOutcome *out)
{
	Oid			relid;
	Relation	rel;
	Relation   *inds;
	EState	   *estate;
	TupleTableSlot *slot;
	int64		last = 0;
	bool		waiting = false;
	bool		written = false;

	if (!may_try(ev, need_pending))
		return false;
	relid = a2_relid("a2_events");
	if (!OidIsValid(relid) ||
		pg_class_aclmask(relid, GetUserId(), ACL_INSERT | ACL_SELECT, ACLMASK_ALL) !=
		(ACL_INSERT | ACL_SELECT))
		return false;

	/* the lock takes in pending invalidations: the shape is current after it */
	rel = table_open(relid, RowExclusiveLock);
	if (!plain_table(rel) ||
		!(shape.relid == relid ? shape.usable : shape_build(rel)) ||
		shape.natts != RelationGetDescr(rel)->natts)
	{
		table_close(rel, NoLock);
		return false;
	}
	inds = palloc(sizeof(Relation) * shape.nindexes);
	for (int i = 0; i < shape.nindexes; i++)
		inds[i] = index_open(shape.indexes[i].oid, RowExclusiveLock);
	estate = CreateExecutorState();
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);

	/* at PG_INT64_MAX the statement raises bigint out of range */
	if (read_session(rel, inds, session, &last, &waiting) &&
		last < PG_INT64_MAX && fill_row(slot, session, last + 1, ev, now_ms))
	{
		table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
		insert_entries(rel, inds, slot, estate);
		written = true;
	}

	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	for (int i = 0; i < shape.nindexes; i++)
		index_close(inds[i], NoLock);
	pfree(inds);
	table_close(rel, NoLock);
	if (!written)
		return false;
	CommandCounterIncrement();
	recent_remember(session, last + 1);
	out->base = last;
	out->inserted = 1;
	out->pending = false;
	out->waiting = waiting;
	return true;
}
