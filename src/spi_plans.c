/*-------------------------------------------------------------------------
 *
 * spi_plans.c
 *	  Prepared-once SPI statements, the extension-schema lookup, and the
 *	  search_path fence every operation runs under.
 *
 *	  The extension schema is read from pg_extension on first use and kept.
 *	  A relcache invalidation of a2_events (DROP EXTENSION drops it) marks
 *	  the cache stale; the next a2_spi_begin() looks the schema up again and
 *	  bumps a generation counter, so each statement re-prepares lazily.  The
 *	  callback only sets a flag: it may run while a plan is executing, so it
 *	  must not free anything.
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
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"

#include "spi_plans.h"

static bool cache_valid = false;
static uint64 cache_generation = 0;
static char *schema_quoted = NULL;	/* in TopMemoryContext */
static Oid	events_relid = InvalidOid;
static Oid	schema_oid = InvalidOid;
static bool distributed = false;

static void
relcache_callback(Datum arg, Oid relid)
{
	if (relid == InvalidOid || relid == events_relid)
		cache_valid = false;
}

void
a2_plans_init(void)
{
	CacheRegisterRelcacheCallback(relcache_callback, (Datum) 0);
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

	if (nspname == NULL)
		elog(ERROR, "cache lookup failed for namespace %u", nsp);
	if (schema_quoted)
		pfree(schema_quoted);
	schema_quoted = MemoryContextStrdup(TopMemoryContext,
										quote_identifier(nspname));
	events_relid = get_relname_relid("a2_events", nsp);
	distributed = citus_distributes(events_relid);
	schema_oid = nsp;
	cache_generation++;
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
	OverrideSearchPath path;

	if (!cache_valid)
		refresh_cache();
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/*
	 * pg_catalog alone: operators, functions and types resolve there, and
	 * our relations are schema-qualified.  Transaction abort pops it.
	 */
	path.schemas = NIL;
	path.addCatalog = true;
	path.addTemp = false;
	PushOverrideSearchPath(&path);
	return caller;
}

void
a2_spi_end(void)
{
	PopOverrideSearchPath();
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

/*
 * The statement text to prepare: @extschema@ becomes the extension's
 * schema, and @retired_last_index@ the high-water mark of a dropped session
 * (src/retire.c), read through the SECURITY DEFINER a2_retired_last_index()
 * so appenders need no grant on a2_retired_sessions -- or NULL while the installed objects are still 0.1.0's,
 * which have no such function: a new library must keep serving a database
 * until ALTER EXTENSION a2 UPDATE runs.  That update adds an index on
 * a2_events, whose relcache invalidation makes every statement re-prepare.
 */
static char *
expand_schema(const char *sql)
{
	char	   *with_mark = NULL;
	char	   *out;

	if (strstr(sql, A2_RETIRED_MARK_TOKEN) != NULL)
	{
		bool		have = OidIsValid(get_relname_relid("a2_retired_sessions", schema_oid));

		with_mark = replace_token(sql, A2_RETIRED_MARK_TOKEN,
								  have ? "@extschema@.a2_retired_last_index($1)" : "NULL::bigint");
		sql = with_mark;
	}
	out = replace_token(sql, "@extschema@", schema_quoted);
	if (with_mark)
		pfree(with_mark);
	return out;
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
		SPI_freeplan(stmt->plan);
		stmt->plan = NULL;
	}
	sql = expand_schema(distributed && stmt->dist_sql ? stmt->dist_sql : stmt->sql);

	/*
	 * Single node: always the generic plan.  Every statement is keyed by
	 * session and index, so parameter values never change the best plan,
	 * and a custom plan would mean planning on every call.  Distributed:
	 * always a custom plan, because Citus routes a statement to its shard
	 * from the session_id value, which a generic plan does not have.
	 */
	plan = SPI_prepare_cursor(sql, stmt->nargs, stmt->argtypes,
							  distributed ? CURSOR_OPT_CUSTOM_PLAN :
							  CURSOR_OPT_GENERIC_PLAN);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed for \"%s\": %s",
			 sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	pfree(sql);
	stmt->plan = plan;
	stmt->generation = cache_generation;
	return plan;
}

uint64
a2_exec(A2Statement *stmt, Datum *values, const char *nulls,
		bool read_only, int expected)
{
	int			rc;

	rc = SPI_execute_plan(prepare(stmt), values, nulls, read_only, 0);
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
 * state the lock serializes us after.  (RI triggers read the same way.)
 * Without this an append that waited for the lock would compute max(idx)
 * from a stale snapshot, and a completion would miss pins recorded just
 * before it.
 */
uint64
a2_exec_latest(A2Statement *stmt, Datum *values, const char *nulls,
			   int expected)
{
	int			rc;

	if (!IsolationUsesXactSnapshot())
		return a2_exec(stmt, values, nulls, false, expected);
	rc = SPI_execute_snapshot(prepare(stmt), values, nulls,
							  GetLatestSnapshot(), InvalidSnapshot,
							  false, true, 0);
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
