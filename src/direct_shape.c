/*-------------------------------------------------------------------------
 *
 * direct_shape.c
 *	  a2_events for the direct writes (direct_shape.h): its shape, kept
 *	  per backend, and a row written through the table access method with
 *	  its index entries, as core writes a catalog row.
 *
 *	  The shape: which attribute is which column a direct write names
 *	  (by name, so an upgraded table whose columns were added later is
 *	  the same), the value of every other column (its default when that
 *	  is a constant, else NULL; a default that is not a constant, a
 *	  domain, a generated or identity column, or a NOT NULL column without
 *	  a default makes the table unusable), and each index's IndexInfo with
 *	  its predicate and expressions prepared once.  Any relcache
 *	  invalidation of a2_events drops it (ALTER TABLE, CREATE or DROP
 *	  INDEX, CREATE TRIGGER, a policy, a grant send one); one that arrives
 *	  while it is being learnt leaves it unknown.  What depends on the
 *	  caller (privileges, the transaction) is checked on every call.
 *
 * IDENTIFICATION
 *	  src/direct_shape.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "optimizer/optimizer.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "direct.h"
#include "direct_shape.h"
#include "extension.h"
#include "json_out.h"
#include "pg_compat.h"
#include "statements.h"

/* The columns' names and the types a2 created them with. */
static const struct
{
	const char *name;
	Oid			type;
}			columns[A2D_NCOLUMNS] =
{
	[A2D_SESSION_ID] = {"session_id", TEXTOID},
	[A2D_IDX] = {"idx", INT8OID},
	[A2D_EVENT_TYPE] = {"event_type", TEXTOID},
	[A2D_PAYLOAD] = {"payload", JSONBOID},
	[A2D_EVENT_ID] = {"event_id", TEXTOID},
	[A2D_CREATED_AT] = {"created_at", INT8OID},
	[A2D_CAUSE] = {"cause", JSONBOID},
	[A2D_LANE] = {"lane", TEXTOID},
	[A2D_LANE_READY] = {"lane_ready", BOOLOID},
	[A2D_PROCESSED_AT] = {"processed_at", INT8OID},
	[A2D_NOT_BEFORE] = {"not_before", INT8OID},
	[A2D_QUEUE] = {"queue", TEXTOID},
	[A2D_PRIORITY] = {"priority", INT4OID},
	[A2D_CONCURRENCY_KEY] = {"concurrency_key", TEXTOID},
	[A2D_WAIT_FOR] = {"wait_for", JSONBOID},
	[A2D_WAIT_RESULT] = {"wait_result", JSONBOID},
	[A2D_PROCESSED_BY_ATTEMPT] = {"processed_by_attempt", INT4OID},
	[A2D_RETURNED_EVENT_IDS] = {"returned_event_ids", JSONBOID},
	[A2D_CLAIM_HOLDER] = {"claim_holder", TEXTOID},
	[A2D_CLAIM_EXPIRES_AT] = {"claim_expires_at", INT8OID},
	[A2D_FAILURE_COUNT] = {"failure_count", INT4OID},
	[A2D_LAST_ERROR] = {"last_error", TEXTOID},
	[A2D_LAST_FAILED_AT] = {"last_failed_at", INT8OID},
	[A2D_LAST_FAILED_ATTEMPT] = {"last_failed_attempt", INT4OID},
	[A2D_FAILED_AT] = {"failed_at", INT8OID},
	[A2D_ATTEMPT_COUNT] = {"attempt_count", INT4OID},
	[A2D_FIRST_CLAIMED_AT] = {"first_claimed_at", INT8OID},
	[A2D_LAST_CLAIMED_AT] = {"last_claimed_at", INT8OID},
};

/*
 * The columns an appended row names (local.c's insert statements); every
 * other column gets its fill value.
 */
