/*-------------------------------------------------------------------------
 *
 * pg_compat.h
 *	  Every difference between the PostgreSQL majors a2 supports (15 to 19;
 *	  19 as its release candidate, 19~rc1) that its code meets, in one
 *	  place: the operations call the a2_* names below and never test
 *	  PG_VERSION_NUM themselves.
 *
 *	  Checked against 15, 16.2, 17.12, 18.6 and 19~rc1 (every file builds
 *	  with -Werror; the suites of scripts/matrix.sh pass on 17, 18 and 19,
 *	  and passed by hand on 16) and found unchanged for a2's use, so
 *	  needing nothing here: the background worker API and
 *	  BackgroundWorkerInitializeConnection, shmem_request_hook and
 *	  shmem_startup_hook, RequestNamedLWLockTranche, the xact and subxact
 *	  callbacks, Async_Notify from the notifier (which
 *	  sets MyDatabaseId per sending transaction), WaitLatch with
 *	  PG_WAIT_EXTENSION, the SPI plan calls (SPI_prepare_cursor,
 *	  SPI_keepplan, SPI_execute_snapshot), the systable scans of
 *	  pg_extension, and pg_class_aclcheck.
 *
 * IDENTIFICATION
 *	  src/pg_compat.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef A2_PG_COMPAT_H
#define A2_PG_COMPAT_H

#include "postgres.h"

#include "access/tableam.h"
#include "access/transam.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/jsonb.h"

/*
 * 19's pgstat.h no longer includes utils/wait_event.h, where
 * pgstat_report_wait_start/_end are; the header is there on every
 * supported major.
 */
#include "utils/wait_event.h"

/* 16 moved the varlena macros (VARDATA_ANY, ...) out of postgres.h */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 200000
#error "a2 supports PostgreSQL 15, 16, 17, 18 and 19"
#endif

/*
 * DecodeDateTime: 16 added a DateTimeErrorExtra argument, filled in with
 * the offending time zone name or abbreviation on some errors.  a2 only
 * asks whether a literal parses, so the details are dropped.
 */
static inline int
a2_decode_datetime(char **field, int *ftype, int nf, int *dtype,
				   struct pg_tm *tm, fsec_t *fsec, int *tzp)
{
#if PG_VERSION_NUM >= 160000
	DateTimeErrorExtra extra;

	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp, &extra);
#else
	return DecodeDateTime(field, ftype, nf, dtype, tm, fsec, tzp);
#endif
}

/*
 * A GUC check hook's *extra: 16 moved GUC memory into a memory context and
 * frees extra with guc_free() (pfree), so it must come from guc_malloc();
 * before 16 it was free()d, so malloc().  NULL when out of memory.
 */
static inline void *
a2_guc_extra_alloc(size_t size)
{
#if PG_VERSION_NUM >= 160000
	return guc_malloc(LOG, size);
#else
	return malloc(size);
#endif
}

/*
 * The shared transaction-id counters (oldestClogXid and the like): 17
 * renamed ShmemVariableCache to TransamVariables.
 */
#if PG_VERSION_NUM >= 170000
#define a2_transam TransamVariables
#else
#define a2_transam ShmemVariableCache
#endif

/*
 * The jsonb builder (json_out.h's A2Json, filled through
 * a2_push_jsonb_value): 19 gave pushJsonbValue a JsonbInState, which holds
 * the parse stack and, once the outermost container is closed, the
 * finished value in ->result, and made it return void.  Before 19 the
 * builder is the parse stack itself and pushJsonbValue returns the
 * container a WJB_END_* token closed.
 *
 * a2_push_jsonb_value returns the finished value after the outermost
 * WJB_END_* and is not to be relied on otherwise (NULL on 19).  A builder
 * starts as NULL; on 19 the first push allocates its state in
 * CurrentMemoryContext, where the parse stack goes too.
 */
#if PG_VERSION_NUM >= 190000
typedef JsonbInState *a2_jsonb_builder;

static inline JsonbValue *
a2_push_jsonb_value(a2_jsonb_builder *js, JsonbIteratorToken seq,
					JsonbValue *v)
{
	if (*js == NULL)
		*js = palloc0_object(JsonbInState);
	pushJsonbValue(*js, seq, v);
	return (*js)->result;
}
#else
typedef JsonbParseState *a2_jsonb_builder;

static inline JsonbValue *
a2_push_jsonb_value(a2_jsonb_builder *js, JsonbIteratorToken seq,
					JsonbValue *v)
{
	return pushJsonbValue(js, seq, v);
}
#endif

