/*-------------------------------------------------------------------------
 *
 * spi_plans.c
 *	  Prepared-once SPI statements and the extension-schema lookup.
 *
 *	  Every statement names everything it uses schema-qualified: relations
 *	  as @extschema@.a2_events, functions, operators (OPERATOR(pg_catalog.=))
 *	  and types as pg_catalog's.  So no search_path is pushed around an
 *	  operation: a caller's search_path cannot change what a2's statements
 *	  resolve to, and user code those statements fire (triggers on a2's
 *	  tables, RLS policy functions, column defaults) runs with the caller's
 *	  search_path, as it would for the caller's own INSERT (SPEC 7.2).
 *
 *	  The extension schema is read from pg_extension on first use and kept.
 *	  A relcache invalidation of a2_events (ANALYZE, VACUUM, DDL, DROP
 *	  EXTENSION) marks the cache stale; the next a2_spi_begin() looks the
 *	  schema up again.  Only when what the statements' text depends on
 *	  changed -- the schema's name, distributed mode, whether 0.2.0's
 *	  a2_retired_sessions exists -- is the generation bumped, so that each
 *	  statement re-prepares lazily.  Everything else (a new relation under
 *	  the same name, new statistics, a new index) is the plan cache's job:
 *	  a kept plan revalidates itself.
 *
 *	  Distributed mode: a statement with a session_param runs, for a
 *	  session the transaction pinned to a shard group of this node
 *	  (shard_pin.h), on that group's shard tables: its text with each table
 *	  named by its shard, a plain local statement with a generic plan, one
 *	  per statement and shard group (shard_plans, keyed like that).
 *
 *	  A plan being replaced may still be executing: a trigger on a2_events
 *	  can call a2 again while the outer a2 statement runs, and DDL in that
 *	  trigger can invalidate the cache.  Replaced plans are therefore never
 *	  freed on the spot; they wait in a list until the next top-level
 *	  pre-commit, when no a2 statement can be running in this backend.  The
 *	  invalidation callback itself only sets a flag.
 *
 * IDENTIFICATION
 *	  src/spi_plans.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_namespace.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "lib/stringinfo.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "clock.h"
#include "shard_pin.h"
#include "spi_plans.h"

static bool cache_valid = false;
static uint64 cache_generation = 0;
static char *schema_quoted = NULL;	/* in TopMemoryContext */
static Oid	events_relid = InvalidOid;
static Oid	schema_oid = InvalidOid;
static bool distributed = false;
static bool have_retired = false;	/* 0.2.0's a2_retired_sessions exists */
static bool have_not_before = false;	/* 0.3.0's a2_events.not_before exists */

/* plans replaced by a new generation, freed at the next pre-commit */
static List *retired_plans = NIL;	/* in TopMemoryContext */

/*
 * Distributed mode: the plans of session-keyed statements on the shards of
 * this node, one per statement and shard group (shard_pin.h).
 */
typedef struct ShardPlanKey
{
	A2Statement *stmt;
	int64		anchor;
} ShardPlanKey;

typedef struct ShardPlan
{
	ShardPlanKey key;
	SPIPlanPtr	plan;
	uint64		generation;
} ShardPlan;

static HTAB *shard_plans = NULL;

static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == events_relid)
		cache_valid = false;
}

/*
 * At top-level pre-commit no statement of ours runs in this backend, so the
 * plans replaced meanwhile can go.  (Aborted transactions leave them for a
 * later commit: freeing is not worth doing in an abort path.)
 */
static void
plans_xact_callback(XactEvent event, void *arg)
{
	List	   *plans;
	ListCell   *lc;

	if (retired_plans == NIL ||
		(event != XACT_EVENT_PRE_COMMIT && event != XACT_EVENT_PRE_PREPARE))
		return;
	plans = retired_plans;
	retired_plans = NIL;
	foreach(lc, plans)
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	list_free(plans);
}

void
a2_plans_init(void)
{
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
	RegisterXactCallback(plans_xact_callback, NULL);
}

