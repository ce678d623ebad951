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

-- == dashboard: dead letters grouped and paged (issue 29) ================

-- The dashboard's bounded views of dead letters (docs/functions.md,
-- "Dead letters"; dashboard/).  Both walk a2_events_dead_letters, which
-- holds only dead-lettered rows, newest failure first, and stop after
-- max_scan of them: their cost never depends on the number of events,
-- sessions or live work, only on their own bounds.  SECURITY INVOKER:
-- they read a2_events as the caller (a monitoring role has SELECT on it).

-- Only dead-lettered events (failed_at is set when an event is
-- dead-lettered and cleared by a redrive): appends, claims and completions
-- of healthy work write no entry in it.
CREATE INDEX IF NOT EXISTS a2_events_dead_letters
	ON a2_events (failed_at, session_id, idx)
	WHERE failed_at IS NOT NULL;

-- Errors of the newest max_scan dead letters, grouped by message, the
-- largest groups first.
CREATE FUNCTION a2_failure_groups(max_groups integer DEFAULT 20,
								  max_scan integer DEFAULT 10000)
RETURNS TABLE (error text, events bigint, sessions bigint,
			   first_failed_at timestamptz, last_failed_at timestamptz,
			   sample_session_id text, sample_index bigint,
			   scanned bigint, complete boolean)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	groups integer := COALESCE(max_groups, 20);
	scan integer := COALESCE(max_scan, 10000);
BEGIN
	IF groups < 1 OR groups > 1000 THEN
		RAISE EXCEPTION 'max_groups must be between 1 and 1000, not %', groups
			USING ERRCODE = '22023';
	END IF;
	IF scan < 1 OR scan > 1000000 THEN
		RAISE EXCEPTION 'max_scan must be between 1 and 1000000, not %', scan
			USING ERRCODE = '22023';
	END IF;
	RETURN QUERY
	WITH walk AS (
		SELECT e.session_id, e.idx, e.failed_at, e.last_error
		  FROM @extschema@.a2_events e
		 WHERE e.failed_at IS NOT NULL
		 ORDER BY e.failed_at DESC, e.session_id DESC, e.idx DESC
		 LIMIT scan + 1	-- one more: is there anything past the bound?
	), total AS (
		SELECT LEAST(pg_catalog.count(*), scan::bigint) AS n,
			   pg_catalog.count(*) <= scan AS complete
		  FROM walk
	), kept AS (
		SELECT * FROM walk
		 ORDER BY walk.failed_at DESC, walk.session_id DESC, walk.idx DESC
		 LIMIT scan
	)
	SELECT w.last_error,
		   pg_catalog.count(*),
		   pg_catalog.count(DISTINCT w.session_id),
		   pg_catalog.to_timestamp(pg_catalog.min(w.failed_at) / 1000.0),
		   pg_catalog.to_timestamp(pg_catalog.max(w.failed_at) / 1000.0),
		   (pg_catalog.array_agg(w.session_id ORDER BY w.failed_at DESC, w.session_id DESC, w.idx DESC))[1],
		   (pg_catalog.array_agg(w.idx ORDER BY w.failed_at DESC, w.session_id DESC, w.idx DESC))[1],
		   t.n,
		   t.complete
	  FROM kept w CROSS JOIN total t
	 GROUP BY w.last_error, t.n, t.complete
	 ORDER BY pg_catalog.count(*) DESC, pg_catalog.max(w.failed_at) DESC, w.last_error
	 LIMIT groups;
END
$fn$;

COMMENT ON FUNCTION a2_failure_groups(integer, integer) IS
'The errors of the newest max_scan (default 10000, at most 1000000) dead-lettered events, grouped by message, largest group first, at most max_groups (default 20, at most 1000): error, events, sessions, first and last failure, a sample event, how many dead letters were scanned and whether that was all of them. Walks the partial index a2_events_dead_letters; costs in proportion to max_scan.';

