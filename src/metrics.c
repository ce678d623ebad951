/*-------------------------------------------------------------------------
 *
 * metrics.c
 *	  a2_metrics(): gauges of the dispatch state, one row.
 *
 *	  Exact (as of the caller's snapshot and the store clock): sessions
 *	  with eligible work, eligible events (what a claim would take now,
 *	  expired leases included), leased events (lease still running),
 *	  expired leases not yet reclaimed, dead letters, events waiting behind
 *	  their lane, and the oldest eligible event's createdAt and age.  All
 *	  come from one pass over the rows with processed_at IS NULL, which the
 *	  a2_events_unprocessed partial index finds without touching processed
 *	  rows.  Cancelled events (0.4.0) are finished rows, so they are not in
 *	  that pass: they are counted apart, through the partial index
 *	  a2_events_cancelled, which holds nothing else.
 *
 *	  From 0.4.0's objects on, also the recurring schedules (a2_schedules):
 *	  how many, the next tick of an active one and the last tick fired;
 *	  and the dispatch controls (docs/semantics.md, "Queues, priorities and
 *	  limits"): the unprocessed events per queue (from the same pass while
 *	  all are in the default queue, else from a second one grouped by
 *	  queue), the paused queues (a2_queues) and the concurrency keys at
 *	  their limit (a2_limits, counted as a2_list_limits() counts them).
 *
 *	  A pass reads each heap page that holds unprocessed rows once: the
 *	  function runs with enable_indexscan off as well as enable_seqscan off
 *	  (37-metrics.sql), so the planner takes a bitmap scan of
 *	  a2_events_unprocessed whatever the table's statistics say.  An index
 *	  scan walks the rows in (session_id, idx) order and pins a heap page
 *	  per row (bench/RESULTS.md, "Dashboard (issue 29)").
 *
 *	  Estimates (pg_stat_* for a2_events, as of the last statistics
 *	  flush): live and dead row versions, and rows inserted since the
 *	  statistics were last reset (rolled-back appends count too).  a2 keeps
 *	  no counters of its own, so there is no "completed" counter.
 *
 *	  The function is SECURITY DEFINER (see the install script), so a
 *	  monitoring role needs EXECUTE on it but no access to the events.
 *
 * IDENTIFICATION
 *	  src/metrics.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_type.h"
#include "fmgr.h"
#include "funcapi.h"

#include "a2.h"
#include "call.h"
#include "clock.h"
#include "metrics.h"
#include "spi_util.h"
#include "statements.h"

PG_FUNCTION_INFO_V1(a2_metrics);

/*
 * 0.3.0 adds scheduled_events and earliest_due_at after the 0.2.0 columns.
 */
#define METRIC_COLUMNS_V2 12
#define METRIC_COLUMNS_V3 14

/*
 * 0.4.0 adds, after those: schedules, next_tick_at, last_tick_at
 * (a2_schedules), cancelled_events, paused_queues, keys_at_limit and
 * queues, in this order.
 */
enum
{
	COL_SCHEDULES = METRIC_COLUMNS_V3,
	COL_NEXT_TICK_AT,
	COL_LAST_TICK_AT,
	COL_CANCELLED_EVENTS,
	COL_PAUSED_QUEUES,
	COL_KEYS_AT_LIMIT,
	COL_QUEUES,
	METRIC_COLUMNS
};

/* $1 now (epoch ms), $2 a2_events' OID */
/*
 * One row, the columns of a2_metrics() in its order (0.2.0's declaration
 * has the first METRIC_COLUMNS_V2).  Objects older than 0.3.0 have no
 * not_before: nothing is scheduled.
 */
