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
	PERFORM @extschema@.a2_refuse_distributed('a2_schedule');
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

	now_ms := @extschema@.a2_now_ms();
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
	   SET paused = pause, updated_at = @extschema@.a2_now_ms()
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
	now_ms bigint := @extschema@.a2_now_ms();
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
	-- overdue first; max_schedules NULL: all of them.  They are locked all
	-- at once and fired in session order: each append takes its session's
	-- lock to the end of the transaction, and two passes taking them in
	-- different orders (schedules sharing sessions) deadlocked.
	FOR s IN SELECT d.* FROM (
				SELECT * FROM @extschema@.a2_schedules sc
				 WHERE NOT sc.paused AND sc.next_tick_at OPERATOR(pg_catalog.<=) now_ms
				 ORDER BY sc.next_tick_at, sc.name
				 LIMIT max_schedules
				 FOR UPDATE SKIP LOCKED) d
			  ORDER BY d.session_id, d.next_tick_at, d.name
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

-- The grant helpers give a worker a2_schedules (define, pause, fire) and
-- the dispatch tables (a2_queues, a2_limits, a2_rate_claims: see the queues
-- section below), a monitor SELECT on them; a2_revoke takes them back.
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
	-- 0.4.0 dispatch control: claims read the paused queues and the limits
	-- and keep the rate log (39-dispatch.sql)
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_queues, %s.a2_limits TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, DELETE ON %s.a2_rate_claims TO %s', s, r);
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
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_queues, %s.a2_limits, %s.a2_rate_claims TO %s', s, s, s, r);
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
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_queues, %s.a2_limits, %s.a2_rate_claims FROM %s', s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s.a2_retired_last_index(text), %s.a2_metrics(), '
		'%s.a2_notify_status(), %s.a2_notify_wait(bigint) FROM %s', s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE USAGE ON SCHEMA %s FROM %s', s, r);
END
$fn$;

COMMENT ON FUNCTION a2_revoke(regrole) IS
'Take back from a role every privilege a2_grant_worker or a2_grant_monitor grants.';

-- a2_metrics gains schedules, next_tick_at, last_tick_at, cancelled_events,
-- paused_queues, keys_at_limit and queues after the 0.3.0 columns, and
-- enable_indexscan = off (a bitmap scan of the unprocessed rows).  Its EXECUTE grants (a2_grant_monitor's, by hand) are
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

-- == queues, priorities, concurrency and rate limits, pause (issue 27a) ====

-- New columns, NULL for the defaults (an event that uses none of them
-- stores no more bytes than in 0.3.0).
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS queue text;
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS priority integer;
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS concurrency_key text;

COMMENT ON COLUMN a2_events.queue IS
'The event''s queue (JSON "queue"); NULL: the queue ''default''.';
COMMENT ON COLUMN a2_events.priority IS
'The event''s priority (JSON "priority", -32768..32767, higher is served first by a2_claim_next); NULL: 0.';
COMMENT ON COLUMN a2_events.concurrency_key IS
'The event''s concurrency key (JSON "concurrencyKey"); the limits of a2_limits for that key apply to its claims; NULL: no key.';

-- a2_events_available becomes a2_events_default_available, which holds
-- the default queue's priority-0 work only (the same entries on an updated
-- database, whose events all have queue and priority NULL).  A new name,
-- so that a2-prepare--0.3.0--0.4.0.sql builds it concurrently; the old
-- index is dropped once the new one is there.
CREATE INDEX IF NOT EXISTS a2_events_default_available
	ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND queue IS NULL AND priority IS NULL;

DROP INDEX IF EXISTS a2_events_available;

