/*-------------------------------------------------------------------------
 *
 * plan_floor.c
 *	  Plans as for a table in use (plan_floor.h).
 *
 *	  a2 keeps one generic plan per statement and backend.  PostgreSQL plans
 *	  it at the statement's first execution with the statistics of that
 *	  moment, and keeps it until an invalidation (an ANALYZE, DDL) makes it
 *	  re-plan.  On a new database every a2 table is empty and analyzed
 *	  (reltuples 0): the plans would read whole tables (a sequential scan and
 *	  a sort for the append's max(idx), the claim's update joined to every
 *	  row of the session) and keep doing so as the table grows, until
 *	  autovacuum's first ANALYZE of a2_events, a minute later, or never with
 *	  autovacuum off (bench/RESULTS.md, "Issue 30").
 *
 *	  Every a2 statement is a lookup by key (a session, an index, an event id,
 *	  a queue's next due entry), written for tables of any size, so its plan
 *	  should be the one for a table in use.  While PostgreSQL plans one of
 *	  a2's kept statements, each table the statement names whose size
 *	  estimate is below A2_PLAN_MIN_TUPLES rows is planned as if it held that
 *	  many, its indexes as many (a partial index a tenth); a larger table
 *	  keeps its own estimate.  10,000 rows: with no column statistics (an
 *	  empty table has none) an equality on session_id is taken to match 0.5%
 *	  of them, 50 rows, the size of a session in use.  Every statement's plan
 *	  then reads a2_events through the index conditions of the plan made
 *	  with the statistics of a table in use (bench/RESULTS.md, "Issue 30",
 *	  compared statement by statement); a few take a bitmap scan on the same
 *	  conditions, or another partial index of the session's events.
 *
 *	  enable_seqscan = off during planning is not enough: it leaves the row
 *	  estimates at "nothing", so the planner still computes max(idx) by
 *	  reading the session's whole index range and joins the claim's update to
 *	  every row of the session; and it would sway plans made with real
 *	  statistics too.
 *
 *	  Nor are a2's kept plans JIT-compiled: their cost estimates can pass
 *	  jit_above_cost (the claim's a2_admit filter is declared COST 10000,
 *	  and a big table makes a generic plan's row estimates large), and then
 *	  every execution compiles the plan again, 10 to 200 ms for a statement
 *	  that runs in a fraction of a millisecond (bench/RESULTS.md, "JIT").
 *
 *	  And a statement that names its index (A2Statement.index: the walk's
 *	  probes of a2_events_default_available) is planned with that index
 *	  alone among its table's: statistics taken under a long-held snapshot
 *	  once made its plan read another index, every entry of it, and sort
 *	  (bench/RESULTS.md, "Walk marks").
 *
 *	  The statements are told apart by their query string: PostgreSQL passes
 *	  the CachedPlanSource's own copy (plansource->query_string) to the
 *	  planner, whether it plans the statement for the first time or again
 *	  after an invalidation, so a set of those pointers names exactly a2's
 *	  kept statements, and no statement of the caller's, of a trigger or of a
 *	  function a2's statement runs (their planning resets the flag).  Routed
 *	  statements (Citus's planner, a custom plan per call) are not in the
 *	  set: Citus routes them to a shard, planned there by the shard's node.
 *
 * IDENTIFICATION
 *	  src/plan_floor.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "executor/spi.h"
#include "jit/jit.h"
#include "nodes/pathnodes.h"
#include "optimizer/pathnode.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/plancache.h"

#include "pg_compat.h"
#include "plan_floor.h"

static planner_hook_type prev_planner_hook = NULL;
static a2_rel_hook_type prev_rel_hook = NULL;

#define A2_PLAN_MIN_TUPLES	10000.0
#define A2_PLAN_TUPLES_PER_PAGE	40.0	/* heap: a2_events rows are ~200 bytes */
#define A2_PLAN_INDEX_TUPLES_PER_PAGE 100.0

/*
 * The query strings of the kept generic plans: a set of pointers, each
 * with its statement's walk_keys (statements.h, walk_mark.h).
 */
typedef struct PlannedEntry
{
	const char *query_string;	/* the key */
	bool		walk_keys;
	const char *index;			/* A2Statement.index, or NULL */
} PlannedEntry;

static HTAB *planned_statements = NULL;

/* true while the planner plans one of planned_statements */
static bool planning_a2 = false;

/* while planning_a2: the only index its plan may read, or NULL */
static const char *planning_index = NULL;

