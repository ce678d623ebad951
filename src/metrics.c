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
 *	  how many, the next tick of an active one and the last tick fired.
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
 * 0.3.0 adds scheduled_events and earliest_due_at after the 0.2.0 columns,
 * 0.4.0 cancelled_events after those.
 */
#define METRIC_COLUMNS_V2 12
#define METRIC_COLUMNS_V3 14
/* 0.4.0 adds schedules, next_tick_at, last_tick_at (a2_schedules), then
 * cancelled_events */
#define METRIC_COLUMNS 18

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

A2_STATEMENT_GROUP(metrics, &gauges, &schedule_gauges, &cancelled);

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
	a2_args_init(&a, &gauges);
	a2_bind_int8(&a, 1, now_ms);
	a2_bind(&a, 2, OIDOID, ObjectIdGetDatum(a2_relid("a2_events")));
	if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
		elog(ERROR, "a2_metrics: expected one row");
	/* every column is int8 or timestamptz: passed by value, safe past SPI_finish */
	for (int i = 0; i < Min(ncols, METRIC_COLUMNS_V3); i++)
		values[i] = a2_col(0, i + 1, &nulls[i]);
	if (ncols == METRIC_COLUMNS)
	{
		a2_args_init(&a, &schedule_gauges);
		if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "a2_metrics: expected one row");
		for (int i = METRIC_COLUMNS_V3; i < METRIC_COLUMNS - 1; i++)
			values[i] = a2_col(0, i - METRIC_COLUMNS_V3 + 1, &nulls[i]);
		a2_args_init(&a, &cancelled);
		if (a2_exec(&a, true, SPI_OK_SELECT) != 1)
			elog(ERROR, "a2_metrics: expected one row of cancelled events");
		values[METRIC_COLUMNS - 1] = a2_col(0, 1, &nulls[METRIC_COLUMNS - 1]);
	}
	a2_call_end(&call);

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
