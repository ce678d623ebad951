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

-- == appenders granted by hand keep working (issue 26) ======================

-- Up to 0.3.0 a2_retired_last_index was SECURITY DEFINER and executable
-- only by the roles given EXECUTE (the update to 0.3.0 gave it to every
-- role then allowed to INSERT into a2_events, but not to PUBLIC, and those
-- grants, made inside the update, were not in a dump).  From 0.4.0 it
-- checks that its caller may INSERT into a2_events and then reads the mark
-- as its owner (src/retire.c), so INSERT on a2_events is all an appender
-- needs, however and whenever it was granted; it is executable by PUBLIC.
-- CREATE OR REPLACE resets SECURITY DEFINER and the search_path setting.
CREATE OR REPLACE FUNCTION a2_retired_last_index(session_id text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_retired_last_index'
LANGUAGE C STABLE STRICT;

COMMENT ON FUNCTION a2_retired_last_index(text) IS
'The last index of a dropped session (NULL if it was never dropped); appends to a session with no rows continue after it. Answers roles that may INSERT into a2_events.';

GRANT EXECUTE ON FUNCTION a2_retired_last_index(text) TO PUBLIC;

-- == background workers in a2_notify_status (issue 26) ====================

-- a2_notify_status gains the durable records on disk and the schedulers:
-- running, and databases waiting for a background worker.  A new result
-- type needs DROP and CREATE; the roles that could call it keep their
-- EXECUTE (a2_grant_monitor's grants; pg_monitor's is the install's own).
SELECT pg_catalog.set_config('a2_update.notify_status_grantees', coalesce(pg_catalog.string_agg(
		CASE WHEN x.grantee OPERATOR(pg_catalog.=) 0 THEN 'PUBLIC'
			 ELSE pg_catalog.quote_ident(r.rolname) END, ','), ''), true)
  FROM pg_catalog.pg_proc p
 CROSS JOIN LATERAL pg_catalog.aclexplode(p.proacl) x
  LEFT JOIN pg_catalog.pg_roles r ON r.oid OPERATOR(pg_catalog.=) x.grantee
 WHERE p.oid OPERATOR(pg_catalog.=) '@extschema@.a2_notify_status()'::pg_catalog.regprocedure
   AND x.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
   AND x.grantee OPERATOR(pg_catalog.<>) p.proowner
   AND x.grantee OPERATOR(pg_catalog.<>) 'pg_monitor'::pg_catalog.regrole;

DROP FUNCTION a2_notify_status();
CREATE FUNCTION a2_notify_status(
	OUT mode text,
	OUT notifier_pid integer,
	OUT queue_size integer,
	OUT queue_depth integer,
	OUT waiting integer,
	OUT recorded bigint,
	OUT announced bigint,
	OUT coalesced bigint,
	OUT fallbacks bigint,
	OUT dropped bigint,
	OUT disk_records integer,
	OUT disk_set_aside integer,
	OUT schedulers integer,
	OUT schedulers_waiting integer)
RETURNS record
AS 'MODULE_PATHNAME', 'a2_notify_status'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_status() IS
'How announcements on a2_events are sent in this session (mode: notifier, in-transaction or off) and the notifier queue: size, depth, entries waiting for a running (e.g. prepared) transaction, and counters since server start: recorded, announced (NOTIFYs sent), coalesced (entries merged into a later one of the same session), fallbacks (transactions that found the queue full and sent NOTIFY themselves), dropped (entries of transactions that aborted after recording); then the durable records of prepared transactions on disk (disk_records) and those set aside as unreadable (disk_set_aside), the due-announcement schedulers running (schedulers) and the databases waiting for a background worker to get one (schedulers_waiting).';

REVOKE ALL ON FUNCTION a2_notify_status() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_notify_status() TO pg_monitor;
DO $a2_grants$
DECLARE
	g text;
BEGIN
	FOR g IN SELECT u FROM pg_catalog.unnest(pg_catalog.string_to_array(
			pg_catalog.current_setting('a2_update.notify_status_grantees'), ',')) u LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.a2_notify_status() TO %s', g);
	END LOOP;
END
$a2_grants$;

-- == online preparation (issue 26; keep this section last) ==================

-- a2-prepare--0.3.0--0.4.0.sql, which make generates from this script
-- (src/sql/prepare.awk), adds this update's columns of a2_events and
-- builds its indexes beforehand, concurrently (docs/operations.md,
-- "Upgrading without an outage"); the sections above then find them built
-- (ADD COLUMN IF NOT EXISTS, CREATE INDEX IF NOT EXISTS).  An interrupted
-- CREATE INDEX CONCURRENTLY leaves an invalid index that IF NOT EXISTS
-- takes for built: refuse the update while an index of a2_events is
-- invalid, rather than go on without it.
DO $a2_check$
DECLARE
	bad text;
BEGIN
	SELECT pg_catalog.string_agg(i.indexrelid::pg_catalog.regclass::text, ', ' ORDER BY i.indexrelid)
	  INTO bad
	  FROM pg_catalog.pg_index i
	 WHERE i.indrelid OPERATOR(pg_catalog.=) '@extschema@.a2_events'::pg_catalog.regclass
	   AND NOT (i.indisvalid AND i.indisready);
	IF bad IS NOT NULL THEN
		RAISE EXCEPTION 'a2_events has an invalid index: %', bad
			USING ERRCODE = '55000',
				  DETAIL = 'An interrupted CREATE INDEX CONCURRENTLY leaves one; the update would take it for built.',
				  HINT = 'Run a2-prepare--0.3.0--0.4.0.sql again (it drops and builds a2''s own again), or DROP INDEX CONCURRENTLY it, then ALTER EXTENSION a2 UPDATE.';
	END IF;
END
$a2_check$;