#define GAUGES_SQL(not_before) \
	"SELECT pg_catalog.count(DISTINCT u.session_id) FILTER (WHERE u.eligible) AS sessions_with_eligible_work," \
	"       pg_catalog.count(*) FILTER (WHERE u.eligible) AS eligible_events," \
	"       pg_catalog.count(*) FILTER (WHERE u.leased) AS leased_events," \
	"       pg_catalog.count(*) FILTER (WHERE u.eligible AND u.claim_expires_at IS NOT NULL) AS expired_leases," \
	"       pg_catalog.count(*) FILTER (WHERE u.failed_at IS NOT NULL) AS dead_letters," \
	"       pg_catalog.count(*) FILTER (WHERE NOT u.lane_ready AND u.failed_at IS NULL) AS lane_waiting_events," \
	"       pg_catalog.to_timestamp(pg_catalog.min(u.created_at) FILTER (WHERE u.eligible)" \
	"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS oldest_eligible_created_at," \
	"       $1 OPERATOR(pg_catalog.-) pg_catalog.min(u.created_at) FILTER (WHERE u.eligible) AS oldest_eligible_age_ms," \
	"       pg_catalog.pg_stat_get_live_tuples($2) AS events_estimate," \
	"       pg_catalog.pg_stat_get_dead_tuples($2) AS dead_rows_estimate," \
	"       pg_catalog.pg_stat_get_tuples_inserted($2) AS events_inserted_estimate," \
	"       pg_catalog.to_timestamp($1 OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS measured_at," \
	"       pg_catalog.count(*) FILTER (WHERE u.scheduled) AS scheduled_events," \
	"       pg_catalog.to_timestamp(pg_catalog.min(u.not_before) FILTER (WHERE u.scheduled)" \
	"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS earliest_due_at" \
	"  FROM (SELECT e.session_id, e.created_at, e.failed_at, e.lane_ready," \
	"               e.claim_expires_at, x.not_before," \
	"               e.lane_ready AND e.failed_at IS NULL" \
	"                 AND (e.claim_expires_at IS NULL OR e.claim_expires_at OPERATOR(pg_catalog.<=) $1)" \
	"                 AND (x.not_before IS NULL OR x.not_before OPERATOR(pg_catalog.<=) $1) AS eligible," \
	"               e.failed_at IS NULL AND e.claim_expires_at OPERATOR(pg_catalog.>) $1 AS leased," \
	"               e.failed_at IS NULL AND x.not_before OPERATOR(pg_catalog.>) $1 AS scheduled" \
	"          FROM @extschema@.a2_events e" \
	"         CROSS JOIN LATERAL (SELECT " not_before " AS not_before) x" \
	"         WHERE e.processed_at IS NULL) u"

static A2Statement gauges = {
	.name = "metrics.gauges",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_1, GAUGES_SQL("NULL::pg_catalog.int8")),
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_3, GAUGES_SQL("e.not_before")),
	},
	.nparams = 2, .params = {A2_PARAM("now", INT8OID), A2_PARAM("a2_events", OIDOID)},
	.columns = A2_COLUMNS("sessions_with_eligible_work", "eligible_events", "leased_events", "expired_leases", "dead_letters", "lane_waiting_events", "oldest_eligible_created_at", "oldest_eligible_age_ms", "events_estimate", "dead_rows_estimate", "events_inserted_estimate", "measured_at", "scheduled_events", "earliest_due_at")
};

/* The unprocessed rows, $1 now: what each gauge counts, and `queue` */
#define UNPROCESSED_ROWS(queue) \
	"SELECT e.session_id, " queue " AS queue, e.created_at, e.failed_at," \
	"       e.lane_ready, e.claim_expires_at, e.not_before," \
	"       e.lane_ready AND e.failed_at IS NULL" \
	"         AND (e.claim_expires_at IS NULL OR e.claim_expires_at OPERATOR(pg_catalog.<=) $1)" \
	"         AND (e.not_before IS NULL OR e.not_before OPERATOR(pg_catalog.<=) $1) AS eligible," \
	"       e.failed_at IS NULL AND e.claim_expires_at OPERATOR(pg_catalog.>) $1 AS leased," \
	"       e.failed_at IS NULL AND e.not_before OPERATOR(pg_catalog.>) $1 AS scheduled" \
	"  FROM @extschema@.a2_events e" \
	" WHERE e.processed_at IS NULL"

/*
 * 0.4.0's objects: the gauges above, from the same pass the column queues
 * when every unprocessed event is in the default queue (queue NULL): that
 * queue's eligible, leased, scheduled, lane-waiting and dead-lettered
 * events are the whole store's ({} without unprocessed events).  When
 * some are in a named queue, queues is NULL here and queue_gauges below
 * groups them.  A grouping in this pass would cost more than the second
 * pass: the whole-store count(DISTINCT session_id) would then be computed
 * per queue too (GROUPING SETS), or the rows kept for two readers (a CTE):
 * 1.6-2x the time of this statement at 20,000 unprocessed events
 * (bench/RESULTS.md, "Dashboard").
 */