void
a2_plan_floor_track(SPIPlanPtr plan, bool track, bool walk_keys,
					const char *index)
{
	ListCell   *lc;

	if (planned_statements == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(const char *);
		ctl.entrysize = sizeof(PlannedEntry);
		ctl.hcxt = TopMemoryContext;
		planned_statements = hash_create("a2 planned statements", 256, &ctl,
										 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	foreach(lc, SPI_plan_get_plan_sources(plan))
	{
		CachedPlanSource *ps = (CachedPlanSource *) lfirst(lc);
		PlannedEntry *e;

		e = hash_search(planned_statements, &ps->query_string,
						track ? HASH_ENTER : HASH_REMOVE, NULL);
		if (track)
		{
			e->walk_keys = walk_keys;
			e->index = index;
		}
	}
}

bool
a2_plan_floor_walk_keys(const char *query_string)
{
	PlannedEntry *e;

	if (planned_statements == NULL || query_string == NULL)
		return false;
	e = hash_search(planned_statements, &query_string, HASH_FIND, NULL);
	return e != NULL && e->walk_keys;
}

static PlannedStmt *
a2_planner(A2_PLANNER_PARAMS)
{
	bool		outer = planning_a2;
	const char *outer_index = planning_index;
	PlannedEntry *e = NULL;
	bool		mine;
	PlannedStmt *result = NULL;

	if (planned_statements != NULL && query_string != NULL)
		e = hash_search(planned_statements, &query_string, HASH_FIND, NULL);
	mine = e != NULL;
	planning_a2 = mine;
	planning_index = mine ? e->index : NULL;
	PG_TRY();
	{
		if (prev_planner_hook)
			result = prev_planner_hook(A2_PLANNER_ARGS);
		else
			result = standard_planner(A2_PLANNER_ARGS);
	}
	PG_FINALLY();
	{
		planning_a2 = outer;
		planning_index = outer_index;
	}
	PG_END_TRY();

	/*
	 * Never JIT-compiled: a2's statements touch a few rows, and compiling
	 * one costs 10 to 200 ms at every execution, while the generic plan's
	 * cost estimate (a claim's a2_admit filter costs 10000, a big table's
	 * generic row estimates) can pass jit_above_cost.
	 */
	if (mine && result != NULL)
		result->jitFlags = PGJIT_NONE;
	return result;
}

/*
 * A statement that names its index (A2Statement.index) reads the table
 * that has it through that index alone: the other indexes are left out of
 * the planner's choice.  Its plan then does not depend on statistics that
 * a long-held snapshot makes wrong (bench/RESULTS.md, "Walk marks": under
 * one, ANALYZE counted a2_events' live rows as few, and the walk's probes
 * were planned over a2_events_dispatch_ready, reading every version of
 * every pending event before a sort, 780,000 buffers per call).
 */
static void
pin_index(RelOptInfo *rel)
{
	ListCell   *lc;
	List	   *kept = NIL;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
		char	   *name = get_rel_name(index->indexoid);

		if (name != NULL && strcmp(name, planning_index) == 0)
			kept = lappend(kept, index);
	}
	if (kept != NIL)			/* not this statement's table: as it is */
		rel->indexlist = kept;
}

/* A table of a2's statement, smaller than a table in use, planned as one. */
static void
a2_rel_size(A2_REL_HOOK_PARAMS)
{
	Oid			relid = A2_REL_HOOK_OID;
	ListCell   *lc;

	if (prev_rel_hook)
		prev_rel_hook(A2_REL_HOOK_ARGS);
	if (planning_a2 && planning_index != NULL && OidIsValid(relid))
		pin_index(rel);
	/* user tables only: the catalogs' statistics are their own */
	if (!planning_a2 || !OidIsValid(relid) || relid < FirstNormalObjectId ||
		rel->tuples >= A2_PLAN_MIN_TUPLES)
		return;
	rel->tuples = A2_PLAN_MIN_TUPLES;
	rel->pages = Max(rel->pages,
					 (BlockNumber) (A2_PLAN_MIN_TUPLES / A2_PLAN_TUPLES_PER_PAGE));
	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = (IndexOptInfo *) lfirst(lc);
		double		tuples = index->indpred == NIL ?
			A2_PLAN_MIN_TUPLES : A2_PLAN_MIN_TUPLES / 10;

		if (index->tuples >= tuples)
			continue;
		index->tuples = tuples;
		index->pages = Max(index->pages,
						   (BlockNumber) (tuples / A2_PLAN_INDEX_TUPLES_PER_PAGE));
	}
}

void
a2_plan_floor_init(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = a2_planner;
	prev_rel_hook = a2_rel_hook;
	a2_rel_hook = a2_rel_size;
}
