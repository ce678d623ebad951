/*-------------------------------------------------------------------------
 *
 * statements.c
 *	  Prepared-once statements (statements.h): choosing the text, keeping
 *	  the plans, binding and executing, and a2_statements().
 *
 *	  Every statement names everything it uses schema-qualified: relations
 *	  as @extschema@.a2_events, functions, operators (OPERATOR(pg_catalog.=))
 *	  and types as pg_catalog's.  So no search_path is pushed around an
 *	  operation: a caller's search_path cannot change what a2's statements
 *	  resolve to, and user code those statements fire (triggers on a2's
 *	  tables, RLS policy functions, column defaults) runs with the caller's
 *	  search_path, as it would for the caller's own INSERT
 *	  (docs/semantics.md, "Transactions, isolation and re-entrancy").
 *
 *	  A plan is prepared on first use and kept for the generation of
 *	  extension.h it was made in.  A plan being replaced may still be
 *	  executing: a trigger on a2_events can call a2 again while the outer
 *	  a2 statement runs, and DDL in that trigger can invalidate the cache.
 *	  Replaced plans are therefore never freed on the spot; they wait in a
 *	  list until the next top-level pre-commit, when no a2 statement can be
 *	  running in this backend.
 *
 *	  Every generic plan of an a2 statement is made as for a table in use
 *	  (see "Plans as for a table in use" below): a relation the statistics
 *	  call smaller than A2_PLAN_MIN_TUPLES rows is planned as that large, so
 *	  a statement first planned on a new, empty a2_events keeps the index
 *	  plans it will need, instead of a sequential scan kept until the next
 *	  ANALYZE.  Two planner hooks do it, whenever PostgreSQL plans the
 *	  statement: its first execution, and every re-plan after an
 *	  invalidation, however late.
 *
 * IDENTIFICATION
 *	  src/statements.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/plancache.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "a2.h"
#include "citus/citus_shards.h"
#include "plan_floor.h"
#include "statement_groups.h"
#include "statements.h"

/* plans replaced by a new generation, freed at the next pre-commit */
static List *retired_plans = NIL;	/* in TopMemoryContext */

/*
 * Distributed mode: the plans of session-keyed statements on the shards of
 * this node, one per statement and shard group (citus/citus_shards.h).
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

static const char *const mode_names[A2_MODE_COUNT] = {
	"single", "routed", "local", "shard"
};

/* The name of one mode bit. */
static const char *
mode_name(int mode)
{
	for (int m = 0; m < A2_MODE_COUNT; m++)
		if (mode == (1 << m))
			return mode_names[m];
	return "?";
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
	{
		a2_plan_floor_track((SPIPlanPtr) lfirst(lc), false, false, NULL);
		SPI_freeplan((SPIPlanPtr) lfirst(lc));
	}
	list_free(plans);
}

void
a2_statements_init(void)
{
	for (int g = 0; a2_statement_groups[g] != NULL; g++)
		for (A2Statement *const *s = a2_statement_groups[g]; *s != NULL; s++)
			(*s)->registered = true;
	RegisterXactCallback(plans_xact_callback, NULL);
}

/* ---------------------------------------------------------------------
 * Texts
 * ---------------------------------------------------------------------
 */

/* The text of `stmt` for `mode` (one bit) and the installed objects. */
static const char *
text_for(const A2Statement *stmt, int mode, A2Objects objects)
{
	const A2Text *best = NULL;

	for (int i = 0; i < A2_MAX_TEXTS && stmt->texts[i].sql != NULL; i++)
	{
		const A2Text *t = &stmt->texts[i];

		if ((t->modes & mode) && t->since <= objects &&
			(best == NULL || t->since > best->since))
			best = t;
	}
	return best ? best->sql : NULL;
}