#define DEFAULT_QUEUE_OBJECT \
	"pg_catalog.jsonb_build_object('default', pg_catalog.jsonb_build_object(" \
	"'eligible', pg_catalog.count(*) FILTER (WHERE u.eligible)," \
	" 'leased', pg_catalog.count(*) FILTER (WHERE u.leased)," \
	" 'scheduled', pg_catalog.count(*) FILTER (WHERE u.scheduled)," \
	" 'laneWaiting', pg_catalog.count(*) FILTER (WHERE NOT u.lane_ready AND u.failed_at IS NULL)," \
	" 'deadLetters', pg_catalog.count(*) FILTER (WHERE u.failed_at IS NOT NULL)))"

static A2Statement gauges_by_queue = {
	.name = "metrics.gauges_by_queue",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(DISTINCT u.session_id) FILTER (WHERE u.eligible) AS sessions_with_eligible_work,"
				"       pg_catalog.count(*) FILTER (WHERE u.eligible) AS eligible_events,"
				"       pg_catalog.count(*) FILTER (WHERE u.leased) AS leased_events,"
				"       pg_catalog.count(*) FILTER (WHERE u.eligible AND u.claim_expires_at IS NOT NULL) AS expired_leases,"
				"       pg_catalog.count(*) FILTER (WHERE u.failed_at IS NOT NULL) AS dead_letters,"
				"       pg_catalog.count(*) FILTER (WHERE NOT u.lane_ready AND u.failed_at IS NULL) AS lane_waiting_events,"
				"       pg_catalog.to_timestamp(pg_catalog.min(u.created_at) FILTER (WHERE u.eligible)"
				"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS oldest_eligible_created_at,"
				"       $1 OPERATOR(pg_catalog.-) pg_catalog.min(u.created_at) FILTER (WHERE u.eligible) AS oldest_eligible_age_ms,"
				"       pg_catalog.pg_stat_get_live_tuples($2) AS events_estimate,"
				"       pg_catalog.pg_stat_get_dead_tuples($2) AS dead_rows_estimate,"
				"       pg_catalog.pg_stat_get_tuples_inserted($2) AS events_inserted_estimate,"
				"       pg_catalog.to_timestamp($1 OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS measured_at,"
				"       pg_catalog.count(*) FILTER (WHERE u.scheduled) AS scheduled_events,"
				"       pg_catalog.to_timestamp(pg_catalog.min(u.not_before) FILTER (WHERE u.scheduled)"
				"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS earliest_due_at,"
				"       CASE WHEN pg_catalog.bool_or(u.queue IS NOT NULL) THEN NULL"
				"            WHEN pg_catalog.count(*) OPERATOR(pg_catalog.>) 0 THEN " DEFAULT_QUEUE_OBJECT
				"            ELSE '{}'::pg_catalog.jsonb END AS queues"
				"  FROM (" UNPROCESSED_ROWS("e.queue") ") u"),
	},
	.nparams = 2, .params = {A2_PARAM("now", INT8OID), A2_PARAM("a2_events", OIDOID)},
	.columns = A2_COLUMNS("sessions_with_eligible_work", "eligible_events", "leased_events", "expired_leases", "dead_letters", "lane_waiting_events", "oldest_eligible_created_at", "oldest_eligible_age_ms", "events_estimate", "dead_rows_estimate", "events_inserted_estimate", "measured_at", "scheduled_events", "earliest_due_at", "queues")
};

/*
 * queues when some unprocessed events are in a named queue: per queue
 * with unprocessed events ('default' for queue NULL), the counts by the
 * definitions of the whole-store columns, so each sums over the queues
 * to its column (same snapshot).  A second pass over the rows of the
 * first (the same heap pages, just read); a hash of the queues, no sort.
 */