-- A page of dead letters, newest failure first, optionally only those
-- whose last error is exactly error.  Resumable through cursor; at most
-- max_scan dead letters are read per call, so a rare error never makes a
-- call walk them all: a page may hold fewer than max_events events and
-- still have a cursor.
CREATE FUNCTION a2_dead_letters(error text DEFAULT NULL,
								cursor jsonb DEFAULT NULL,
								max_events integer DEFAULT 100,
								max_scan integer DEFAULT 10000)
RETURNS jsonb
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	page integer := COALESCE(max_events, 100);
	scan integer := COALESCE(max_scan, 10000);
	c_at bigint;
	c_sid text;
	c_idx bigint;
	r record;
	n integer := 0;
	found integer := 0;
	events jsonb := '[]';
	next jsonb := NULL;
BEGIN
	IF page < 1 OR page > 1000 THEN
		RAISE EXCEPTION 'max_events must be between 1 and 1000, not %', page
			USING ERRCODE = '22023';
	END IF;
	IF scan < 1 OR scan > 1000000 THEN
		RAISE EXCEPTION 'max_scan must be between 1 and 1000000, not %', scan
			USING ERRCODE = '22023';
	END IF;
	IF cursor IS NOT NULL THEN
		IF pg_catalog.jsonb_typeof(cursor) IS DISTINCT FROM 'array'
		   OR pg_catalog.jsonb_array_length(cursor) <> 3
		   OR pg_catalog.jsonb_typeof(cursor -> 0) IS DISTINCT FROM 'number'
		   OR pg_catalog.jsonb_typeof(cursor -> 1) IS DISTINCT FROM 'string'
		   OR pg_catalog.jsonb_typeof(cursor -> 2) IS DISTINCT FROM 'number' THEN
			RAISE EXCEPTION 'cursor must be a cursor a2_dead_letters returned'
				USING ERRCODE = '22023';
		END IF;
		BEGIN
			c_at := (cursor ->> 0)::bigint;
			c_idx := (cursor ->> 2)::bigint;
		EXCEPTION WHEN invalid_text_representation OR numeric_value_out_of_range THEN
			RAISE EXCEPTION 'cursor must be a cursor a2_dead_letters returned'
				USING ERRCODE = '22023';
		END;
		c_sid := cursor ->> 1;
	END IF;
	FOR r IN
		SELECT e.session_id, e.idx, e.event_type, e.failed_at, e.last_error,
			   e.failure_count, e.attempt_count, e.lane
		  FROM @extschema@.a2_events e
		 WHERE e.failed_at IS NOT NULL
		   AND (c_at IS NULL OR (e.failed_at, e.session_id, e.idx) < (c_at, c_sid, c_idx))
		 ORDER BY e.failed_at DESC, e.session_id DESC, e.idx DESC
		 LIMIT scan
	LOOP
		n := n + 1;
		IF error IS NULL OR r.last_error = error THEN
			events := events || pg_catalog.jsonb_build_array(pg_catalog.jsonb_build_object(
				'sessionId', r.session_id, 'index', r.idx, 'type', r.event_type,
				'lastError', r.last_error,
				'failedAt', pg_catalog.to_jsonb(pg_catalog.to_timestamp(r.failed_at / 1000.0)),
				'failureCount', r.failure_count, 'attemptCount', r.attempt_count,
				'lane', r.lane));
			found := found + 1;
			IF found = page THEN
				next := pg_catalog.jsonb_build_array(r.failed_at, r.session_id, r.idx);
				EXIT;
			END IF;
		END IF;
		IF n = scan THEN
			next := pg_catalog.jsonb_build_array(r.failed_at, r.session_id, r.idx);
		END IF;
	END LOOP;
	RETURN pg_catalog.jsonb_build_object('events', events, 'cursor', next, 'scanned', n);
END
$fn$;

COMMENT ON FUNCTION a2_dead_letters(text, jsonb, integer, integer) IS
'A page of dead-lettered events, newest failure first, only those whose last error equals error when it is given: {"events": [{sessionId, index, type, lastError, failedAt, failureCount, attemptCount, lane}], "cursor": array or null, "scanned": n}. Reads at most max_scan (default 10000) dead letters through a2_events_dead_letters; pass cursor back to go on.';
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
