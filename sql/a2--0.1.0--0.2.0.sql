/* a2 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.2.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs this script
-- (there is no a2--0.2.0.sql), so a fresh install and an upgrade are the
-- same objects by construction.  Each section below belongs to one change
-- of 0.2.0; keep them in this order.

-- == notifier (issue 8) ==================================================

-- == fleet claiming, redrive (issue 9) ===================================

-- == operations: inspection, metrics, retention (issue 10) ===============

-- High-water marks of dropped sessions: a2_drop_session records the last
-- index here, and append reads it (through a2_retired_last_index) only
-- when the session has no event rows, so indexes are never reused.  One
-- small row per dropped session id, kept forever.
CREATE TABLE a2_retired_sessions (
	session_id		text	NOT NULL PRIMARY KEY,
	last_index		bigint	NOT NULL,
	retired_at		bigint	NOT NULL
);

SELECT pg_catalog.pg_extension_config_dump('a2_retired_sessions', '');

-- STABLE, so under the session lock it reads with the caller's statement
-- snapshot (the latest one, see a2_exec_latest); SECURITY DEFINER, so an
-- appender needs no privilege on a2_retired_sessions and cannot list it.
CREATE FUNCTION a2_retired_last_index(session_id text)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
	SELECT r.last_index FROM @extschema@.a2_retired_sessions r
	 WHERE r.session_id OPERATOR(pg_catalog.=) $1
$$;

COMMENT ON FUNCTION a2_retired_last_index(text) IS
'The last index of a dropped session (NULL if it was never dropped); appends to a session with no rows continue after it.';

-- Autovacuum for the churn every claim and completion causes (no HOT
-- update is possible: claim_expires_at and the partial-index predicates
-- change).  At the defaults autovacuum waits for dead rows worth 20% of
-- the table, so on a table with history the partial indexes, which should
-- hold only unfinished events, grow until then: in the 10-minute soak on
-- 1.5M events (bench/soak.sh, bench/RESULTS.md "Bloat under churn") the
-- default run never vacuumed and a2_events_claim_expiry grew to 8.0 MB
-- and climbing; with these settings it vacuumed 5 times and the index
-- stayed at 1.6 MB, at the same throughput.
ALTER TABLE a2_events SET (
	autovacuum_vacuum_scale_factor = 0.02,
	autovacuum_vacuum_insert_scale_factor = 0.05,
	autovacuum_analyze_scale_factor = 0.05,
	autovacuum_vacuum_cost_delay = 1
);

CREATE FUNCTION a2_list_sessions(prefix text,
								 cursor text DEFAULT NULL,
								 max_sessions integer DEFAULT 100)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_sessions'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_sessions(text, text, integer) IS
'A page of session summaries in session-id order: {"sessions": [{sessionId, eventCount, pendingCount, failedCount, attemptCount, failureCount, firstEventAt, updatedAt}], "cursor": text or null}. Pass cursor back for the next page; a page costs in proportion to the page.';

CREATE FUNCTION a2_list_snapshots(session_id text,
								  include_history boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_snapshots'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_snapshots(text, boolean) IS
'A session''s reducer checkpoints, ordered by reducer and index: [{reducerName, index, updatedAt}] (the heads); with include_history, the pinned history rows too and a "head" flag on every element.';

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
	OUT measured_at timestamptz)
AS 'MODULE_PATHNAME', 'a2_metrics'
LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog
-- The unprocessed rows are found through a2_events_unprocessed.  Once they
-- are a few per cent of the table the planner picks a sequential scan,
-- although they sit together in the newest pages (appends and the updates
-- of claims go there): 3.4 s instead of 0.36 s on 10M events with 500k
-- unprocessed (bench/RESULTS.md).  JIT would only add compile time.
SET enable_seqscan = off
SET jit = off;

COMMENT ON FUNCTION a2_metrics() IS
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Costs one pass over the unprocessed events.';

-- Aggregates only, never payloads: a monitoring role needs EXECUTE (and
-- USAGE on the schema), not SELECT on the tables.  pg_monitor gets it.
REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;

CREATE FUNCTION a2_drop_session(session_id text, force boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_drop_session'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_drop_session(text, boolean) IS
'Remove a session''s rows from a2_events, a2_snapshots, a2_snapshot_history and a2_snapshot_pins and remember its last index, so later appends continue after it. Refuses with Z2010 while an event is neither processed nor dead-lettered, unless force. Returns {"sessionId", "dropped", "events", "snapshots", "lastIndex"}.';

CREATE FUNCTION a2_drop_finished_sessions(idle_ms bigint, max_sessions integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_drop_finished_sessions'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_drop_finished_sessions(bigint, integer) IS
'Drop up to max_sessions sessions that have nothing unfinished and no append for idle_ms (store clock); skips sessions another transaction holds. Returns how many were dropped. For a scheduled job.';

-- == distributed mode (issue 12) =========================================