static const bool appended[A2D_NCOLUMNS] = {
	[A2D_SESSION_ID] = true, [A2D_IDX] = true, [A2D_EVENT_TYPE] = true,
	[A2D_PAYLOAD] = true, [A2D_EVENT_ID] = true, [A2D_CREATED_AT] = true,
	[A2D_CAUSE] = true, [A2D_LANE] = true, [A2D_LANE_READY] = true,
	[A2D_PROCESSED_AT] = true, [A2D_NOT_BEFORE] = true, [A2D_QUEUE] = true,
	[A2D_PRIORITY] = true, [A2D_CONCURRENCY_KEY] = true, [A2D_WAIT_FOR] = true,
};

/* One index of a2_events, ready to take entries. */
typedef struct ShapeIndex
{
	Oid			oid;
	IndexInfo  *info;			/* predicate and expressions prepared */
	IndexUniqueCheck check;
	Bitmapset  *attrs;			/* the table's attributes it holds */
} ShapeIndex;

/* a2_events as this backend last saw it */
typedef struct Shape
{
	Oid			relid;			/* InvalidOid: not known */
	bool		usable;			/* direct writes may serve it */
	AttrNumber	att[A2D_NCOLUMNS];
	int			natts;
	Datum	   *fill;			/* per attribute: the value of a column not named */
	bool	   *fill_null;
	int			nindexes;
	ShapeIndex *indexes;
	int			named[A2D_NINDEXES];	/* A2D_IX_PKEY, ... in indexes[] */
	int			reads[A2D_NREADS];	/* the walk's indexes, -1: not a2's */
	TupleDesc	answer;			/* a row of A2_EVENT_COLUMNS (json_out.h) */
	AttrNumber	answer_att[A2C_NUM_EVENT_COLS];	/* each one's attribute */
	MemoryContext cxt;
} Shape;

static Shape shape;
static bool callback_registered = false;
static uint64 invalidations = 0;
static bool direct_writes = true;