static bool
has_mode(const A2Statement *stmt, int mode)
{
	for (int i = 0; i < A2_MAX_TEXTS && stmt->texts[i].sql != NULL; i++)
		if (stmt->texts[i].modes & mode)
			return true;
	return false;
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

/* The set of $N a text uses (bit N-1); an $N beyond the limit is an error. */
static uint32
placeholders_of(const A2Statement *stmt, const char *sql)
{
	uint32		seen = 0;

	for (const char *p = sql; *p; p++)
	{
		int			n = 0;

		if (*p != '$' || !isdigit((unsigned char) p[1]))
			continue;
		while (isdigit((unsigned char) p[1]))
			n = n * 10 + (*++p - '0');
		if (n < 1 || n > A2_MAX_STMT_ARGS)
			elog(ERROR, "statement \"%s\" uses $%d", stmt->name, n);
		seen |= (uint32) 1 << (n - 1);
	}
	return seen;
}

/*
 * Placeholders and declaration in step: no text uses an undeclared $N, and
 * every declared parameter is used by some text (a mode may need fewer: a
 * single-node text can do without the session id that routes the Citus
 * one).  Checked when the statement is prepared, whatever its mode.
 */
static void
check_placeholders(const A2Statement *stmt, const char *sql)
{
	uint32		declared = ((uint32) 1 << stmt->nparams) - 1;
	uint32		used = 0;

	if (placeholders_of(stmt, sql) & ~declared)
		elog(ERROR, "statement \"%s\" uses a parameter beyond the %d it declares",
			 stmt->name, stmt->nparams);
	if (stmt->dynamic)
		used = placeholders_of(stmt, sql);
	for (int i = 0; i < A2_MAX_TEXTS && stmt->texts[i].sql != NULL; i++)
		used |= placeholders_of(stmt, stmt->texts[i].sql);
	if (used != declared)
		elog(ERROR, "statement \"%s\" declares %d parameters but its texts do not use them all",
			 stmt->name, stmt->nparams);
}

/* The text to prepare: @extschema@ resolved, on `shards` when given. */
static char *
expand(const A2Statement *stmt, const char *sql, const A2ShardSet *shards)
{
	char	   *on_shards = NULL;
	char	   *out;

	check_placeholders(stmt, sql);
	if (shards != NULL)
		sql = on_shards = a2_shard_statement_text(sql, shards);
	out = replace_token(sql, "@extschema@", a2_extension_schema());
	if (on_shards)
		pfree(on_shards);
	return out;
}

/* ---------------------------------------------------------------------
 * Plans
 * ---------------------------------------------------------------------
 */

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
	Oid			argtypes[A2_MAX_STMT_ARGS];
	SPIPlanPtr	plan;

	for (int i = 0; i < stmt->nparams; i++)
		argtypes[i] = stmt->params[i].type;
	plan = SPI_prepare_cursor(sql, stmt->nparams, argtypes, cursor_options);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare_cursor failed for statement \"%s\" (\"%s\"): %s",
			 stmt->name, sql, SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	if (cursor_options & CURSOR_OPT_GENERIC_PLAN)
		a2_plan_floor_track(plan, true, stmt->walk_keys,
							a2_installed_objects() >= stmt->index_since ? stmt->index : NULL);
	stmt->columns_checked = false;
	return plan;
}

static const char *
require_text(A2Statement *stmt, int mode)
{
	const char *sql;

	if (stmt->dynamic)
		sql = stmt->dynamic_sql;
	else
		sql = text_for(stmt, mode, a2_installed_objects());
	if (sql == NULL)
		elog(ERROR, "statement \"%s\" has no %s text for a2 objects %s",
			 stmt->name, mode_name(mode),
			 a2_objects_name(a2_installed_objects()));
	return sql;
}

static SPIPlanPtr
prepare(A2Statement *stmt)
{
	uint64		generation = a2_extension_generation();
	int			mode;
	char	   *sql;

	if (stmt->plan != NULL && stmt->generation == generation)
		return stmt->plan;
	if (!stmt->registered)
		elog(ERROR, "statement \"%s\" is not in the registry (statement_groups.h)",
			 stmt->name);
	if (stmt->plan != NULL)
	{
		retire_plan(stmt->plan);
		stmt->plan = NULL;
	}
	if (!a2_distributed())
		mode = A2_SINGLE;
	else
		mode = has_mode(stmt, A2_LOCAL) ? A2_LOCAL : A2_ROUTED;
	sql = expand(stmt, require_text(stmt, mode), NULL);

	/*
	 * A generic plan except through Citus: every statement is keyed by
	 * session and index, so parameter values never change the best plan,
	 * and a custom plan would mean planning on every call.  Citus routes a
	 * statement to its shard from the session_id value, which a generic
	 * plan does not have.
	 */
	stmt->plan = keep_plan(sql, stmt, mode == A2_ROUTED ?
						   CURSOR_OPT_CUSTOM_PLAN : CURSOR_OPT_GENERIC_PLAN);
	stmt->generation = generation;
	pfree(sql);
	return stmt->plan;
}

/*
 * The statement's plan on the shards of `shards` (a session pinned to a
 * shard group of this node): its shard text with each table named by its
 * shard, a plain local statement, so a generic plan.
 */
static SPIPlanPtr
prepare_on_shards(A2Statement *stmt, const A2ShardSet *shards)
{
	uint64		generation = a2_extension_generation();
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
	else if (entry->plan != NULL && entry->generation == generation)
		return entry->plan;
	if (entry->plan != NULL)
	{
		retire_plan(entry->plan);
		entry->plan = NULL;
	}
	sql = expand(stmt, require_text(stmt, A2_SHARD), shards);
	entry->plan = keep_plan(sql, stmt, CURSOR_OPT_GENERIC_PLAN);
	entry->generation = generation;
	pfree(sql);
	return entry->plan;
}

