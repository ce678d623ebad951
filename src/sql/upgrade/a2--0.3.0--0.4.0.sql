/* a2 0.3.0 -> 0.4.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.4.0'" to load this file. \quit

-- From 0.4.0 on a fresh CREATE EXTENSION a2 runs a2--0.4.0.sql, which the
-- build generates from src/sql/objects/ (the current definition of every
-- object); this script takes a 0.3.0 database to the same objects, and
-- test/suites/60-upgrade.sh compares the two.  Each section below is one
-- feature of 0.4.0; keep them in this order.

-- == the statement registry ===============================================

-- The SQL a2's C code runs, for review and for EXPLAIN: each statement as
-- this database's schema expands it.  SECURITY INVOKER and executable by
-- PUBLIC: it shows code text, never rows.
CREATE FUNCTION a2_statements()
RETURNS TABLE (name text, mode text, objects text, params text, sql text)
AS 'MODULE_PATHNAME', 'a2_statements'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION a2_statements() IS
'every SQL statement a2''s C code runs, expanded for this database''s schema: one row per statement, mode (single; in distributed mode routed, local or shard) and the earliest installed version of a2''s objects that text serves';

-- == cancel (issue 27, part 6) ============================================

-- docs/semantics.md, "Cancel".  Nullable columns without a default: adding
-- them rewrites nothing, and events never cancelled store no bytes in them.
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS cancelled_at bigint;
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS cancel_reason text;

COMMENT ON COLUMN a2_events.cancelled_at IS
'Epoch milliseconds at which a2_cancel cancelled the event (processed_at holds the same time); NULL: not cancelled.';
COMMENT ON COLUMN a2_events.cancel_reason IS
'The reason given to a2_cancel, or NULL.';

-- Cancelled events, for a2_metrics' cancelled_events; empty after the
-- update (no row is cancelled yet).
CREATE INDEX IF NOT EXISTS a2_events_cancelled ON a2_events (cancelled_at)
	WHERE cancelled_at IS NOT NULL;

CREATE FUNCTION a2_cancel(session_id text,
						  indexes bigint[] DEFAULT NULL,
						  reason text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_cancel'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_cancel(text, bigint[], text) IS
'Cancel the listed unfinished events of a session (indexes NULL: every unfinished one: pending, scheduled, leased or dead-lettered); returns {"cancelled":[StoredEvent...]}, the events this call cancelled. A cancelled event is never claimed again; its live attempt is superseded; its lane advances. Idempotent: finished events are left alone. A listed index without an event is Z2003.';

COMMENT ON FUNCTION a2_list_sessions(text, text, integer) IS
'A page of session summaries in session-id order: {"sessions": [{sessionId, eventCount, pendingCount, failedCount, attemptCount, failureCount, firstEventAt, updatedAt, cancelledCount}], "cursor": text or null}. Pass cursor back for the next page; a page costs in proportion to the page.';

COMMENT ON FUNCTION a2_grant_worker(regrole) IS
'Grant a role everything the worker protocol needs (append, read, claim, renew, complete, fail, claim_next, redrive, cancel, state, snapshots, presence), in single-node and distributed mode; idempotent.';

-- a2_metrics gains cancelled_events after the 0.3.0 columns.  Dropping it
-- drops its privileges too: they are granted again below, and a role that
-- a2_grant_monitor granted it needs a2_grant_monitor again
-- (docs/operations.md, "Updating").
DROP FUNCTION a2_metrics();
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
	OUT cancelled_events bigint)
AS 'MODULE_PATHNAME', 'a2_metrics'
LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog
SET enable_seqscan = off
SET jit = off;

COMMENT ON FUNCTION a2_metrics() IS
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (due, expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event, scheduled events (not yet due) and the earliest due time, cancelled events still stored. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Costs one pass over the unprocessed events and one over the cancelled ones (a2_events_cancelled).';

REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;
