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

-- == durable waits (issue 28, part 2) ======================================

-- docs/semantics.md, "Waits".  NULL in both columns for every existing event.
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS wait_for jsonb;
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS wait_result jsonb;

COMMENT ON COLUMN a2_events.wait_for IS
'The event''s wait (waitFor): {"types": [...], "timeoutMs": n, "until": epoch ms, "notBefore": epoch ms}; until and notBefore are kept for a2 (the timeout''s due time, the event''s own notBefore); NULL: no wait.';
COMMENT ON COLUMN a2_events.wait_result IS
'How the wait ended when an awaited event ended it: {"index": n, "type": t}; NULL while waiting, after a timeout (derived: now >= until) and without a wait.';

-- No entry after the update (no event waits yet), but building it reads
-- a2_events once and blocks writers meanwhile; an operator may build it
-- beforehand with CREATE INDEX CONCURRENTLY (same name and definition).
CREATE INDEX IF NOT EXISTS a2_events_waiting ON a2_events (session_id, idx)
	WHERE wait_for IS NOT NULL AND wait_result IS NULL AND processed_at IS NULL;