void
a2_set_statement_text(A2Statement *stmt, const char *sql)
{
	Assert(stmt->dynamic);
	if (stmt->dynamic_sql != NULL && strcmp(stmt->dynamic_sql, sql) == 0)
		return;
	/* only this function sets the text of such a statement: ours to free */
	if (stmt->dynamic_sql != NULL)
		pfree(unconstify(char *, stmt->dynamic_sql));
	stmt->dynamic_sql = MemoryContextStrdup(TopMemoryContext, sql);
	stmt->generation = 0;		/* generations start at 1: re-prepared */
}

/* ---------------------------------------------------------------------
 * Arguments
 * ---------------------------------------------------------------------
 */

void
a2_args_init(A2Args *args, const A2Statement *stmt)
{
	args->stmt = stmt;
	args->bound = 0;
	memset(args->nulls, ' ', A2_MAX_STMT_ARGS);
	args->nulls[A2_MAX_STMT_ARGS] = '\0';
}

/* Set parameter `param` (1-based), checked to exist, and mark it bound. */
static void
set_param(A2Args *args, int param, Datum value, bool isnull)
{
	const A2Statement *stmt = args->stmt;

	if (param < 1 || param > stmt->nparams)
		elog(ERROR, "statement \"%s\" has no parameter $%d", stmt->name, param);
	args->values[param - 1] = value;
	args->nulls[param - 1] = isnull ? 'n' : ' ';
	args->bound |= (uint32) 1 << (param - 1);
}

void
a2_bind(A2Args *args, int param, Oid type, Datum value)
{
	const A2Statement *stmt = args->stmt;

	set_param(args, param, value, false);
	if (stmt->params[param - 1].type != type)
		elog(ERROR, "parameter $%d (%s) of statement \"%s\" is declared as type %u, bound as %u",
			 param, stmt->params[param - 1].name, stmt->name,
			 stmt->params[param - 1].type, type);
}

void
a2_bind_null(A2Args *args, int param)
{
	set_param(args, param, (Datum) 0, true);
}

void
a2_bind_text(A2Args *args, int param, const char *value)
{
	if (value == NULL)
		a2_bind_null(args, param);
	else
		a2_bind(args, param, TEXTOID, CStringGetTextDatum(value));
}

void
a2_bind_int8(A2Args *args, int param, int64 value)
{
	a2_bind(args, param, INT8OID, Int64GetDatum(value));
}

void
a2_bind_int4(A2Args *args, int param, int32 value)
{
	a2_bind(args, param, INT4OID, Int32GetDatum(value));
}

void
a2_bind_bool(A2Args *args, int param, bool value)
{
	a2_bind(args, param, BOOLOID, BoolGetDatum(value));
}

/* ---------------------------------------------------------------------
 * Execution
 * ---------------------------------------------------------------------
 */

/*
 * Distributed mode: errors that only mean a session's shard moved while the
 * call ran.  A unique violation: a2's statements absorb every unique key
 * with ON CONFLICT but the primary key (session_id, idx), which only a lock
 * and an insert that met different copies of the shard can violate.  And
 * Citus refusing a statement that a call delegated to the shard's old node
 * would have to send elsewhere.  Nothing of the transaction commits.  The
 * one place a2 matches a Citus error.
 */
static bool
shard_moved_error(ErrorData *edata)
{
	return edata->sqlerrcode == ERRCODE_UNIQUE_VIOLATION ||
		(edata->sqlerrcode == ERRCODE_INTERNAL_ERROR && edata->message != NULL &&
		 strstr(edata->message, "cannot execute a distributed query from a query on a shard") != NULL);
}

/* The declared result columns are the statement's, checked once per plan. */
static void
check_columns(A2Statement *stmt)
{
	TupleDesc	desc;
	int			n = 0;

	if (stmt->columns == NULL || stmt->columns_checked || SPI_tuptable == NULL)
		return;
	desc = SPI_tuptable->tupdesc;
	for (; stmt->columns[n] != NULL; n++)
	{
		const char *got = n < desc->natts ? SPI_fname(desc, n + 1) : "(none)";

		if (strcmp(got, stmt->columns[n]) != 0)
			elog(ERROR, "column %d of statement \"%s\" is \"%s\", declared \"%s\"",
				 n + 1, stmt->name, got, stmt->columns[n]);
	}
	if (n != desc->natts)
		elog(ERROR, "statement \"%s\" returns %d columns, declares %d",
			 stmt->name, desc->natts, n);
	stmt->columns_checked = true;
}