CREATE INDEX IF NOT EXISTS a2_events_queue_available
	ON a2_events (queue, (COALESCE(priority, 0)),
				  (COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	INCLUDE (concurrency_key, priority, claim_expires_at, not_before, created_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

CREATE INDEX IF NOT EXISTS a2_events_level_available
	ON a2_events ((COALESCE(priority, 0)) DESC,
				  (COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	INCLUDE (queue, concurrency_key)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

CREATE INDEX IF NOT EXISTS a2_events_queue_retry
	ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))))
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

CREATE INDEX IF NOT EXISTS a2_events_key_leases
	ON a2_events (concurrency_key, claim_expires_at)
	WHERE concurrency_key IS NOT NULL AND processed_at IS NULL AND failed_at IS NULL
	  AND claim_expires_at IS NOT NULL;

-- a2_claim and a2_claim_next gain "queues text[] DEFAULT NULL".
DROP FUNCTION a2_claim(text, text, bigint, timestamptz, bigint[]);
DROP FUNCTION a2_claim_next(text, bigint, integer, timestamptz);

CREATE FUNCTION a2_claim(session_id text,
						 holder text,
						 ttl_ms bigint,
						 expires_at timestamptz DEFAULT NULL,
						 exclude_indexes bigint[] DEFAULT '{}',
						 queues text[] DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim(text, text, bigint, timestamptz, bigint[], text[]) IS
'Lease every eligible event of a session to holder (only events in the given queues when queues is not NULL; never in a paused queue; within the concurrency and rate limits of their keys); returns {"outcome":"claimed","events":[...]}, {"outcome":"busy","retryAt":iso} or {"outcome":"settled"}.';

CREATE FUNCTION a2_claim_next(holder text,
							  ttl_ms bigint,
							  max_sessions integer DEFAULT 1,
							  expires_at timestamptz DEFAULT NULL,
							  queues text[] DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim_next'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim_next(text, bigint, integer, timestamptz, text[]) IS
'Claim, by a2_claim''s rule, every eligible event of up to max_sessions sessions that have eligible work now (in the given queues when queues is not NULL, never in a paused queue), highest priority first, then oldest available work first, skipping (never waiting for) sessions other transactions are claiming; returns {"claims":[{"sessionId","events":[StoredEvent]}],"retryAt":iso|null}, retryAt being the earliest time more work becomes available.';

-- Queues an operator has paused.  A queue needs no row to exist: an event
-- names it.  Claims skip a paused queue; nothing else changes.
CREATE TABLE a2_queues (
	queue		text	PRIMARY KEY,
	paused		boolean NOT NULL DEFAULT false,
	paused_at	bigint,
	CHECK (pg_catalog.octet_length(queue) BETWEEN 1 AND 1024)
);
SELECT pg_catalog.pg_extension_config_dump('a2_queues', '');

COMMENT ON TABLE a2_queues IS
'Queues with a setting (paused); a2_pause_queue/a2_resume_queue write it.  A queue without a row is not paused.';

-- The limits per concurrency key.  max_leased: at most this many events
-- with the key are leased (lease live) at any instant.  rate_max per
-- rate_per_ms: at most rate_max claims of events with the key start in any
-- window (t - rate_per_ms, t] of the store clock.
CREATE TABLE a2_limits (
	key			text	PRIMARY KEY,
	max_leased	integer CHECK (max_leased >= 1),
	rate_max	integer CHECK (rate_max >= 1),
	rate_per_ms bigint	CHECK (rate_per_ms >= 1),
	CHECK ((rate_max IS NULL) = (rate_per_ms IS NULL)),
	CHECK (max_leased IS NOT NULL OR rate_max IS NOT NULL),
	CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024)
);
SELECT pg_catalog.pg_extension_config_dump('a2_limits', '');

COMMENT ON TABLE a2_limits IS
'Concurrency and rate limits per concurrency key (a2_set_concurrency_limit, a2_set_rate_limit).';

-- Every claim reads the paused queues, and a claim of an event with a key
-- reads the key's limits: readable by PUBLIC (settings, no payloads), so
-- a worker role granted the 0.3.0 set by hand keeps claiming after the
-- update.  Writing them takes the table privileges (the owner's, or what
-- an operator grants).
GRANT SELECT ON a2_queues, a2_limits TO PUBLIC;

-- The claims that started, per rate-limited key, in the last window: the
-- claim writes one row per event it claims with such a key and removes
-- the rows that left the window (src/limits.c).
CREATE TABLE a2_rate_claims (
	key			text	NOT NULL,
	claimed_at	bigint	NOT NULL
);
CREATE INDEX a2_rate_claims_key ON a2_rate_claims (key, claimed_at);

COMMENT ON TABLE a2_rate_claims IS
'When each recent claim of an event with a rate-limited key started (kept for one window; src/limits.c).';

-- The store clock (docs/semantics.md "Clock"; a2.now when set), in epoch
-- milliseconds, for the SQL functions below.
CREATE FUNCTION a2_now_ms()
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_now_ms'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION a2_now_ms() IS
'One reading of the store clock in epoch milliseconds: a2.now when set, else the wall clock.';

-- Called by the claim statements only (src/claim.c): whether the event
-- with this key may be claimed now, within its key's limits.  Takes the
-- key's try-lock; outside a claim it raises 55000.
CREATE FUNCTION a2_admit(key text, now_ms bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'a2_admit'
LANGUAGE C VOLATILE PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION a2_admit(text, bigint) IS
'Internal: called by a2_claim and a2_claim_next for each eligible event with a concurrency key; not for direct use.';

-- The controls and schedules are single-node only (docs/distributed.md): a
-- paused queue and a limit would have to be seen by claims on every node.
CREATE FUNCTION a2_refuse_distributed(caller text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF @extschema@.a2_is_distributed() THEN
		RAISE EXCEPTION '% is not supported in distributed mode', caller
			USING ERRCODE = '0A000', DETAIL = 'Queues, priorities, limits and schedules are single-node features; see docs/distributed.md.';
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_refuse_distributed(text) IS
'Internal: raises 0A000 in distributed mode, naming the caller.';

CREATE FUNCTION a2_check_queue_name(queue text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'argument "queue" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(queue) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "queue" must be a non-empty string of at most 1024 bytes'
			USING ERRCODE = '22023';
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_check_queue_name(text) IS
'Internal: raises 22004 for a NULL queue name, 22023 for an empty one or one over 1024 bytes.';

CREATE FUNCTION a2_pause_queue(queue text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	was boolean;
BEGIN
	PERFORM @extschema@.a2_check_queue_name(queue);
	PERFORM @extschema@.a2_refuse_distributed('a2_pause_queue');
	SELECT q.paused INTO was FROM @extschema@.a2_queues q WHERE q.queue OPERATOR(pg_catalog.=) a2_pause_queue.queue;
	INSERT INTO @extschema@.a2_queues AS q (queue, paused, paused_at)
	VALUES (a2_pause_queue.queue, true, @extschema@.a2_now_ms())
	ON CONFLICT ON CONSTRAINT a2_queues_pkey DO UPDATE
		SET paused = true, paused_at = COALESCE(q.paused_at, excluded.paused_at);
	RETURN pg_catalog.jsonb_build_object('queue', queue, 'paused', true,
										 'changed', NOT COALESCE(was, false));
END
$fn$;

COMMENT ON FUNCTION a2_pause_queue(text) IS
'Pause a queue: a2_claim and a2_claim_next skip its events until a2_resume_queue; appends, renewals, completions and failures go on.  Idempotent; returns {queue, paused, changed}.';

CREATE FUNCTION a2_resume_queue(queue text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	was boolean;
	now_ms bigint := @extschema@.a2_now_ms();
	r record;
	announced integer := 0;
BEGIN
	PERFORM @extschema@.a2_check_queue_name(queue);
	PERFORM @extschema@.a2_refuse_distributed('a2_resume_queue');
	DELETE FROM @extschema@.a2_queues q WHERE q.queue OPERATOR(pg_catalog.=) a2_resume_queue.queue
	RETURNING q.paused INTO was;
	IF COALESCE(was, false) THEN
		-- a due announcement per session with work available now, oldest
		-- first, at most 100 (a worker that hears one claims with
		-- a2_claim_next, which finds the rest)
		FOR r IN
			SELECT e.session_id, pg_catalog.max(e.idx) AS idx
			  FROM (SELECT x.session_id, x.idx FROM @extschema@.a2_events x
					 WHERE x.lane_ready AND x.processed_at IS NULL AND x.failed_at IS NULL
					   AND (x.queue IS NOT NULL OR x.priority IS NOT NULL)
					   AND x.queue IS NOT DISTINCT FROM NULLIF(a2_resume_queue.queue, 'default')
					   AND COALESCE(x.claim_expires_at, GREATEST(x.not_before, x.created_at)) OPERATOR(pg_catalog.<=) now_ms
					UNION ALL
					SELECT x.session_id, x.idx FROM @extschema@.a2_events x
					 WHERE x.lane_ready AND x.processed_at IS NULL AND x.failed_at IS NULL
					   AND x.queue IS NULL AND x.priority IS NULL
					   AND a2_resume_queue.queue OPERATOR(pg_catalog.=) 'default'
					   AND COALESCE(x.claim_expires_at, GREATEST(x.not_before, x.created_at)) OPERATOR(pg_catalog.<=) now_ms
					 LIMIT 1000) e
			 GROUP BY e.session_id
			 LIMIT 100
		LOOP
			PERFORM pg_catalog.pg_notify('a2_events',
				pg_catalog.format('{"sessionId": %s, "index": %s}', pg_catalog.to_json(r.session_id), r.idx));
			announced := announced OPERATOR(pg_catalog.+) 1;
		END LOOP;
	END IF;
	RETURN pg_catalog.jsonb_build_object('queue', queue, 'paused', false,
										 'changed', COALESCE(was, false), 'announced', announced);
END
$fn$;

COMMENT ON FUNCTION a2_resume_queue(text) IS
'Resume a paused queue: its work is claimable at once, and a due announcement (NOTIFY a2_events) goes out at commit for each of up to 100 sessions with work available in it.  Idempotent; returns {queue, paused, changed, announced}.';

-- Any change to a2_limits (by the setters below or by hand) ends every
-- parked key at the commit (src/key_park.c): a changed limit is applied
-- by the next claim.
CREATE FUNCTION a2_limits_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'a2_limits_changed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION a2_limits_changed() IS
'Internal: the statement trigger of a2_limits; a changed limit applies to the claims that start after the commit.  Not for direct use.';

CREATE TRIGGER a2_limits_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON a2_limits
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.a2_limits_changed();

CREATE FUNCTION a2_set_concurrency_limit(key text, max_leased integer)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM @extschema@.a2_refuse_distributed('a2_set_concurrency_limit');
	IF key IS NULL THEN
		RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(key) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "key" must be a non-empty string of at most 1024 bytes' USING ERRCODE = '22023';
	END IF;
	IF max_leased IS NOT NULL AND max_leased < 1 THEN
		RAISE EXCEPTION 'argument "max_leased" must be at least 1, not %', max_leased USING ERRCODE = '22023',
			HINT = 'Pass NULL to remove the limit.';
	END IF;
	IF max_leased IS NULL THEN
		DELETE FROM @extschema@.a2_limits l
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_concurrency_limit.key AND l.rate_max IS NULL;
		UPDATE @extschema@.a2_limits l SET max_leased = NULL WHERE l.key OPERATOR(pg_catalog.=) a2_set_concurrency_limit.key;
	ELSE
		INSERT INTO @extschema@.a2_limits AS l (key, max_leased) VALUES (key, max_leased)
		ON CONFLICT ON CONSTRAINT a2_limits_pkey DO UPDATE SET max_leased = excluded.max_leased;
	END IF;
	RETURN pg_catalog.jsonb_build_object('key', key, 'maxLeased', max_leased);
END
$fn$;

COMMENT ON FUNCTION a2_set_concurrency_limit(text, integer) IS
'At most max_leased events with this concurrency key are leased at any instant; claims skip the rest.  NULL removes the limit.  Returns {key, maxLeased}.';

CREATE FUNCTION a2_set_rate_limit(key text, max_claims integer, per_ms bigint)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM @extschema@.a2_refuse_distributed('a2_set_rate_limit');
	IF key IS NULL THEN
		RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(key) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "key" must be a non-empty string of at most 1024 bytes' USING ERRCODE = '22023';
	END IF;
	IF (max_claims IS NULL) <> (per_ms IS NULL) THEN
		RAISE EXCEPTION 'arguments "max_claims" and "per_ms" must both be null or both be set' USING ERRCODE = '22004',
			HINT = 'Pass NULL for both to remove the limit.';
	END IF;
	IF max_claims IS NOT NULL AND max_claims < 1 THEN
		RAISE EXCEPTION 'argument "max_claims" must be at least 1, not %', max_claims USING ERRCODE = '22023';
	END IF;
	IF per_ms IS NOT NULL AND per_ms < 1 THEN
		RAISE EXCEPTION 'argument "per_ms" must be at least 1, not %', per_ms USING ERRCODE = '22023';
	END IF;
	IF max_claims IS NULL THEN
		DELETE FROM @extschema@.a2_limits l
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_rate_limit.key AND l.max_leased IS NULL;
		UPDATE @extschema@.a2_limits l SET rate_max = NULL, rate_per_ms = NULL
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_rate_limit.key;
	ELSE
		INSERT INTO @extschema@.a2_limits AS l (key, rate_max, rate_per_ms) VALUES (key, max_claims, per_ms)
		ON CONFLICT ON CONSTRAINT a2_limits_pkey DO UPDATE
			SET rate_max = excluded.rate_max, rate_per_ms = excluded.rate_per_ms;
	END IF;
	RETURN pg_catalog.jsonb_build_object('key', key, 'maxClaims', max_claims, 'perMs', per_ms);
END
$fn$;

COMMENT ON FUNCTION a2_set_rate_limit(text, integer, bigint) IS
'At most max_claims claims of events with this concurrency key start in any window of per_ms milliseconds of the store clock; claims skip the rest.  NULL, NULL removes the limit.  Returns {key, maxClaims, perMs}.';

-- One row per queue that has unfinished work or a setting; counts from the
-- partial indexes of unfinished events (the cost of a2_metrics).
CREATE FUNCTION a2_list_queues()
RETURNS TABLE (queue text, paused boolean, available bigint, leased bigint,
			   scheduled bigint, oldest_available_at timestamptz, keys_at_limit text[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	WITH now AS (SELECT @extschema@.a2_now_ms() AS ms),
	w AS (
		SELECT COALESCE(e.queue, 'default') AS queue, e.concurrency_key,
			   e.claim_expires_at, e.not_before, e.created_at
		  FROM @extschema@.a2_events e
		 WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL
	), lim AS (
		SELECT l.key FROM @extschema@.a2_limits l, now
		 WHERE l.max_leased IS NOT NULL
		   AND (SELECT pg_catalog.count(*) FROM @extschema@.a2_events k
				 WHERE k.concurrency_key OPERATOR(pg_catalog.=) l.key AND k.processed_at IS NULL
				   AND k.failed_at IS NULL AND k.claim_expires_at IS NOT NULL
				   AND k.claim_expires_at OPERATOR(pg_catalog.>) now.ms) OPERATOR(pg_catalog.>=) l.max_leased
	), per AS (
		SELECT w.queue,
			   pg_catalog.count(*) FILTER (WHERE COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)) OPERATOR(pg_catalog.<=) now.ms) AS available,
			   pg_catalog.count(*) FILTER (WHERE w.claim_expires_at OPERATOR(pg_catalog.>) now.ms) AS leased,
			   pg_catalog.count(*) FILTER (WHERE w.claim_expires_at IS NULL AND w.not_before OPERATOR(pg_catalog.>) now.ms) AS scheduled,
			   pg_catalog.min(COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)))
				 FILTER (WHERE COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)) OPERATOR(pg_catalog.<=) now.ms) AS oldest,
			   pg_catalog.array_agg(DISTINCT w.concurrency_key) FILTER (WHERE w.concurrency_key IN (SELECT lim.key FROM lim)) AS keys
		  FROM w, now GROUP BY w.queue
	)
	SELECT COALESCE(per.queue, q.queue), COALESCE(q.paused, false),
		   COALESCE(per.available, 0), COALESCE(per.leased, 0), COALESCE(per.scheduled, 0),
		   pg_catalog.to_timestamp(per.oldest / 1000.0), COALESCE(per.keys, '{}')
	  FROM per FULL JOIN @extschema@.a2_queues q ON q.queue OPERATOR(pg_catalog.=) per.queue
	 ORDER BY 1
$fn$;

COMMENT ON FUNCTION a2_list_queues() IS
'Each queue with unfinished work or a setting: whether it is paused, its available, leased and scheduled lane-ready events, the oldest available time, and the concurrency keys of its work that are at their limit.';

CREATE FUNCTION a2_list_limits()
RETURNS TABLE (key text, max_leased integer, leased bigint, rate_max integer, rate_per_ms bigint,
			   claims_in_window bigint, at_limit boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	WITH now AS (SELECT @extschema@.a2_now_ms() AS ms)
	SELECT l.key, l.max_leased, c.leased, l.rate_max, l.rate_per_ms, r.claims,
		   (l.max_leased IS NOT NULL AND c.leased OPERATOR(pg_catalog.>=) l.max_leased)
		   OR (l.rate_max IS NOT NULL AND r.claims OPERATOR(pg_catalog.>=) l.rate_max)
	  FROM @extschema@.a2_limits l CROSS JOIN now
	  CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS leased FROM @extschema@.a2_events k
		 WHERE k.concurrency_key OPERATOR(pg_catalog.=) l.key AND k.processed_at IS NULL
		   AND k.failed_at IS NULL AND k.claim_expires_at IS NOT NULL
		   AND k.claim_expires_at OPERATOR(pg_catalog.>) now.ms) c
	  CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS claims FROM @extschema@.a2_rate_claims x
		 WHERE l.rate_per_ms IS NOT NULL AND x.key OPERATOR(pg_catalog.=) l.key
		   AND x.claimed_at OPERATOR(pg_catalog.>) (now.ms OPERATOR(pg_catalog.-) l.rate_per_ms)) r
	 ORDER BY l.key
$fn$;

COMMENT ON FUNCTION a2_list_limits() IS
'Each concurrency key with a limit: the limits, its live leases, its claims in the current rate window, and whether it is at a limit now.';

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

-- == durable waits (issue 28, part 2) ======================================

-- docs/semantics.md, "Waits".  NULL in both columns for every existing event.
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS wait_for jsonb;
ALTER TABLE a2_events ADD COLUMN IF NOT EXISTS wait_result jsonb;

COMMENT ON COLUMN a2_events.wait_for IS
'The event''s wait (waitFor): {"types": [...], "timeoutMs": n, "until": epoch ms, "notBefore": epoch ms}; until and notBefore are kept for a2 (the timeout''s due time, the event''s own notBefore); NULL: no wait.';
COMMENT ON COLUMN a2_events.wait_result IS
'How the wait ended when an awaited event ended it: {"index": n, "type": t}; NULL while waiting, after a timeout (derived: now >= until) and without a wait.';

-- No entry after the update (no event waits yet), but building it reads
-- a2_events once; a2-prepare--0.3.0--0.4.0.sql builds it beforehand,
-- concurrently ("Upgrading without an outage", docs/operations.md).
CREATE INDEX IF NOT EXISTS a2_events_waiting ON a2_events (session_id, idx)
	WHERE wait_for IS NOT NULL AND wait_result IS NULL AND processed_at IS NULL;

-- == distributed mode: 0.4.0's own tables stay on the coordinator =========

-- a2_distribute() refuses an extension table it has no rule for, so that a
-- new table is never left undistributed by mistake.  The queue, limit and
-- schedule tables get the rule 'local': their features are refused in
-- distributed mode (docs/distributed.md), and the tables stay empty.
CREATE OR REPLACE FUNCTION a2_distribute(shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	-- Every extension table and how it is distributed ('local': not at
	-- all); the first table of a group anchors the colocation group.  A new
	-- table is one line here.
	tables CONSTANT text[][] := ARRAY[
		['a2_events',              'session_id'],
		['a2_snapshots',           'session_id'],
		['a2_snapshot_history',    'session_id'],
		['a2_snapshot_pins',       'session_id'],
		['a2_session_locks',       'session_id'],
		['a2_retired_sessions',    'session_id'],
		['a2_presence',            'ns'],
		['a2_presence_tombstones', 'ns'],
		['a2_presence_locks',      'ns'],
		-- on the coordinator only, never distributed: the features they
		-- serve are refused in distributed mode (docs/distributed.md,
		-- "Queues, priorities, limits, schedules and waits"), so they stay empty
		['a2_queues',              'local'],
		['a2_limits',              'local'],
		['a2_rate_claims',         'local'],
		['a2_schedules',           'local']];
	-- Index changes, run on every node (the extension created the tables on
	-- each node, so Citus does not re-create the workers' copies).
	index_ddl CONSTANT text[] := ARRAY[
		'CREATE UNIQUE INDEX IF NOT EXISTS a2_events_session_event_id'
		' ON @extschema@.a2_events (session_id, event_id)',
		'DROP INDEX IF EXISTS @extschema@.a2_events_event_id'];
	ext_schema CONSTANT text := '@extschema@';
	rel regclass;
	anchor regclass;
	ddl text;
	fn record;
	res record;
	missing text;
	already boolean;
BEGIN
	IF shard_count IS NOT NULL AND shard_count < 1 THEN
		RAISE EXCEPTION 'shard_count must be at least 1, not %', shard_count
			USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'a2_distribute needs the citus extension'
			USING ERRCODE = '0A000',
				  HINT = 'Preload citus (shared_preload_libraries = ''citus,a2''), CREATE EXTENSION citus, add the workers, then call a2_distribute() on the coordinator.';
	END IF;
	IF NOT citus_is_coordinator() THEN
		RAISE EXCEPTION 'a2_distribute must run on the Citus coordinator'
			USING ERRCODE = '0A000';
	END IF;

	-- Refuse tables nobody told us how to distribute (a new table that
	-- lacks its line above), before changing anything.
	SELECT string_agg(c.relname, ', ' ORDER BY c.relname) INTO missing
	  FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	 WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
	   AND d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
	   AND c.relkind = 'r'
	   AND c.relname <> ALL (tables[:][1:1]);
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'a2_distribute has no distribution rule for table(s) %', missing
			USING ERRCODE = '0A000',
				  HINT = 'Add a line for each table to the list in a2_distribute.';
	END IF;

	-- 1. Event ids unique per session, on every node.  Here only while the
	--    tables are still local (Citus refuses unique indexes without
	--    session_id, and this copy is then the distributed table's).  On
	--    the workers every time: a node added since the first call still
	--    has the single-node indexes on its own, unused a2_events, so
	--    calling a2_distribute() again after citus_add_node makes every
	--    node alike.  A worker refuses DDL on a distributed table's local
	--    copy unless DDL propagation is off for the command.
	already := EXISTS (SELECT 1 FROM pg_dist_partition p
						WHERE p.logicalrelid = format('%I.%I', ext_schema, 'a2_events')::regclass);
	FOREACH ddl IN ARRAY index_ddl LOOP
		IF NOT already THEN
			EXECUTE ddl;
		END IF;
		FOR res IN SELECT * FROM run_command_on_workers(
				'SET LOCAL citus.enable_ddl_propagation = off; ' || ddl) LOOP
			IF NOT res.success THEN
				RAISE EXCEPTION 'a2_distribute could not change the indexes of worker %:%', res.nodename, res.nodeport
					USING ERRCODE = 'XX000', DETAIL = res.result;
			END IF;
		END LOOP;
	END LOOP;

	-- 2. Distribute the tables (a table already distributed is skipped).
	anchor := NULL;
	FOR i IN 1 .. array_length(tables, 1) LOOP
		CONTINUE WHEN tables[i][2] = 'local';
		rel := format('%I.%I', ext_schema, tables[i][1])::regclass;
		IF NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = rel) THEN
			IF anchor IS NULL THEN
				PERFORM create_distributed_table(rel, tables[i][2],
												 colocate_with => 'none',
												 shard_count => shard_count);
			ELSE
				PERFORM create_distributed_table(rel, tables[i][2],
												 colocate_with => anchor::text);
			END IF;
		END IF;
		anchor := COALESCE(anchor, rel);
	END LOOP;

	-- 3. Delegate every C function whose first argument is the
	--    distribution column (session_id or ns) to the node of that shard,
	--    even inside a transaction block (force_delegation).  SQL helpers
	--    such as a2_retired_last_index are called inside a2's own
	--    statements, not by clients, and stay local.
	FOR fn IN
		SELECT p.oid::regprocedure AS sig, p.proargnames[1] AS arg
		  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
		 WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
		   AND d.refclassid = 'pg_extension'::regclass
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
		   AND p.proargnames[1] IN ('session_id', 'ns')
		   AND p.prolang = (SELECT l.oid FROM pg_language l WHERE l.lanname = 'c')
		 ORDER BY p.oid
	LOOP
		PERFORM create_distributed_function(fn.sig, fn.arg,
											colocate_with => format('%I.%I', ext_schema, 'a2_events'),
											force_delegation => true);
	END LOOP;
END
$fn$;

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