static A2Statement queue_gauges = {
	.name = "metrics.queue_gauges",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT COALESCE(pg_catalog.jsonb_object_agg(q.queue, pg_catalog.jsonb_build_object('eligible', q.eligible,"
				"                  'leased', q.leased, 'scheduled', q.scheduled,"
				"                  'laneWaiting', q.lane_waiting, 'deadLetters', q.dead_letters)),"
				"                '{}'::pg_catalog.jsonb) AS queues"
				"  FROM (SELECT u.queue,"
				"               pg_catalog.count(*) FILTER (WHERE u.eligible) AS eligible,"
				"               pg_catalog.count(*) FILTER (WHERE u.leased) AS leased,"
				"               pg_catalog.count(*) FILTER (WHERE u.scheduled) AS scheduled,"
				"               pg_catalog.count(*) FILTER (WHERE NOT u.lane_ready AND u.failed_at IS NULL) AS lane_waiting,"
				"               pg_catalog.count(*) FILTER (WHERE u.failed_at IS NOT NULL) AS dead_letters"
				"          FROM (" UNPROCESSED_ROWS("COALESCE(e.queue, 'default')") ") u"
				"         GROUP BY u.queue) q"),
	},
	.nparams = 1, .params = {A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("queues")
};

/*
 * The paused queues (a2_queues) and the concurrency keys at a limit now:
 * a key of a2_limits whose live leases reach max_leased (counted through
 * a2_events_key_leases, which holds leases of keyed events only) or whose
 * claims in the current window reach rate_max (a2_rate_claims), as
 * a2_list_limits() decides at_limit.  Both cost in proportion to the
 * settings and the keyed leases, nothing without them.
 */
static A2Statement dispatch_controls = {
	.name = "metrics.dispatch_controls",
	.texts = {
		A2_TEXT(A2_SINGLE, A2_OBJECTS_0_4,
				"SELECT ARRAY(SELECT q.queue FROM @extschema@.a2_queues q"
				"              WHERE q.paused ORDER BY q.queue) AS paused_queues,"
				"       ARRAY(SELECT l.key FROM @extschema@.a2_limits l"
				"              WHERE (l.max_leased IS NOT NULL"
				"                     AND (SELECT pg_catalog.count(*) FROM @extschema@.a2_events k"
				"                           WHERE k.concurrency_key OPERATOR(pg_catalog.=) l.key"
				"                             AND k.processed_at IS NULL AND k.failed_at IS NULL"
				"                             AND k.claim_expires_at IS NOT NULL"
				"                             AND k.claim_expires_at OPERATOR(pg_catalog.>) $1)"
				"                         OPERATOR(pg_catalog.>=) l.max_leased)"
				"                 OR (l.rate_max IS NOT NULL"
				"                     AND (SELECT pg_catalog.count(*) FROM @extschema@.a2_rate_claims x"
				"                           WHERE x.key OPERATOR(pg_catalog.=) l.key"
				"                             AND x.claimed_at OPERATOR(pg_catalog.>) ($1 OPERATOR(pg_catalog.-) l.rate_per_ms))"
				"                         OPERATOR(pg_catalog.>=) l.rate_max)"
				"              ORDER BY l.key) AS keys_at_limit"),
		/* distributed mode refuses pausing and limits (docs/distributed.md) */
		A2_TEXT(A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT '{}'::pg_catalog.text[] AS paused_queues, '{}'::pg_catalog.text[] AS keys_at_limit"),
	},
	.nparams = 1, .params = {A2_PARAM("now", INT8OID)},
	.columns = A2_COLUMNS("paused_queues", "keys_at_limit")
};

/* The schedule gauges: how many, the next tick of an active one, the last fired */
static A2Statement schedule_gauges = {
	.name = "metrics.schedule_gauges",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(*) AS schedules,"
				"       pg_catalog.to_timestamp(pg_catalog.min(s.next_tick_at) FILTER (WHERE NOT s.paused)"
				"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS next_tick_at,"
				"       pg_catalog.to_timestamp(pg_catalog.max(s.last_tick_at)"
				"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8) AS last_tick_at"
				"  FROM @extschema@.a2_schedules s"),
	},
	.nparams = 0,
	.columns = A2_COLUMNS("schedules", "next_tick_at", "last_tick_at")
};


/*
 * Cancelled events still stored (a2_cancel, 0.4.0): a count over the
 * partial index a2_events_cancelled, which holds only cancelled rows, so
 * it costs in proportion to them and nothing while nothing is cancelled.
 */
static A2Statement cancelled = {
	.name = "metrics.cancelled",
	.texts = {
		A2_TEXT(A2_SINGLE | A2_ROUTED, A2_OBJECTS_0_4,
				"SELECT pg_catalog.count(*) AS cancelled_events FROM @extschema@.a2_events e"
				" WHERE e.cancelled_at IS NOT NULL"),
	},
	.nparams = 0,
	.columns = A2_COLUMNS("cancelled_events")
};

A2_STATEMENT_GROUP(metrics, &gauges, &gauges_by_queue, &queue_gauges, &schedule_gauges,
				   &cancelled, &dispatch_controls);

/* A by-reference column of the current SPI result, copied to `ctx` */
static Datum
col_copy(int col, MemoryContext ctx, bool *isnull)
{
	Datum		d = a2_col(0, col, isnull);
	MemoryContext old;

	if (*isnull)
		return (Datum) 0;
	old = MemoryContextSwitchTo(ctx);
	d = PointerGetDatum(PG_DETOAST_DATUM_COPY(d));
	MemoryContextSwitchTo(old);
	return d;
}

Datum
a2_metrics(PG_FUNCTION_ARGS)
{
	int64		now_ms = a2_clock_now_ms();
	TupleDesc	desc;
	Datum		values[METRIC_COLUMNS];
	bool		nulls[METRIC_COLUMNS];
	A2Call		call;
	A2Args		a;
	int			ncols;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "a2_metrics must be declared with OUT parameters");
	/* an older declaration until ALTER EXTENSION a2 UPDATE: its columns */
	ncols = desc->natts;
	if (ncols != METRIC_COLUMNS && ncols != METRIC_COLUMNS_V3 &&
		ncols != METRIC_COLUMNS_V2)
		elog(ERROR, "a2_metrics is declared with %d columns, expected %d",
			 desc->natts, METRIC_COLUMNS);
	desc = BlessTupleDesc(desc);
	StaticAssertStmt(FLOAT8PASSBYVAL, "a2_metrics copies int8 datums by value");

	a2_call_begin(&call, NULL);
	/* 0.4.0's declaration comes with 0.4.0's objects (queues) */
	a2_args_init(&a, ncols == METRIC_COLUMNS ? &gauges_by_queue : &gauges);
	a2_bind_int8(&a, 1, now_ms);
	a2_bind(&a, 2, OIDOID, ObjectIdGetDatum(a2_relid("a2_events")));
	if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
		elog(ERROR, "a2_metrics: expected one row");
	/* int8 or timestamptz: passed by value, safe past SPI_finish */
	for (int i = 0; i < Min(ncols, METRIC_COLUMNS_V3); i++)
		values[i] = a2_col(0, i + 1, &nulls[i]);
	if (ncols == METRIC_COLUMNS)
	{
		values[COL_QUEUES] = col_copy(METRIC_COLUMNS_V3 + 1, call.caller, &nulls[COL_QUEUES]);
		if (nulls[COL_QUEUES])
		{
			/* some unprocessed events are in a named queue */
			a2_args_init(&a, &queue_gauges);
			a2_bind_int8(&a, 1, now_ms);
			if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
				elog(ERROR, "a2_metrics: expected one row of queues");
			values[COL_QUEUES] = col_copy(1, call.caller, &nulls[COL_QUEUES]);
		}

		a2_args_init(&a, &schedule_gauges);
		if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "a2_metrics: expected one row");
		for (int i = COL_SCHEDULES; i <= COL_LAST_TICK_AT; i++)
			values[i] = a2_col(0, i - COL_SCHEDULES + 1, &nulls[i]);

		a2_args_init(&a, &cancelled);
		if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "a2_metrics: expected one row of cancelled events");
		values[COL_CANCELLED_EVENTS] = a2_col(0, 1, &nulls[COL_CANCELLED_EVENTS]);

		a2_args_init(&a, &dispatch_controls);
		a2_bind_int8(&a, 1, now_ms);
		if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "a2_metrics: expected one row of dispatch controls");
		values[COL_PAUSED_QUEUES] = col_copy(1, call.caller, &nulls[COL_PAUSED_QUEUES]);
		values[COL_KEYS_AT_LIMIT] = col_copy(2, call.caller, &nulls[COL_KEYS_AT_LIMIT]);
	}
	a2_call_end(&call);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
