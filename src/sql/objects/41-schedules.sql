-- Recurring schedules (docs/time.md, "Schedules").  A schedule appends
-- its event to its session at every tick of its spec.  The table is the
-- only record: a fire pass (a2_fire_schedules, which each database's
-- background scheduler runs at every tick, and which a test runs under
-- SET a2.now) locks the due rows, appends each tick's event with an id
-- derived from the schedule's name and the tick, and moves next_tick_at
-- in the same transaction, so no tick fires twice.  Times are epoch
-- milliseconds, as in a2_events.  The SQL functions are SECURITY
-- INVOKER: table privileges decide who may schedule.

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