/*
 * table_tuple_update of a row the caller holds locked (direct_update.c),
 * waiting, with `crosscheck` (InvalidSnapshot: none): 16 replaced the bool
 * that says whether the new version needs index entries (the update was
 * not HOT) by TU_UpdateIndexes (none, all, or the summarizing ones only);
 * 19 added an options argument.  *need_entries: the btree indexes need
 * entries (a summarizing-only answer needs none: direct writes keep no
 * such index).
 */
static inline TM_Result
a2_table_update(Relation rel, ItemPointer tid, TupleTableSlot *slot,
				CommandId cid, Snapshot crosscheck, bool *need_entries)
{
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	TM_Result	result;
#if PG_VERSION_NUM >= 160000
	TU_UpdateIndexes update_indexes = TU_None;
#else
	bool		update_indexes = false;
#endif

#if PG_VERSION_NUM >= 190000
	result = table_tuple_update(rel, tid, slot, cid, 0, InvalidSnapshot,
								crosscheck, true, &tmfd, &lockmode,
								&update_indexes);
#else
	result = table_tuple_update(rel, tid, slot, cid, InvalidSnapshot,
								crosscheck, true, &tmfd, &lockmode,
								&update_indexes);
#endif
#if PG_VERSION_NUM >= 160000
	*need_entries = update_indexes == TU_All;
#else
	*need_entries = update_indexes;
#endif
	return result;
}

/*
 * ExecCheckIndexConstraints (direct_shape.c, ON CONFLICT's check): 18
 * added the tuple id of the row being updated (NULL for an insert).
 */
#if PG_VERSION_NUM >= 180000
#define a2_check_index_constraints(rri, slot, estate, conflict, arbiters) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflict), NULL, (arbiters))
#else
#define a2_check_index_constraints(rri, slot, estate, conflict, arbiters) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflict), (arbiters))
#endif

/*
 * index_beginscan (direct_walk.c, an ordered scan of one index): 18 added
 * an instrumentation argument, 19 the scan's options.
 */
#if PG_VERSION_NUM >= 190000
#define a2_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0, 0)
#elif PG_VERSION_NUM >= 180000
#define a2_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), 0)
#else
#define a2_index_beginscan(heap, index, snapshot, nkeys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), 0)
#endif

/*
 * 18 replaced the attribute pg_attribute_noreturn(), written after a
 * declaration, by pg_noreturn, written before it (C11 _Noreturn).  GCC and
 * Clang take the attribute in front too.
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * The planner hooks plan_floor.c installs ("Plans as for a table in
 * use"): 19 gave planner_hook and standard_planner an ExplainState
 * argument, and replaced get_relation_info_hook by build_simple_rel_hook,
 * called at the end of build_simple_rel() once get_relation_info() has
 * filled in the relation's size and indexes.  A2_PLANNER_PARAMS declares a
 * planner hook's parameters, A2_PLANNER_ARGS passes them on;
 * A2_REL_HOOK_PARAMS declares the relation hook's, which reaches the
 * RelOptInfo as `rel` and the relation's OID as A2_REL_HOOK_OID (InvalidOid
 * for anything but a plain table that is not an inheritance parent).
 */
#if PG_VERSION_NUM >= 190000
#define A2_PLANNER_PARAMS Query *parse, const char *query_string, \
	int cursorOptions, ParamListInfo boundParams, ExplainState *es
#define A2_PLANNER_ARGS parse, query_string, cursorOptions, boundParams, es
#define a2_rel_hook build_simple_rel_hook
#define a2_rel_hook_type build_simple_rel_hook_type
#define A2_REL_HOOK_PARAMS PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte
#define A2_REL_HOOK_ARGS root, rel, rte
#define A2_REL_HOOK_OID \
	(rel->rtekind == RTE_RELATION && !rte->inh ? rte->relid : InvalidOid)
#else
#define A2_PLANNER_PARAMS Query *parse, const char *query_string, \
	int cursorOptions, ParamListInfo boundParams
#define A2_PLANNER_ARGS parse, query_string, cursorOptions, boundParams
#define a2_rel_hook get_relation_info_hook
#define a2_rel_hook_type get_relation_info_hook_type
#define A2_REL_HOOK_PARAMS PlannerInfo *root, Oid relationObjectId, \
	bool inhparent, RelOptInfo *rel
#define A2_REL_HOOK_ARGS root, relationObjectId, inhparent, rel
#define A2_REL_HOOK_OID (inhparent ? InvalidOid : relationObjectId)
#endif

/*
 * The module's magic block: from 18 on it also names the library and its
 * version (pg_get_loaded_modules()).  A2_VERSION comes from a2.control
 * through the Makefile.
 */
#if PG_VERSION_NUM >= 180000
#define A2_MODULE_MAGIC PG_MODULE_MAGIC_EXT(.name = "a2", .version = A2_VERSION)
#else
#define A2_MODULE_MAGIC PG_MODULE_MAGIC
#endif

#endif							/* A2_PG_COMPAT_H */