void
a2_direct_init(void)
{
	DefineCustomBoolVariable("a2.direct_writes",
							 "Writes plain a2_events rows, and reads a2_claim_next's walk, without the executor.",
							 "Off: every append, claim, completion, failure and walk runs its statements (the result is the same).",
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

/* The table's attributes an index holds (keys, INCLUDE columns, expressions). */
static Bitmapset *
index_attrs(IndexInfo *ii)
{
	Bitmapset  *attrs = NULL;
	Bitmapset  *vars = NULL;
	int			x = -1;

	for (int i = 0; i < ii->ii_NumIndexAttrs; i++)
		if (ii->ii_IndexAttrNumbers[i] > 0)
			attrs = bms_add_member(attrs, ii->ii_IndexAttrNumbers[i]);
	pull_varattnos((Node *) ii->ii_Expressions, 1, &vars);
	while ((x = bms_next_member(vars, x)) >= 0)
		attrs = bms_add_member(attrs, x + FirstLowInvalidHeapAttributeNumber);
	return attrs;
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
	/* what ON CONFLICT's check of a unique index needs */
	if (ind->rd_index->indisunique)
		BuildSpeculativeIndexInfo(ind, ii);
	si->attrs = index_attrs(ii);
	return true;
}

/* Every index of a2_events, and where the ones the writes name are. */
static bool
learn_indexes(Relation rel)
{
	List	   *oids = RelationGetIndexList(rel);
	Oid			pkey = a2_relid("a2_events_pkey");
	Oid			waiting = a2_relid("a2_events_waiting");
	Oid			event_id = a2_relid("a2_events_event_id");
	static const char *const read_names[A2D_NREADS] = {
		[A2D_READ_DEFAULT_AVAILABLE] = "a2_events_default_available",
		[A2D_READ_QUEUE_AVAILABLE] = "a2_events_queue_available",
		[A2D_READ_QUEUE_RETRY] = "a2_events_queue_retry",
		[A2D_READ_LEVEL_AVAILABLE] = "a2_events_level_available",
		[A2D_READ_KEY_LEASES] = "a2_events_key_leases",
		[A2D_READ_UNPROCESSED] = "a2_events_unprocessed",
	};
	Oid			reads[A2D_NREADS];
	bool		ok = true;
	ListCell   *lc;

	shape.nindexes = 0;
	shape.indexes = palloc0(sizeof(ShapeIndex) * Max(list_length(oids), 1));
	for (int k = 0; k < A2D_NINDEXES; k++)
		shape.named[k] = -1;
	for (int k = 0; k < A2D_NREADS; k++)
	{
		reads[k] = a2_relid(read_names[k]);
		shape.reads[k] = -1;
	}
	foreach(lc, oids)
	{
		Relation	ind = index_open(lfirst_oid(lc), RowExclusiveLock);
		ShapeIndex *si = &shape.indexes[shape.nindexes];
		int2vector *keys = &ind->rd_index->indkey;
		int			nkeys = ind->rd_index->indnkeyatts;

		ok = ok && learn_index(ind, si);
		if (ok && si->oid == pkey && nkeys == 2 &&
			keys->values[0] == shape.att[A2D_SESSION_ID] &&
			keys->values[1] == shape.att[A2D_IDX])
			shape.named[A2D_IX_PKEY] = shape.nindexes;
		else if (ok && si->oid == waiting && nkeys >= 1 &&
				 keys->values[0] == shape.att[A2D_SESSION_ID])
			shape.named[A2D_IX_WAITING] = shape.nindexes;
		else if (ok && si->oid == event_id && nkeys == 1 &&
				 ind->rd_index->indisunique && si->info->ii_Predicate == NIL &&
				 keys->values[0] == shape.att[A2D_EVENT_ID])
			shape.named[A2D_IX_EVENT_ID] = shape.nindexes;
		else
		{
			for (int k = 0; ok && k < A2D_NREADS; k++)
				if (si->oid == reads[k] &&
					a2_direct_read_index(rel, ind, si->info, shape.att, k))
					shape.reads[k] = shape.nindexes;
		}
		index_close(ind, NoLock);
		shape.nindexes++;
	}
	for (int k = 0; k < A2D_NINDEXES; k++)
		ok = ok && shape.named[k] >= 0;
	return ok;
}

/*
 * The answer row of a direct claim (A2_EVENT_COLUMNS, which are all plain
 * columns of a2_events since 0.4.0): each column's attribute, and a
 * descriptor with the table's types.  In shape.cxt.
 */
static bool
learn_answer(TupleDesc desc)
{
	static const char *const names[] = {A2_EVENT_COLUMN_NAMES};

	StaticAssertStmt(lengthof(names) == A2C_NUM_EVENT_COLS,
					 "A2_EVENT_COLUMN_NAMES and A2EventCol differ");
	shape.answer = CreateTemplateTupleDesc(A2C_NUM_EVENT_COLS);
	for (int k = 0; k < A2C_NUM_EVENT_COLS; k++)
	{
		int			i;

		for (i = 0; i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped &&
				strcmp(NameStr(TupleDescAttr(desc, i)->attname), names[k]) == 0)
				break;
		if (i == desc->natts)
			return false;
		shape.answer_att[k] = i + 1;
		TupleDescInitEntry(shape.answer, k + 1, names[k], TupleDescAttr(desc, i)->atttypid,
						   TupleDescAttr(desc, i)->atttypmod, 0);
	}
	return true;
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
		for (k = 0; k < A2D_NCOLUMNS; k++)
			if (strcmp(NameStr(attr->attname), columns[k].name) == 0)
				break;
		if (k < A2D_NCOLUMNS)
		{
			shape.att[k] = i + 1;
			if (attr->atttypid != columns[k].type)
				shape.usable = false;
			if (appended[k])
				continue;
		}
		if (!fill_value(rel, i + 1, &shape.fill[i], &shape.fill_null[i]))
			shape.usable = false;
	}
	for (int k = 0; k < A2D_NCOLUMNS; k++)
		if (shape.att[k] == 0)
			shape.usable = false;
	if (shape.usable)
		shape.usable = learn_answer(desc);
	if (shape.usable)
		shape.usable = learn_indexes(rel);
	MemoryContextSwitchTo(old);
	/* an invalidation while learning (index_open) leaves it unknown */
	if (invalidations == seen)
		shape.relid = RelationGetRelid(rel);
	return shape.usable;
}

/* A plain table with no trigger (a statement trigger fires for no row too) and no rule. */
static bool
no_trigger_or_rule(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_RELATION &&
		rel->trigdesc == NULL &&
		!rel->rd_rel->relhasrules;
}

/*
 * What a statement would do beyond the rows it writes: a trigger, a rule,
 * a CHECK constraint, a policy.
 */
static bool
plain_table(Relation rel)
{
	return no_trigger_or_rule(rel) &&
		!rel->rd_rel->relrowsecurity &&
		(rel->rd_att->constr == NULL || rel->rd_att->constr->num_check == 0);
}

/* What does not need the table: the setting, the mode, the transaction. */
static bool
may_write(void)
{
	return direct_writes && !a2_distributed() && a2_has_dispatch() &&
		!XactReadOnly && !IsInParallelMode() &&
		ExecutorCheckPerms_hook == NULL;
}

static bool
holds(Oid relid, AclMode privileges)
{
	return OidIsValid(relid) &&
		pg_class_aclmask(relid, GetUserId(), privileges, ACLMASK_ALL) == privileges;
}

/*
 * a2_events opened in `mode` for a caller holding `privileges` on the
 * whole table, when `fits` (what the statement would do beyond the rows)
 * allows it and its shape is current and usable; NULL, with nothing
 * open, where the statement is to run.
 */
static Relation
open_events(AclMode privileges, LOCKMODE mode, bool (*fits) (Relation rel))
{
	Oid			relid;
	Relation	rel;

	if (!may_write())
		return NULL;
	relid = a2_relid("a2_events");
	if (!holds(relid, privileges))
		return NULL;

	/* the lock takes in pending invalidations: the shape is current after it */
	rel = table_open(relid, mode);
	if (!fits(rel) ||
		!(shape.relid == relid ? shape.usable : shape_build(rel)) ||
		shape.natts != RelationGetDescr(rel)->natts)
	{
		table_close(rel, NoLock);
		return NULL;
	}
	return rel;
}

bool
a2_direct_open(A2DirectTable *t, AclMode privileges)
{
	t->rel = open_events(privileges, RowExclusiveLock, plain_table);
	if (t->rel == NULL)
		return false;
	t->indexes = palloc(sizeof(Relation) * shape.nindexes);
	for (int i = 0; i < shape.nindexes; i++)
		t->indexes[i] = index_open(shape.indexes[i].oid, RowExclusiveLock);
	t->estate = CreateExecutorState();
	t->slot = MakeSingleTupleTableSlot(RelationGetDescr(t->rel), &TTSOpsVirtual);
	return true;
}

void
a2_direct_close(A2DirectTable *t)
{
	ExecDropSingleTupleTableSlot(t->slot);
	FreeExecutorState(t->estate);
	for (int i = 0; i < shape.nindexes; i++)
		index_close(t->indexes[i], NoLock);
	pfree(t->indexes);
	table_close(t->rel, NoLock);
}

/* What a SELECT would do beyond the rows: filter them by a policy. */
static bool
readable_table(Relation rel)
{
	return rel->rd_rel->relkind == RELKIND_RELATION &&
		!rel->rd_rel->relrowsecurity;
}

bool
a2_direct_open_read(A2DirectRead *r, A2DirectReadIndex which)
{
	r->rel = open_events(ACL_SELECT, AccessShareLock, readable_table);
	if (r->rel == NULL)
		return false;
	if (shape.reads[which] < 0)
	{
		table_close(r->rel, NoLock);
		return false;
	}
	r->index = index_open(shape.indexes[shape.reads[which]].oid, AccessShareLock);
	return true;
}

/*
 * The snapshot SPI would push for a statement of a call that writes.
 */
void
a2_direct_push_snapshot(bool latest)
{
	/* this call's own writes are seen */
	CommandCounterIncrement();
	PushCopiedSnapshot(latest && IsolationUsesXactSnapshot() ?
					   GetLatestSnapshot() : GetTransactionSnapshot());
	UpdateActiveSnapshotCommandId();
}

Relation
a2_direct_open_read_pkey(void)
{
	return index_open(shape.indexes[shape.named[A2D_IX_PKEY]].oid, AccessShareLock);
}

void
a2_direct_close_read(A2DirectRead *r)
{
	index_close(r->index, NoLock);
	table_close(r->rel, NoLock);
}

Relation
a2_direct_open_table(const char *relname)
{
	Oid			relid;
	Relation	rel;

	if (!may_write())
		return NULL;
	relid = a2_relid(relname);
	if (!holds(relid, ACL_SELECT))
		return NULL;
	rel = table_open(relid, AccessShareLock);
	if (!readable_table(rel))
	{
		table_close(rel, NoLock);
		return NULL;
	}
	return rel;
}

bool
a2_direct_bystander(const char *relname, AclMode privileges)
{
	Oid			relid = a2_relid(relname);
	Relation	rel;
	bool		ok;

	if (!holds(relid, privileges))
		return false;
	rel = table_open(relid, RowExclusiveLock);
	ok = no_trigger_or_rule(rel);
	table_close(rel, NoLock);
	return ok;
}

TupleDesc
a2_direct_answer_desc(void)
{
	return CreateTupleDescCopy(shape.answer);
}

HeapTuple
a2_direct_answer(A2DirectTable *t, TupleDesc answer)
{
	Datum		values[A2C_NUM_EVENT_COLS];
	bool		nulls[A2C_NUM_EVENT_COLS];

	for (int k = 0; k < A2C_NUM_EVENT_COLS; k++)
	{
		values[k] = t->slot->tts_values[shape.answer_att[k] - 1];
		nulls[k] = t->slot->tts_isnull[shape.answer_att[k] - 1];
	}
	return heap_form_tuple(answer, values, nulls);
}

AttrNumber
a2_direct_att(A2DirectColumn col)
{
	return shape.att[col];
}

Relation
a2_direct_index(A2DirectTable *t, A2DirectIndex which)
{
	return t->indexes[shape.named[which]];
}

void
a2_direct_row_new(A2DirectTable *t)
{
	ExecClearTuple(t->slot);
	memcpy(t->slot->tts_values, shape.fill, sizeof(Datum) * shape.natts);
	memcpy(t->slot->tts_isnull, shape.fill_null, sizeof(bool) * shape.natts);
}

bool
a2_direct_row_from(A2DirectTable *t, ItemPointer tid)
{
	TupleDesc	desc = RelationGetDescr(t->rel);
	TupleTableSlot *old = table_slot_create(t->rel, NULL);
	bool		found = table_tuple_fetch_row_version(t->rel, tid, SnapshotAny, old);

	ExecClearTuple(t->slot);
	if (found)
	{
		slot_getallattrs(old);
		/* copies: the old row's values point into its buffer */
		for (int i = 0; i < shape.natts; i++)
		{
			Form_pg_attribute attr = TupleDescAttr(desc, i);

			t->slot->tts_isnull[i] = old->tts_isnull[i];
			t->slot->tts_values[i] = old->tts_isnull[i] ? (Datum) 0 :
				datumCopy(old->tts_values[i], attr->attbyval, attr->attlen);
		}
	}
	ExecDropSingleTupleTableSlot(old);
	return found;
}

Datum
a2_direct_get(A2DirectTable *t, A2DirectColumn col, bool *isnull)
{
	int			i = shape.att[col] - 1;

	*isnull = t->slot->tts_isnull[i];
	return t->slot->tts_values[i];
}

void
a2_direct_set(A2DirectTable *t, A2DirectColumn col, Datum value, bool isnull)
{
	int			i = shape.att[col] - 1;

	t->slot->tts_values[i] = isnull ? (Datum) 0 : value;
	t->slot->tts_isnull[i] = isnull;
}

void
a2_direct_set_text(A2DirectTable *t, A2DirectColumn col, const char *value)
{
	a2_direct_set(t, col, value ? CStringGetTextDatum(value) : (Datum) 0, value == NULL);
}

bool
a2_direct_row_done(A2DirectTable *t)
{
	TupleDesc	desc = t->slot->tts_tupleDescriptor;

	for (int i = 0; i < shape.natts; i++)
		if (t->slot->tts_isnull[i] && TupleDescAttr(desc, i)->attnotnull &&
			!TupleDescAttr(desc, i)->attisdropped)
			return false;
	ExecStoreVirtualTuple(t->slot);
	return true;
}

/*
 * As ExecInsertIndexTuples: each partial index whose predicate holds,
 * unique ones checked; the arbiter index (-1: none) of a speculative
 * insertion only for a conflict, which makes it answer false.
 */
static bool
index_entries(A2DirectTable *t, const Bitmapset *changed, int arbiter)
{
	ExprContext *econtext = GetPerTupleExprContext(t->estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	bool		ok = true;

	econtext->ecxt_scantuple = t->slot;
	for (int i = 0; i < shape.nindexes; i++)
	{
		ShapeIndex *si = &shape.indexes[i];
		IndexInfo  *ii = si->info;
		bool		satisfied;

		if (!ii->ii_ReadyForInserts)
			continue;
		if (ii->ii_PredicateState && !ExecQual(ii->ii_PredicateState, econtext))
			continue;
		FormIndexDatum(ii, t->slot, t->estate, values, isnull);
		satisfied = index_insert(t->indexes[i], values, isnull, &t->slot->tts_tid,
								 t->rel, i == arbiter ? UNIQUE_CHECK_PARTIAL : si->check,
								 changed != NULL && !bms_overlap(si->attrs, changed), ii);
		if (i == arbiter && !satisfied)
			ok = false;
	}
	ResetExprContext(econtext);
	return ok;
}

void
a2_direct_index_entries(A2DirectTable *t, const Bitmapset *changed)
{
	(void) index_entries(t, changed, -1);
}

/* The executor's pre-check: no live row conflicts in `arbiter`. */
static bool
no_conflict(A2DirectTable *t, int arbiter)
{
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	ItemPointerData conflict;
	IndexInfo **infos = palloc(sizeof(IndexInfo *) * shape.nindexes);
	bool		ok;

	for (int i = 0; i < shape.nindexes; i++)
		infos[i] = shape.indexes[i].info;
	rri->ri_RelationDesc = t->rel;
	rri->ri_NumIndices = shape.nindexes;
	rri->ri_IndexRelationDescs = t->indexes;
	rri->ri_IndexRelationInfo = infos;
	ok = a2_check_index_constraints(rri, t->slot, t->estate, &conflict,
									list_make1_oid(shape.indexes[arbiter].oid));
	pfree(infos);
	pfree(rri);
	return ok;
}

bool
a2_direct_insert_unless_conflict(A2DirectTable *t, A2DirectIndex which)
{
	int			arbiter = shape.named[which];

	for (;;)
	{
		TransactionId xid;
		uint32		token;
		bool		inserted;

		if (!no_conflict(t, arbiter))
			return false;
		/* as ExecInsert: others wait on the token, not the transaction */
		xid = GetCurrentTransactionId();
		token = SpeculativeInsertionLockAcquire(xid);
		table_tuple_insert_speculative(t->rel, t->slot, GetCurrentCommandId(true),
									   0, NULL, token);
		inserted = index_entries(t, NULL, arbiter);
		table_tuple_complete_speculative(t->rel, t->slot, token, inserted);
		SpeculativeInsertionLockRelease(xid);
		if (inserted)
			return true;
		/* a conflicting row came in meanwhile: ours is gone, check again */
	}
}