/* The namespace the a2 extension was created in (PG15 has no public API). */
static Oid
extension_namespace(void)
{
	Oid			extoid = get_extension_oid("a2", true);
	Oid			nsp = InvalidOid;
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;

	if (!OidIsValid(extoid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("extension \"a2\" is not installed in this database"),
				 errhint("Run CREATE EXTENSION a2.")));

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_oid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(extoid));
	scan = systable_beginscan(rel, ExtensionOidIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	if (!OidIsValid(nsp))
		elog(ERROR, "could not find the schema of extension \"a2\"");
	return nsp;
}

/*
 * Is `relid` in Citus's pg_dist_partition?  A catalog scan rather than a
 * query, so it costs nothing on a server without Citus (no such table) and
 * runs outside SPI.
 */
static bool
citus_distributes(Oid relid)
{
	Oid			dist_partition = get_relname_relid("pg_dist_partition",
												   PG_CATALOG_NAMESPACE);
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	if (!OidIsValid(dist_partition) || !OidIsValid(relid))
		return false;
	rel = table_open(dist_partition, AccessShareLock);
	/* logicalrelid (a regclass) is its first column */
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

static void
refresh_cache(void)
{
	Oid			nsp = extension_namespace();
	char	   *nspname = get_namespace_name(nsp);
	const char *quoted;
	Oid			relid;
	bool		dist;
	bool		retired;
	bool		not_before;

	if (nspname == NULL)
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	quoted = quote_identifier(nspname);
	relid = get_relname_relid("a2_events", nsp);
	dist = citus_distributes(relid);
	retired = OidIsValid(get_relname_relid("a2_retired_sessions", nsp));
	not_before = OidIsValid(relid) &&
		get_attnum(relid, "not_before") != InvalidAttrNumber;

	/* a new generation only when the statements' text would change */
	if (schema_quoted == NULL || strcmp(schema_quoted, quoted) != 0 ||
		dist != distributed || retired != have_retired ||
		not_before != have_not_before)
	{
		if (schema_quoted)
			pfree(schema_quoted);
		schema_quoted = MemoryContextStrdup(TopMemoryContext, quoted);
		distributed = dist;
		have_retired = retired;
		have_not_before = not_before;
		cache_generation++;
	}
	events_relid = relid;
	schema_oid = nsp;
	cache_valid = true;
}

bool
a2_distributed(void)
{
	if (!cache_valid)
		refresh_cache();
	return distributed;
}

Oid
a2_relid(const char *relname)
{
	if (!cache_valid)
		refresh_cache();
	return get_relname_relid(relname, schema_oid);
}

MemoryContext
a2_spi_begin(void)
{
	MemoryContext caller = CurrentMemoryContext;

	a2_clock_check_override();
	if (!cache_valid)
		refresh_cache();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	return caller;
}

void
a2_spi_end(void)
{
	if (SPI_finish() != SPI_OK_FINISH)
		elog(ERROR, "SPI_finish failed");
}

static char *
replace_token(const char *sql, const char *token, const char *with)
{
	StringInfoData buf;
	const char *p = sql;
	const char *hit;
	size_t		toklen = strlen(token);

	initStringInfo(&buf);
	while ((hit = strstr(p, token)) != NULL)
	{
		appendBinaryStringInfo(&buf, p, hit - p);
		appendStringInfoString(&buf, with);
		p = hit + toklen;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

bool
a2_has_not_before(void)
{
	if (!cache_valid)
		refresh_cache();
	return have_not_before;
}

/*
 * Expand the conditional parts {{nb:THEN|ELSE}}: THEN when a2_events has
 * 0.3.0's not_before column, ELSE while the installed objects are still
 * 0.2.0's (a new library keeps serving a database until ALTER EXTENSION a2
 * UPDATE, which adds the column and so bumps the generation).
 */
static char *
expand_conditionals(const char *sql)
{
	StringInfoData buf;
	const char *p = sql;
	const char *hit;

	initStringInfo(&buf);
	while ((hit = strstr(p, A2_NB_OPEN)) != NULL)
	{
		const char *body = hit + strlen(A2_NB_OPEN);
		const char *bar = strchr(body, '|');
		const char *end = strstr(body, "}}");

		if (bar == NULL || end == NULL || bar > end)
			elog(ERROR, "malformed conditional in statement \"%s\"", sql);
		appendBinaryStringInfo(&buf, p, hit - p);
		if (have_not_before)
			appendBinaryStringInfo(&buf, body, bar - body);
		else
			appendBinaryStringInfo(&buf, bar + 1, end - bar - 1);
		p = end + 2;
	}
	appendStringInfoString(&buf, p);
	return buf.data;
}

/*
 * The statement text to prepare: @extschema@ becomes the extension's
 * schema, and @retired_last_index@ the high-water mark of a dropped session
 * (src/retire.c), read through the SECURITY DEFINER a2_retired_last_index()
 * so appenders need no grant on a2_retired_sessions -- or NULL while the installed objects are still 0.1.0's,
 * which have no such function: a new library must keep serving a database
 * until ALTER EXTENSION a2 UPDATE runs.  That update adds an index on
 * a2_events, whose relcache invalidation makes every statement re-prepare.
 * With `shards`, the text for that shard group (a2_shard_statement_text).
 */
static char *
expand_schema(const char *sql, const A2ShardSet *shards)
{
	char	   *with_mark = NULL;
	char	   *on_shards = NULL;
	char	   *conditional;
	char	   *out;

	if (strstr(sql, A2_RETIRED_MARK_TOKEN) != NULL)
	{
		/*
		 * On a shard the mark is read straight from the shard of
		 * a2_retired_sessions (in distributed mode a2_grant_worker grants
		 * SELECT on it): the function would plan its query through Citus.
		 */
		const char *mark = !have_retired ? "NULL::pg_catalog.int8" :
			shards == NULL ? "@extschema@.a2_retired_last_index($1)" :
			"(SELECT r.last_index FROM @extschema@.a2_retired_sessions r"
			"  WHERE r.session_id OPERATOR(pg_catalog.=) $1)";

		with_mark = replace_token(sql, A2_RETIRED_MARK_TOKEN, mark);
		sql = with_mark;
	}
	if (shards != NULL)
		sql = on_shards = a2_shard_statement_text(sql, shards);
	conditional = expand_conditionals(sql);
	out = replace_token(conditional, "@extschema@", schema_quoted);
	pfree(conditional);
	if (with_mark)
		pfree(with_mark);
	if (on_shards)
		pfree(on_shards);
	return out;
}

/* A plan being replaced may be executing in an outer call: free it at pre-commit. */
static void
retire_plan(SPIPlanPtr plan)
{
	MemoryContext old = MemoryContextSwitchTo(TopMemoryContext);

	retired_plans = lappend(retired_plans, plan);
	MemoryContextSwitchTo(old);
}

static SPIPlanPtr
keep_plan(const char *sql, A2Statement *stmt, int cursor_options)
{
	SPIPlanPtr	plan = SPI_prepare_cursor(sql, stmt->nargs, stmt->argtypes,
										  cursor_options);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

static SPIPlanPtr
prepare(A2Statement *stmt)
{
	char	   *sql;
	SPIPlanPtr	plan;

	if (stmt->plan != NULL && stmt->generation == cache_generation)
		return stmt->plan;
	if (stmt->plan != NULL)
	{
		retire_plan(stmt->plan);
		stmt->plan = NULL;
	}
	sql = expand_schema(distributed && stmt->dist_sql ? stmt->dist_sql : stmt->sql,
						NULL);

	/*
	 * Single node: always the generic plan.  Every statement is keyed by
	 * session and index, so parameter values never change the best plan,
	 * and a custom plan would mean planning on every call.  Distributed:
	 * a custom plan, because Citus routes a statement to its shard from the
	 * session_id value, which a generic plan does not have -- except for a
	 * statement that names only local relations (a shard, a catalog).
	 */
	plan = keep_plan(sql, stmt, distributed && !stmt->local_only ?
					 CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN);
	pfree(sql);
	stmt->plan = plan;
	stmt->generation = cache_generation;
	return plan;
}

/*
 * The statement's plan on the shards of `shards` (a session pinned to a
 * shard group of this node): its distributed text with each table named by
 * its shard, a plain local statement to PostgreSQL, so a generic plan.
 */
static SPIPlanPtr
prepare_on_shards(A2Statement *stmt, const A2ShardSet *shards)
{
	ShardPlanKey key;
	ShardPlan  *entry;
	bool		found;
	char	   *sql;

	if (shard_plans == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(ShardPlanKey);
		ctl.entrysize = sizeof(ShardPlan);
		ctl.hcxt = TopMemoryContext;
		shard_plans = hash_create("a2 shard plans", 256, &ctl,
								  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	memset(&key, 0, sizeof(key));
	key.stmt = stmt;
	key.anchor = shards->anchor;
	entry = hash_search(shard_plans, &key, HASH_ENTER, &found);
	if (!found)
		entry->plan = NULL;
	else if (entry->plan != NULL && entry->generation == cache_generation)
		return entry->plan;
	if (entry->plan != NULL)
	{
		retire_plan(entry->plan);
		entry->plan = NULL;
	}
	sql = expand_schema(stmt->dist_sql ? stmt->dist_sql : stmt->sql, shards);
	entry->plan = keep_plan(sql, stmt, CURSOR_OPT_GENERIC_PLAN);
	entry->generation = cache_generation;
	pfree(sql);
	return entry->plan;
}

void
a2_set_statement_text(A2Statement *stmt, const char *sql)
{
	if (stmt->sql != NULL && strcmp(stmt->sql, sql) == 0)
		return;
	/* only this function sets the text of such a statement: ours to free */
	if (stmt->sql != NULL)
		pfree(unconstify(char *, stmt->sql));
	stmt->sql = MemoryContextStrdup(TopMemoryContext, sql);
	stmt->generation = 0;		/* generations start at 1: re-prepared */
}

/*
 * Distributed mode: errors that only mean a session's shard moved while the
 * call ran.  A unique violation: a2's statements absorb every unique key
 * with ON CONFLICT but the primary key (session_id, idx), which only a lock
 * and an insert that met different copies of the shard can violate.  And
 * Citus refusing a statement that a call delegated to the shard's old node
 * would have to send elsewhere.  Nothing of the transaction commits.
 */
static bool
shard_moved_error(ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION ||
		(edata->sqlerrcode == ERRCODE_INTERNAL_ERROR && edata->message != NULL &&
		 strstr(edata->message, "cannot execute a distributed query from a query on a shard") != NULL);
}

/*
 * Run a statement; in distributed mode re-raise a shard-moved error as
 * 40001 (SPEC 7.6: a retryable SQLSTATE, never a raw 23505), anything else
 * as it was.
 */
static int
run_plan(A2Statement *stmt, Datum *values, const char *nulls, bool read_only,
		 Snapshot snapshot, Snapshot crosscheck)
{
	SPIPlanPtr	plan = NULL;

	if (distributed && stmt->session_param > 0 &&
		(nulls == NULL || nulls[stmt->session_param - 1] != 'n'))
	{
		const A2ShardSet *shards =
			a2_pinned_session_datum(values[stmt->session_param - 1]);

		if (shards != NULL)
			plan = prepare_on_shards(stmt, shards);
	}
	if (plan == NULL)
		plan = prepare(stmt);
	if (snapshot == InvalidSnapshot)
		return SPI_execute_plan(plan, values, nulls, read_only, 0);
	return SPI_execute_snapshot(plan, values, nulls, snapshot,
								crosscheck, read_only, true, 0);
}

static int
execute(A2Statement *stmt, Datum *values, const char *nulls, bool read_only,
		Snapshot snapshot, Snapshot crosscheck)
{
	MemoryContext context = CurrentMemoryContext;
	volatile int rc = 0;

	if (!distributed)
		return run_plan(stmt, values, nulls, read_only, snapshot, crosscheck);
	PG_TRY();
	{
		rc = run_plan(stmt, values, nulls, read_only, snapshot, crosscheck);
	}
	PG_CATCH();
	{
		ErrorData  *edata;

		MemoryContextSwitchTo(context);
		edata = CopyErrorData();
		if (!shard_moved_error(edata))
			PG_RE_THROW();
		FlushErrorState();
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("a session's shard moved during the call"),
				 errdetail("%s", edata->message),
				 errhint("Nothing of the transaction is written; retry it, appends with the same event ids.")));
	}
	PG_END_TRY();
	return rc;
}

uint64
a2_exec(A2Statement *stmt, Datum *values, const char *nulls,
		bool read_only, int expected)
{
	int			rc;

	rc = execute(stmt, values, nulls, read_only, InvalidSnapshot, InvalidSnapshot);
	if (rc != expected)
		elog(ERROR, "SPI_execute_plan returned %s, expected %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return SPI_processed;
}

/*
 * Like a2_exec, but under REPEATABLE READ or SERIALIZABLE the statement
 * reads with the latest committed snapshot instead of the transaction's.
 * Only for statements run under the session lock: every writer of the
 * session's rows holds that lock, so the latest snapshot is exactly the
 * state the lock serializes us after.  Without this an append that waited
 * for the lock would compute max(idx) from a stale snapshot, and a
 * completion would miss pins recorded just before it.
 *
 * As RI triggers do, the transaction snapshot is the crosscheck: an UPDATE
 * or DELETE of a row version the transaction snapshot cannot see (changed
 * since it was taken) fails with 40001 instead of writing it.  Otherwise
 * the transaction would see both the old version (through its own
 * snapshot) and its new one: the isolation matrix caught a REPEATABLE READ
 * claim whose event a2_read_state then returned twice.
 */
uint64
a2_exec_latest(A2Statement *stmt, Datum *values, const char *nulls,
			   int expected)
{
	int			rc;

	if (!IsolationUsesXactSnapshot())
		return a2_exec(stmt, values, nulls, false, expected);
	rc = execute(stmt, values, nulls, false, GetLatestSnapshot(),
				 GetTransactionSnapshot());
	if (rc != expected)
		elog(ERROR, "SPI_execute_snapshot returned %s, expected %s",
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return SPI_processed;
}

Datum
a2_col(uint64 row, int col, bool *isnull)
{
	return SPI_getbinval(SPI_tuptable->vals[row], SPI_tuptable->tupdesc,
						 col, isnull);
}

int64
a2_col_int64(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	if (isnull)
		elog(ERROR, "unexpected null in column %d", col);
	switch (SPI_gettypeid(SPI_tuptable->tupdesc, col))
	{
		case INT4OID:
			return DatumGetInt32(d);
		case INT8OID:
			return DatumGetInt64(d);
		default:
			elog(ERROR, "column %d is not an integer", col);
	}
	return 0;					/* keep compiler quiet */
}

char *
a2_col_text(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	return isnull ? NULL : TextDatumGetCString(d);
}

bool
a2_col_bool(uint64 row, int col)
{
	bool		isnull;
	Datum		d = a2_col(row, col, &isnull);

	return !isnull && DatumGetBool(d);
}

static Datum
build_array(Datum *values, bool *nulls, int count, Oid elemtype,
			int16 typlen, bool byval, char align)
{
	int			dims[1] = {count};
	int			lbs[1] = {1};

	return PointerGetDatum(construct_md_array(values, nulls, 1, dims, lbs,
											  elemtype, typlen, byval, align));
}

Datum
a2_text_array(char **values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));
	bool	   *n = palloc(sizeof(bool) * Max(count, 1));

	for (int i = 0; i < count; i++)
	{
		n[i] = values[i] == NULL;
		d[i] = n[i] ? (Datum) 0 : CStringGetTextDatum(values[i]);
	}
	return build_array(d, n, count, TEXTOID, -1, false, TYPALIGN_INT);
}

Datum
a2_jsonb_array(Jsonb **values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));
	bool	   *n = palloc(sizeof(bool) * Max(count, 1));

	for (int i = 0; i < count; i++)
	{
		n[i] = values[i] == NULL;
		d[i] = n[i] ? (Datum) 0 : JsonbPGetDatum(values[i]);
	}
	return build_array(d, n, count, JSONBOID, -1, false, TYPALIGN_INT);
}

Datum
a2_int8_array(int64 *values, bool *nulls, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		d[i] = Int64GetDatum(values[i]);
	return build_array(d, nulls, count, INT8OID, 8, FLOAT8PASSBYVAL, TYPALIGN_DOUBLE);
}

Datum
a2_bool_array(bool *values, int count)
{
	Datum	   *d = palloc(sizeof(Datum) * Max(count, 1));

	for (int i = 0; i < count; i++)
		d[i] = BoolGetDatum(values[i]);
	return build_array(d, NULL, count, BOOLOID, 1, true, TYPALIGN_CHAR);
}