static int
run_plan(A2Args *args, bool read_only, Snapshot snapshot, Snapshot crosscheck)
{
	A2Statement *stmt = unconstify(A2Statement *, args->stmt);
	SPIPlanPtr	plan = NULL;
	int			sp = stmt->session_param;

	if (args->bound != ((uint32) 1 << stmt->nparams) - 1)
		elog(ERROR, "statement \"%s\" executed with unbound parameters", stmt->name);
	if (sp > 0 && args->nulls[sp - 1] != 'n' && a2_distributed() &&
		has_mode(stmt, A2_SHARD))
	{
		const A2ShardSet *shards = a2_pinned_session_datum(args->values[sp - 1]);

		if (shards != NULL)
			plan = prepare_on_shards(stmt, shards);
	}
	if (plan == NULL)
		plan = prepare(stmt);
	if (snapshot == InvalidSnapshot)
		return SPI_execute_plan(plan, args->values, args->nulls, read_only, 0);
	return SPI_execute_snapshot(plan, args->values, args->nulls, snapshot,
								crosscheck, read_only, true, 0);
}

/*
 * Run a statement; in distributed mode re-raise a shard-moved error as
 * 40001 (a retryable SQLSTATE, never a raw 23505: docs/errors.md),
 * anything else as it was.
 */
static int
execute(A2Args *args, bool read_only, Snapshot snapshot, Snapshot crosscheck)
{
	MemoryContext context = CurrentMemoryContext;
	volatile int rc = 0;

	if (!a2_distributed())
		rc = run_plan(args, read_only, snapshot, crosscheck);
	else
	{
		PG_TRY();
		{
			rc = run_plan(args, read_only, snapshot, crosscheck);
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
	}
	check_columns(unconstify(A2Statement *, args->stmt));
	return rc;
}

uint64
a2_exec(A2Args *args, bool read_only, int expected)
{
	int			rc = execute(args, read_only, InvalidSnapshot, InvalidSnapshot);

	if (rc != expected)
		elog(ERROR, "statement \"%s\" returned %s, expected %s", args->stmt->name,
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
 * snapshot) and its new one.
 */
uint64
a2_exec_latest(A2Args *args, int expected)
{
	int			rc;

	if (!IsolationUsesXactSnapshot())
		return a2_exec(args, false, expected);
	rc = execute(args, false, GetLatestSnapshot(), GetTransactionSnapshot());
	if (rc != expected)
		elog(ERROR, "statement \"%s\" returned %s, expected %s", args->stmt->name,
			 SPI_result_code_string(rc), SPI_result_code_string(expected));
	return SPI_processed;
}

/* ---------------------------------------------------------------------
 * a2_statements(): every text, expanded
 * ---------------------------------------------------------------------
 */

static char *
params_text(const A2Statement *stmt)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (int i = 0; i < stmt->nparams; i++)
		appendStringInfo(&buf, "%s$%d %s %s", i ? ", " : "", i + 1,
						 stmt->params[i].name,
						 format_type_be(stmt->params[i].type));
	return buf.data;
}

/* A shard group with made-up shard ids, to show shard texts. */
static const A2ShardSet *
sample_shards(void)
{
	static char *names[] = {
		"a2_events", "a2_snapshots", "a2_snapshot_history", "a2_snapshot_pins",
		"a2_session_locks", "a2_retired_sessions"
	};
	static int64 ids[] = {102008, 102040, 102072, 102104, 102136, 102168};
	static A2ShardSet set = {102008, lengthof(names), names, ids};

	return &set;
}

PG_FUNCTION_INFO_V1(a2_statements);

Datum
a2_statements(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;

	InitMaterializedSRF(fcinfo, 0);
	a2_extension_refresh();
	for (int g = 0; a2_statement_groups[g] != NULL; g++)
	{
		for (A2Statement *const *s = a2_statement_groups[g]; *s != NULL; s++)
		{
			const A2Statement *stmt = *s;
			char	   *params = params_text(stmt);

			for (int i = 0; i < A2_MAX_TEXTS && stmt->texts[i].sql != NULL; i++)
			{
				const A2Text *t = &stmt->texts[i];

				for (int m = 0; m < A2_MODE_COUNT; m++)
				{
					Datum		values[5];
					bool		nulls[5] = {false};

					if (!(t->modes & (1 << m)))
						continue;
					values[0] = CStringGetTextDatum(stmt->name);
					values[1] = CStringGetTextDatum(stmt->dynamic ?
													psprintf("%s (sample: built at run time)", mode_names[m]) :
													mode_names[m]);
					values[2] = CStringGetTextDatum(a2_objects_name(t->since));
					values[3] = CStringGetTextDatum(params);
					values[4] = CStringGetTextDatum(expand(stmt, t->sql,
														   (1 << m) == A2_SHARD ? sample_shards() : NULL));
					tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc,
										 values, nulls);
				}
			}
		}
	}
	return (Datum) 0;
}
