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
 *	  rows.
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
#include "clock.h"
#include "metrics.h"
#include "spi_plans.h"

PG_FUNCTION_INFO_V1(a2_metrics);

/* 0.3.0 adds scheduled_events and earliest_due_at after the 0.2.0 columns */
#define METRIC_COLUMNS_V2 12
#define METRIC_COLUMNS 14

/* $1 now (epoch ms), $2 a2_events' OID */
static A2Statement gauges = {
	.sql = "SELECT pg_catalog.count(DISTINCT u.session_id) FILTER (WHERE u.eligible),"
	"       pg_catalog.count(*) FILTER (WHERE u.eligible),"
	"       pg_catalog.count(*) FILTER (WHERE u.leased),"
	"       pg_catalog.count(*) FILTER (WHERE u.eligible AND u.claim_expires_at IS NOT NULL),"
	"       pg_catalog.count(*) FILTER (WHERE u.failed_at IS NOT NULL),"
	"       pg_catalog.count(*) FILTER (WHERE NOT u.lane_ready AND u.failed_at IS NULL),"
	"       pg_catalog.to_timestamp(pg_catalog.min(u.created_at) FILTER (WHERE u.eligible)"
	"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8),"
	"       $1 OPERATOR(pg_catalog.-) pg_catalog.min(u.created_at) FILTER (WHERE u.eligible),"
	"       pg_catalog.pg_stat_get_live_tuples($2),"
	"       pg_catalog.pg_stat_get_dead_tuples($2),"
	"       pg_catalog.pg_stat_get_tuples_inserted($2),"
	"       pg_catalog.to_timestamp($1 OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8),"
	"       pg_catalog.count(*) FILTER (WHERE u.scheduled),"
	"       pg_catalog.to_timestamp(pg_catalog.min(u.not_before) FILTER (WHERE u.scheduled)"
	"                               OPERATOR(pg_catalog./) 1000.0::pg_catalog.float8)"
	"  FROM (SELECT e.session_id, e.created_at, e.failed_at, e.lane_ready,"
	"               e.claim_expires_at, x.not_before,"
	"               e.lane_ready AND e.failed_at IS NULL"
	"                 AND (e.claim_expires_at IS NULL OR e.claim_expires_at OPERATOR(pg_catalog.<=) $1)"
	"                 AND (x.not_before IS NULL OR x.not_before OPERATOR(pg_catalog.<=) $1) AS eligible,"
	"               e.failed_at IS NULL AND e.claim_expires_at OPERATOR(pg_catalog.>) $1 AS leased,"
	"               e.failed_at IS NULL AND x.not_before OPERATOR(pg_catalog.>) $1 AS scheduled"
	"          FROM @extschema@.a2_events e"
	"         CROSS JOIN LATERAL (SELECT " A2_NB("e.not_before", "NULL::pg_catalog.int8") " AS not_before) x"
	"         WHERE e.processed_at IS NULL) u",
	.nargs = 2, .argtypes = {INT8OID, OIDOID}
};

Datum
a2_metrics(PG_FUNCTION_ARGS)
{
	int64		now_ms = a2_clock_now_ms();
	TupleDesc	desc;
	Datum		values[METRIC_COLUMNS];
	bool		nulls[METRIC_COLUMNS];
	Datum		args[2];
	int			ncols;

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "a2_metrics must be declared with OUT parameters");
	/* 0.2.0's declaration until ALTER EXTENSION a2 UPDATE: its 12 columns */
	ncols = desc->natts;
	if (ncols != METRIC_COLUMNS && ncols != METRIC_COLUMNS_V2)
		elog(ERROR, "a2_metrics is declared with %d columns, expected %d",
			 desc->natts, METRIC_COLUMNS);
	desc = BlessTupleDesc(desc);
	StaticAssertStmt(FLOAT8PASSBYVAL, "a2_metrics copies int8 datums by value");

	a2_spi_begin();
	args[0] = Int64GetDatum(now_ms);
	args[1] = ObjectIdGetDatum(a2_relid("a2_events"));
	if (a2_exec(&gauges, args, NULL, true, SPI_OK_SELECT) != 1)
		elog(ERROR, "a2_metrics: expected one row");
	/* every column is int8 or timestamptz: passed by value, safe past SPI_finish */
	for (int i = 0; i < ncols; i++)
		values[i] = a2_col(0, i + 1, &nulls[i]);
	a2_spi_end();

	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(desc, values, nulls)));
}
