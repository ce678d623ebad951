/* a2 0.3.0 -> 0.4.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.4.0'" to load this file. \quit

-- From 0.4.0 on a fresh CREATE EXTENSION a2 runs a2--0.4.0.sql, which the
-- build generates from src/sql/objects/ (the current definition of every
-- object); this script takes a 0.3.0 database to the same objects, and
-- test/suites/60-upgrade.sh compares the two.  Each section below is one
-- feature of 0.4.0; keep them in this order.

-- == the lock on a2_events, first ==========================================

-- Sections below both read a2_events under weaker locks (CREATE INDEX IF
-- NOT EXISTS takes SHARE before it finds the index built) and alter it
-- (ADD COLUMN IF NOT EXISTS takes ACCESS EXCLUSIVE).  Taking the weaker
-- lock first and the stronger one later is a lock upgrade: a client that
-- read a2_events in its transaction and then writes to it deadlocks with
-- the update (test/suites/61-upgrade-online.sh saw it).  So the update
-- takes the strongest lock it will need once, here, before anything
-- else; with the online preparation run first it holds it for a moment
-- only (docs/operations.md, "Upgrading without an outage").
LOCK TABLE a2_events IN ACCESS EXCLUSIVE MODE;

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

-- == recurring schedules (issue 28) ========================================

-- The a2_schedules table, its index and functions: the same text as
-- src/sql/objects/41-schedules.sql.
CREATE TABLE a2_schedules (
	name			text	PRIMARY KEY,
	spec			text	NOT NULL,
	timezone		text	NOT NULL,
	session_id		text	NOT NULL,
	event			jsonb	NOT NULL,
	missed			text	NOT NULL CHECK (missed IN ('skip', 'latest', 'backfill')),
	backfill_limit	integer NOT NULL CHECK (backfill_limit >= 1),
	grace_ms		bigint	NOT NULL CHECK (grace_ms >= 0),
	paused			boolean NOT NULL,
	next_tick_at	bigint	NOT NULL,
	last_tick_at	bigint,
	fired_count		bigint	NOT NULL DEFAULT 0,
	created_at		bigint	NOT NULL,
	updated_at		bigint	NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('a2_schedules', '');

COMMENT ON TABLE a2_schedules IS
'Recurring schedules: one row per schedule name; next_tick_at and last_tick_at are epoch milliseconds. Change it through a2_schedule, a2_unschedule, a2_pause_schedule and a2_resume_schedule.';

-- What the fire pass and the scheduler's "next tick" look for.
CREATE INDEX a2_schedules_next_tick ON a2_schedules (next_tick_at) WHERE NOT paused;

-- The C half (src/schedules.c).
CREATE FUNCTION a2_schedule_ticks(spec text, timezone text, after timestamptz,
								  count integer DEFAULT 1)
RETURNS SETOF timestamptz
AS 'MODULE_PATHNAME', 'a2_schedule_ticks'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_schedule_ticks(text, text, timestamptz, integer) IS
'The next count ticks (at most 100000) of a schedule spec in an IANA time zone strictly after a time; raises 22023 for an invalid spec or zone. Writes nothing.';

CREATE FUNCTION a2_schedule_check(spec text, timezone text, session_id text, event jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'a2_schedule_check'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_schedule_check(text, text, text, jsonb) IS
'Used by a2_schedule: raises 22023 or 22004 unless the spec parses in the zone and the event is one a2_append takes for the session, without id, cause or notBefore.';

CREATE FUNCTION a2_schedule_plan(spec text, timezone text, next_tick bigint, now bigint,
								 missed text, backfill_limit integer, grace_ms bigint,
								 OUT fire bigint[], OUT next_tick bigint)
AS 'MODULE_PATHNAME', 'a2_schedule_plan'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_schedule_plan(text, text, bigint, bigint, text, integer, bigint) IS
'Used by a2_fire_schedules and a2_schedule: the ticks a fire pass at now fires for a schedule whose next tick is next_tick (NULL: none), by its missed-tick policy, and the next tick after now (epoch ms). Writes nothing.';

CREATE FUNCTION a2_schedule_wake(due bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'a2_schedule_wake'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_schedule_wake(bigint) IS
'Used by a2_schedule and a2_resume_schedule: wake (or start) this database''s background scheduler when the transaction commits, so it sleeps until the tick due (epoch ms). Does nothing unless a2 is preloaded.';

CREATE FUNCTION a2_store_clock_ms()
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_store_clock_ms'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_store_clock_ms() IS
'One reading of the store clock in epoch milliseconds: a2.now when set, else the wall clock.';

-- The calls.
CREATE FUNCTION a2_schedule(name text, spec text, session_id text, event jsonb,
							options jsonb DEFAULT '{}')
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	now_ms bigint;
	tz text := 'UTC';
	missed text := 'latest';
	backfill_limit integer := 100;
	grace_ms bigint := 60000;
	paused boolean := false;
	k text;
	next bigint;
BEGIN
	IF name IS NULL OR spec IS NULL OR session_id IS NULL OR event IS NULL OR options IS NULL THEN
		RAISE EXCEPTION 'argument "%" must not be null',
			CASE WHEN name IS NULL THEN 'name' WHEN spec IS NULL THEN 'spec'
				 WHEN session_id IS NULL THEN 'session_id' WHEN event IS NULL THEN 'event'
				 ELSE 'options' END
			USING ERRCODE = '22004';
	END IF;
	IF name OPERATOR(pg_catalog.=) '' OR pg_catalog.octet_length(name) OPERATOR(pg_catalog.>) 256 THEN
		RAISE EXCEPTION 'schedule name must be 1 to 256 bytes, not %', pg_catalog.octet_length(name)
			USING ERRCODE = '22023';
	END IF;
	IF pg_catalog.jsonb_typeof(options) OPERATOR(pg_catalog.<>) 'object' THEN
		RAISE EXCEPTION 'options must be a JSON object' USING ERRCODE = '22023';
	END IF;
	FOR k IN SELECT pg_catalog.jsonb_object_keys(options) LOOP
		IF k OPERATOR(pg_catalog.<>) ALL (ARRAY['timezone', 'missed', 'backfillLimit', 'graceMs', 'paused']) THEN
			RAISE EXCEPTION 'unknown key "%" in options', k USING ERRCODE = '22023',
				HINT = 'Accepted keys: timezone, missed, backfillLimit, graceMs, paused.';
		END IF;
	END LOOP;
	IF options ? 'timezone' THEN
		IF pg_catalog.jsonb_typeof(options->'timezone') OPERATOR(pg_catalog.<>) 'string' THEN
			RAISE EXCEPTION 'options.timezone must be a string' USING ERRCODE = '22023';
		END IF;
		tz := options->>'timezone';
	END IF;
	IF options ? 'missed' THEN
		missed := options->>'missed';
		IF pg_catalog.jsonb_typeof(options->'missed') OPERATOR(pg_catalog.<>) 'string'
		   OR missed OPERATOR(pg_catalog.<>) ALL (ARRAY['skip', 'latest', 'backfill']) THEN
			RAISE EXCEPTION 'options.missed must be "skip", "latest" or "backfill"' USING ERRCODE = '22023';
		END IF;
	END IF;
	IF options ? 'backfillLimit' THEN
		IF pg_catalog.jsonb_typeof(options->'backfillLimit') OPERATOR(pg_catalog.<>) 'number'
		   OR (options->>'backfillLimit') !~ '^[0-9]{1,6}$'
		   OR (options->>'backfillLimit')::integer NOT BETWEEN 1 AND 100000 THEN
			RAISE EXCEPTION 'options.backfillLimit must be an integer from 1 to 100000' USING ERRCODE = '22023';
		END IF;
		backfill_limit := (options->>'backfillLimit')::integer;
	END IF;
	IF options ? 'graceMs' THEN
		IF pg_catalog.jsonb_typeof(options->'graceMs') OPERATOR(pg_catalog.<>) 'number'
		   OR (options->>'graceMs') !~ '^[0-9]{1,15}$' THEN
			RAISE EXCEPTION 'options.graceMs must be an integer >= 0' USING ERRCODE = '22023';
		END IF;
		grace_ms := (options->>'graceMs')::bigint;
	END IF;
	IF options ? 'paused' THEN
		IF pg_catalog.jsonb_typeof(options->'paused') OPERATOR(pg_catalog.<>) 'boolean' THEN
			RAISE EXCEPTION 'options.paused must be true or false' USING ERRCODE = '22023';
		END IF;
		paused := (options->>'paused')::boolean;
	END IF;
	PERFORM @extschema@.a2_schedule_check(spec, tz, session_id, event);

	now_ms := @extschema@.a2_store_clock_ms();
	-- the first tick after now, and after the last one fired (a replaced
	-- schedule never fires a tick again)
	SELECT s.last_tick_at INTO next
	  FROM @extschema@.a2_schedules s WHERE s.name OPERATOR(pg_catalog.=) a2_schedule.name;
	next := (@extschema@.a2_schedule_plan(spec, tz, NULL, GREATEST(now_ms, next), missed,
										   backfill_limit, grace_ms)).next_tick;
	IF next IS NULL THEN
		RAISE EXCEPTION 'schedule spec "%" has no tick after %', spec, pg_catalog.to_timestamp(now_ms / 1000.0)
			USING ERRCODE = '22023';
	END IF;

	INSERT INTO @extschema@.a2_schedules AS s
		(name, spec, timezone, session_id, event, missed, backfill_limit, grace_ms,
		 paused, next_tick_at, created_at, updated_at)
	VALUES (name, spec, tz, session_id, event, missed, backfill_limit, grace_ms,
			paused, next, now_ms, now_ms)
	ON CONFLICT ON CONSTRAINT a2_schedules_pkey DO UPDATE
	   SET spec = EXCLUDED.spec, timezone = EXCLUDED.timezone, session_id = EXCLUDED.session_id,
		   event = EXCLUDED.event, missed = EXCLUDED.missed, backfill_limit = EXCLUDED.backfill_limit,
		   grace_ms = EXCLUDED.grace_ms, paused = EXCLUDED.paused,
		   next_tick_at = (@extschema@.a2_schedule_plan(EXCLUDED.spec, EXCLUDED.timezone, NULL,
				GREATEST(now_ms, s.last_tick_at), EXCLUDED.missed, EXCLUDED.backfill_limit,
				EXCLUDED.grace_ms)).next_tick,
		   updated_at = EXCLUDED.updated_at
	RETURNING s.next_tick_at INTO next;
	IF NOT paused THEN
		PERFORM @extschema@.a2_schedule_wake(next);
	END IF;
	RETURN pg_catalog.to_timestamp(next / 1000.0);
END
$fn$;

COMMENT ON FUNCTION a2_schedule(text, text, text, jsonb, jsonb) IS
'Create or replace the schedule name: append event to session_id at every tick of spec (5-field cron, @hourly etc., or "every N minutes"). options: timezone (IANA, default UTC), missed (skip | latest (default) | backfill), backfillLimit (default 100), graceMs (skip''s lateness, default 60000), paused. Returns the next tick.';

CREATE FUNCTION a2_unschedule(name text)
RETURNS boolean
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = '22004';
	END IF;
	DELETE FROM @extschema@.a2_schedules s WHERE s.name OPERATOR(pg_catalog.=) a2_unschedule.name;
	RETURN FOUND;
END
$fn$;

COMMENT ON FUNCTION a2_unschedule(text) IS
'Delete the schedule name; false when there was none. Events it appended stay.';

-- Pause or resume: the shared body.
CREATE FUNCTION a2_set_schedule_paused(name text, pause boolean, caller text)
RETURNS timestamptz
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	next bigint;
BEGIN
	IF name IS NULL THEN
		RAISE EXCEPTION 'argument "name" must not be null' USING ERRCODE = '22004';
	END IF;
	UPDATE @extschema@.a2_schedules s
	   SET paused = pause, updated_at = @extschema@.a2_store_clock_ms()
	 WHERE s.name OPERATOR(pg_catalog.=) a2_set_schedule_paused.name
	RETURNING s.next_tick_at INTO next;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'no schedule named "%"', name USING ERRCODE = 'Z2003',
			DETAIL = pg_catalog.format('%s found no row in a2_schedules.', caller);
	END IF;
	IF NOT pause THEN
		PERFORM @extschema@.a2_schedule_wake(next);
	END IF;
	RETURN pg_catalog.to_timestamp(next / 1000.0);
END
$fn$;

COMMENT ON FUNCTION a2_set_schedule_paused(text, boolean, text) IS
'Used by a2_pause_schedule and a2_resume_schedule.';

CREATE FUNCTION a2_pause_schedule(name text)
RETURNS timestamptz
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT @extschema@.a2_set_schedule_paused(name, true, 'a2_pause_schedule') $fn$;

COMMENT ON FUNCTION a2_pause_schedule(text) IS
'Pause the schedule name (Z2003 when there is none): it fires nothing until resumed; returns its next tick. Ticks passed while paused follow its missed-tick policy at resume.';

CREATE FUNCTION a2_resume_schedule(name text)
RETURNS timestamptz
LANGUAGE sql
SET search_path = pg_catalog, pg_temp
AS $fn$ SELECT @extschema@.a2_set_schedule_paused(name, false, 'a2_resume_schedule') $fn$;

COMMENT ON FUNCTION a2_resume_schedule(text) IS
'Resume the schedule name (Z2003 when there is none); returns its next tick, which may be past: the next fire pass applies the missed-tick policy.';

CREATE FUNCTION a2_list_schedules()
RETURNS TABLE (name text, spec text, timezone text, session_id text, event jsonb,
			   missed text, backfill_limit integer, grace_ms bigint, paused boolean,
			   next_tick_at timestamptz, last_tick_at timestamptz, fired_count bigint,
			   created_at timestamptz, updated_at timestamptz)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	SELECT s.name, s.spec, s.timezone, s.session_id, s.event, s.missed, s.backfill_limit,
		   s.grace_ms, s.paused,
		   pg_catalog.to_timestamp(s.next_tick_at / 1000.0),
		   pg_catalog.to_timestamp(s.last_tick_at / 1000.0),
		   s.fired_count,
		   pg_catalog.to_timestamp(s.created_at / 1000.0),
		   pg_catalog.to_timestamp(s.updated_at / 1000.0)
	  FROM @extschema@.a2_schedules s
	 ORDER BY s.name
$fn$;

COMMENT ON FUNCTION a2_list_schedules() IS
'Every schedule, by name: its definition, whether it is paused, its next tick, the last tick it fired and how many ticks it fired.';

CREATE FUNCTION a2_fire_schedules(max_schedules integer DEFAULT NULL)
RETURNS TABLE (name text, tick_at timestamptz, session_id text, event_index bigint, event_id text)
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	now_ms bigint := @extschema@.a2_store_clock_ms();
	s record;
	p record;
	t bigint;
	r jsonb;
BEGIN
	IF max_schedules OPERATOR(pg_catalog.<) 1 THEN
		RAISE EXCEPTION 'argument "max_schedules" must be at least 1, not %', max_schedules
			USING ERRCODE = '22023';
	END IF;
	-- A row another pass holds is that pass's to fire: skip it.  A row it
	-- has already moved on fails the recheck of next_tick_at.  The most
	-- overdue first; max_schedules NULL: all of them.
	FOR s IN SELECT * FROM @extschema@.a2_schedules sc
			  WHERE NOT sc.paused AND sc.next_tick_at OPERATOR(pg_catalog.<=) now_ms
			  ORDER BY sc.next_tick_at, sc.name
			  LIMIT max_schedules
			  FOR UPDATE SKIP LOCKED
	LOOP
		p := @extschema@.a2_schedule_plan(s.spec, s.timezone, s.next_tick_at, now_ms, s.missed,
										   s.backfill_limit, s.grace_ms);
		FOREACH t IN ARRAY p.fire LOOP
			event_id := pg_catalog.format('schedule:%s@%s', s.name,
				pg_catalog.to_char(pg_catalog.to_timestamp(t / 1000.0) AT TIME ZONE 'UTC',
								   'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'));
			-- a repeat of a tick is an idempotent replay: same id, same event
			r := @extschema@.a2_append(s.session_id,
				pg_catalog.jsonb_build_array(s.event OPERATOR(pg_catalog.||)
											 pg_catalog.jsonb_build_object('id', event_id)));
			name := s.name;
			tick_at := pg_catalog.to_timestamp(t / 1000.0);
			session_id := s.session_id;
			event_index := (r->'events'->0->>'index')::bigint;
			RETURN NEXT;
		END LOOP;
		UPDATE @extschema@.a2_schedules sc
		   SET next_tick_at = p.next_tick,
			   last_tick_at = COALESCE(p.fire[pg_catalog.cardinality(p.fire)], sc.last_tick_at),
			   fired_count = sc.fired_count OPERATOR(pg_catalog.+) pg_catalog.cardinality(p.fire)
		 WHERE sc.name OPERATOR(pg_catalog.=) s.name;
	END LOOP;
END
$fn$;

COMMENT ON FUNCTION a2_fire_schedules(integer) IS
'Fire every tick due at the store clock (a2.now honoured) in the caller''s transaction, by each schedule''s missed-tick policy, of at most max_schedules schedules (NULL: all), most overdue first, and return what was appended. The background scheduler runs it at every tick with the wall clock, 1000 schedules per transaction; a tick never fires twice.';

-- The grant helpers give a worker a2_schedules (define, pause, fire) and a
-- monitor SELECT on it (a2_list_schedules); a2_revoke takes it back.
CREATE OR REPLACE FUNCTION a2_grant_worker(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_grant_worker');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %s TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_events TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_snapshots TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_snapshot_history TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, DELETE ON %s.a2_snapshot_pins TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_presence, %s.a2_presence_tombstones TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_session_locks, %s.a2_presence_locks TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_retired_last_index(text) TO %s', s, r);
	-- recurring schedules: define, pause, fire (0.4.0)
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_schedules TO %s', s, r);
	IF @extschema@.a2_is_distributed() THEN
		EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_retired_sessions TO %s', s, r);
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_grant_worker(regrole) IS
'Grant a role everything the worker protocol needs (append, read, claim, renew, complete, fail, claim_next, redrive, cancel, state, snapshots, presence, schedules), in single-node and distributed mode; idempotent.';

CREATE OR REPLACE FUNCTION a2_grant_monitor(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_grant_monitor');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %s TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_events, %s.a2_snapshots, %s.a2_snapshot_history TO %s', s, s, s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_metrics() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_status() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_wait(bigint) TO %s', s, r);
	-- a2_list_schedules reads the schedules as the caller (0.4.0)
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_schedules TO %s', s, r);
END
$fn$;

COMMENT ON FUNCTION a2_grant_monitor(regrole) IS
'Grant a role what monitoring needs: a2_metrics, a2_notify_status/a2_notify_wait and the inspection functions (a2_list_schedules too); idempotent.';

CREATE OR REPLACE FUNCTION a2_revoke(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_revoke');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_events, %s.a2_snapshots, %s.a2_snapshot_history, '
		'%s.a2_snapshot_pins, %s.a2_presence, %s.a2_presence_tombstones, %s.a2_session_locks, '
		'%s.a2_presence_locks, %s.a2_retired_sessions FROM %s', s, s, s, s, s, s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_schedules FROM %s', s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s.a2_retired_last_index(text), %s.a2_metrics(), '
		'%s.a2_notify_status(), %s.a2_notify_wait(bigint) FROM %s', s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE USAGE ON SCHEMA %s FROM %s', s, r);
END
$fn$;

COMMENT ON FUNCTION a2_revoke(regrole) IS
'Take back from a role every privilege a2_grant_worker or a2_grant_monitor grants.';

-- a2_metrics gains schedules, next_tick_at and last_tick_at after the
-- 0.3.0 columns.  Its EXECUTE grants (a2_grant_monitor's, by hand) are
-- carried over the DROP, which would lose them.
SELECT pg_catalog.set_config('a2_upgrade.metrics_grantees',
	COALESCE((SELECT pg_catalog.string_agg(a.grantee::regrole::text, ',')
				FROM pg_catalog.pg_proc p, pg_catalog.aclexplode(p.proacl) a
			   WHERE p.oid OPERATOR(pg_catalog.=) 'a2_metrics()'::regprocedure
				 AND a.privilege_type OPERATOR(pg_catalog.=) 'EXECUTE'
				 AND a.grantee OPERATOR(pg_catalog.<>) 0
				 AND a.grantee OPERATOR(pg_catalog.<>) p.proowner
				 AND a.grantee OPERATOR(pg_catalog.<>) 'pg_monitor'::regrole), ''), true);
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
	OUT schedules bigint,
	OUT next_tick_at timestamptz,
	OUT last_tick_at timestamptz,
	OUT cancelled_events bigint)
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
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (due, expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event, scheduled events (not yet due) and the earliest due time; recurring schedules, the next tick of an active one and the last tick fired; cancelled events still stored. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Costs one pass over the unprocessed events and one over the cancelled ones (a2_events_cancelled).';

REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;
DO $grants$
DECLARE
	r text;
BEGIN
	FOREACH r IN ARRAY pg_catalog.string_to_array(pg_catalog.current_setting('a2_upgrade.metrics_grantees'), ',') LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION a2_metrics() TO %s', r);
	END LOOP;
END
$grants$;

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
'Grant a role everything the worker protocol needs (append, read, claim, renew, complete, fail, claim_next, redrive, cancel, state, snapshots, presence, schedules), in single-node and distributed mode; idempotent.';

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
