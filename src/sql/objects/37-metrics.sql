-- Dispatch gauges for monitoring.  SECURITY DEFINER, so that a monitoring
-- role needs EXECUTE (granted to pg_monitor and by a2_grant_monitor,
-- 90-grants.sql) and USAGE on the schema, not SELECT on the tables: the
-- result holds aggregates only, never payloads.

CREATE FUNCTION a2_metrics(
	OUT sessions_with_eligible_work bigint,
	OUT eligible_events bigint,
	OUT leased_events bigint,
	OUT expired_leases bigint,
	OUT dead_letters bigint,
	OUT lane_waiting_events bigint,
	OUT oldest_eligible_created_at timestamptz,
	OUT oldest_eligible_age_ms bigint,
	OUT events_estimate bigint,
	OUT dead_rows_estimate bigint,
	OUT events_inserted_estimate bigint,
	OUT measured_at timestamptz,
	OUT scheduled_events bigint,
	OUT earliest_due_at timestamptz,
	OUT schedules bigint,
	OUT next_tick_at timestamptz,
	OUT last_tick_at timestamptz,
	OUT cancelled_events bigint,
	OUT paused_queues text[],
	OUT keys_at_limit text[],
	OUT queues jsonb)
AS 'MODULE_PATHNAME', 'a2_metrics'
LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog
-- The unprocessed rows are found through a2_events_unprocessed.  Once they
-- are a few per cent of the table the planner picks a sequential scan,
-- although they sit together in the newest pages (appends and the updates
-- of claims go there): 3.4 s instead of 0.36 s on 10M events with 500k
-- unprocessed (bench/RESULTS.md).  With the statistics of a big table it
-- picks an index scan in (session_id, idx) order, which pins a heap page
-- per row; a bitmap scan reads each page that holds them once (4.6x the
-- buffers of a small table's call before, bench/RESULTS.md "Dashboard").
-- JIT would only add compile time.
SET enable_seqscan = off
SET enable_indexscan = off
SET jit = off;

COMMENT ON FUNCTION a2_metrics() IS
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (due, expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event, scheduled events (not yet due) and the earliest due time; recurring schedules, the next tick of an active one and the last tick fired; cancelled events still stored. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Dispatch controls: the paused queues, the concurrency keys at a limit now, and per queue with unprocessed events its eligible, leased, scheduled, lane-waiting and dead-lettered events (queues, jsonb). Costs one pass over the unprocessed events (a bitmap scan: each heap page read once; a second one when some are in a named queue) and one over the cancelled ones (a2_events_cancelled).';
