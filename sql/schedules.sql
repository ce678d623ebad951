--
-- schedules: recurring schedules (docs/time.md, "Schedules"), driven by
-- a2.now through a2_fire_schedules(), the pass the background scheduler
-- runs with the wall clock.  Each call, the missed-tick policies, pause
-- and resume, replace, time zones, exactly once per tick, metrics,
-- grants, and each error with its SQLSTATE, nothing written.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

-- fired(): one line per appended tick event
CREATE FUNCTION pg_temp.fire() RETURNS TABLE (name text, tick text, session_id text, idx bigint, event_id text)
LANGUAGE sql AS $$
  SELECT f.name, to_char(f.tick_at, 'YYYY-MM-DD HH24:MI'), f.session_id, f.event_index, f.event_id
    FROM a2_fire_schedules() f
$$;
CREATE FUNCTION pg_temp.state() RETURNS TABLE (name text, paused boolean, next_tick text, last_tick text, fired bigint)
LANGUAGE sql AS $$
  SELECT s.name, s.paused, to_char(s.next_tick_at, 'YYYY-MM-DD HH24:MI'),
         to_char(s.last_tick_at, 'YYYY-MM-DD HH24:MI'), s.fired_count
    FROM a2_list_schedules() s
$$;

-- == create: returns the first tick after the store clock ==
SET a2.now = '2031-06-01 09:59:30Z';
SELECT a2_schedule('hourly', '0 * * * *', 'reports', '{"type": "report.hourly", "payload": {"kind": "sales"}}');
SELECT name, spec, timezone, session_id, event, missed, backfill_limit, grace_ms, paused,
       next_tick_at, last_tick_at, fired_count, created_at, updated_at
  FROM a2_list_schedules();
-- nothing is due yet
SELECT * FROM pg_temp.fire();

-- == a tick fires once ==
SET a2.now = '2031-06-01 10:00:00.004Z';
SELECT * FROM pg_temp.fire();
-- a second pass at the same clock, or a bit later, fires nothing
SELECT * FROM pg_temp.fire();
SET a2.now = '2031-06-01 10:30Z';
SELECT * FROM pg_temp.fire();
SELECT * FROM pg_temp.state();
-- the event as a2_append stored it: the id is derived from name and tick
SELECT e ->> 'id' AS id, e ->> 'type' AS type, e -> 'payload' AS payload, e ->> 'createdAt' AS created_at
  FROM jsonb_array_elements(a2_read('reports', 0)) e;
-- a repeat of the tick would be an idempotent replay of that append: same index, nothing new
SELECT a2_append('reports', '[{"id": "schedule:hourly@2031-06-01T10:00:00.000Z", "type": "report.hourly", "payload": {"kind": "sales"}}]') -> 'events' -> 0 ->> 'index' AS replayed_index;
SELECT count(*) FROM a2_events WHERE session_id = 'reports';

-- == missed ticks: latest (the default) fires the last one once ==
SET a2.now = '2031-06-01 13:20Z';
SELECT * FROM pg_temp.fire();
SELECT * FROM pg_temp.state();

-- == backfill: every missed tick, up to backfillLimit (the latest ones) ==
SET a2.now = '2031-06-01 13:20Z';
SELECT a2_schedule('bf', '*/10 * * * *', 'bf-session', '{"type": "tick"}', '{"missed": "backfill", "backfillLimit": 4}');
SET a2.now = '2031-06-01 13:30Z';
SELECT * FROM pg_temp.fire();
-- down for an hour: 6 ticks missed, the last 4 fire, oldest first
SET a2.now = '2031-06-01 14:35Z';
SELECT * FROM pg_temp.fire();

-- == skip: only a tick at most graceMs late fires ==
SET a2.now = '2031-06-01 14:35Z';
SELECT a2_schedule('sk', '*/10 * * * *', 'sk-session', '{"type": "tick"}', '{"missed": "skip", "graceMs": 30000}');
SET a2.now = '2031-06-01 14:40:29Z';
SELECT * FROM pg_temp.fire();
SET a2.now = '2031-06-01 15:20:31Z';
SELECT * FROM pg_temp.fire();
SELECT * FROM pg_temp.state() WHERE name = 'sk';

-- == pause and resume ==
SELECT a2_pause_schedule('hourly');
SET a2.now = '2031-06-01 16:30Z';
SELECT * FROM pg_temp.fire();
SELECT * FROM pg_temp.state() WHERE name = 'hourly';
-- resume: the ticks passed while paused follow the policy (latest: 16:00 once)
SELECT a2_resume_schedule('hourly');
SELECT * FROM pg_temp.fire();
-- pausing twice, resuming twice: no change but updated_at
SELECT a2_resume_schedule('hourly');
-- created paused
SELECT a2_schedule('later', '@daily', 'later-session', '{"type": "t"}', '{"paused": true}');
SET a2.now = '2031-06-03 00:00Z';
SELECT * FROM pg_temp.fire();

-- == replace: a new definition; the last fired tick never fires again ==
SET a2.now = '2031-06-03 10:00Z';
SELECT * FROM pg_temp.fire();
SELECT a2_schedule('hourly', '0 10 * * *', 'reports', '{"type": "report.daily"}');
SELECT * FROM pg_temp.state() WHERE name = 'hourly';
SELECT * FROM pg_temp.fire();

-- == a time zone: weekdays at 09:00 in Berlin (07:00 UTC in summer) ==
SELECT a2_schedule('berlin', '0 9 * * mon-fri', 'berlin-session', '{"type": "standup"}', '{"timezone": "Europe/Berlin"}');
SET a2.now = '2031-06-05 07:00Z';
SELECT * FROM pg_temp.fire();
SELECT * FROM pg_temp.state() WHERE name = 'berlin';

-- == an interval ==
SELECT a2_schedule('every5', 'every 5 minutes', 'every5-session', '{"type": "poll", "lane": "l1", "settled": true}');
SET a2.now = '2031-06-05 07:05Z';
SELECT * FROM pg_temp.fire();
SELECT e ->> 'lane' AS lane, e ->> 'processedAt' IS NOT NULL AS settled
  FROM jsonb_array_elements(a2_read('every5-session', 0)) e;

-- == metrics: schedules, the next tick of an active one, the last tick fired ==
SELECT schedules, next_tick_at, last_tick_at FROM a2_metrics();

-- == max_schedules: at most that many schedules, the most overdue first (ties by name) ==
SET a2.now = '2031-06-05 07:20Z';
SELECT name, to_char(tick_at, 'HH24:MI') AS tick FROM a2_fire_schedules(1);
SELECT name, to_char(tick_at, 'HH24:MI') AS tick FROM a2_fire_schedules(NULL);

-- == unschedule ==
SELECT a2_unschedule('every5');
SELECT a2_unschedule('every5');
SELECT name FROM a2_list_schedules();

-- == errors: nothing written ==
\set VERBOSITY default
\set SHOW_CONTEXT never
SELECT count(*) AS schedules_before FROM a2_schedules;
SELECT a2_schedule(NULL, '@hourly', 's', '{"type": "t"}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_schedule('x', NULL, 's', '{"type": "t"}');
SELECT a2_schedule('x', '@hourly', NULL, '{"type": "t"}');
SELECT a2_schedule('x', '@hourly', 's', NULL);
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_schedule('', '@hourly', 's', '{"type": "t"}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_schedule(repeat('n', 257), '@hourly', 's', '{"type": "t"}');
SELECT a2_schedule('x', '@hourly', '', '{"type": "t"}');
SELECT a2_schedule('x', '61 * * * *', 's', '{"type": "t"}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_schedule('x', '0 0 31 4 *', 's', '{"type": "t"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"timezone": "Europe/Atlantis"}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"timezone": 1}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"missed": "all"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"backfillLimit": 0}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"backfillLimit": 1.5}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"graceMs": -1}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"paused": "yes"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '{"timeZone": "UTC"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t"}', '[]');
SELECT a2_schedule('x', '@hourly', 's', '[{"type": "t"}]');
SELECT a2_schedule('x', '@hourly', 's', '{"payload": 1}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t", "color": "red"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t", "id": "mine"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t", "notBefore": "2031-06-05T08:00:00Z"}');
SELECT a2_schedule('x', '@hourly', 's', '{"type": "t", "cause": {"index": 1, "attempt": 1}}');
-- a replace that fails keeps the old definition
SELECT a2_schedule('hourly', 'every 0 seconds', 'reports', '{"type": "t"}');
SELECT name, spec FROM a2_list_schedules() WHERE name = 'hourly';
SELECT * FROM a2_fire_schedules(0);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_pause_schedule('nope');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_resume_schedule('nope');
SELECT a2_pause_schedule(NULL);
SELECT a2_unschedule(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS schedules_after FROM a2_schedules;
\set VERBOSITY terse

-- == grants: a worker may schedule and fire; a monitor may list ==
RESET a2.now;
CREATE ROLE regress_sched_worker;
CREATE ROLE regress_sched_monitor;
SELECT a2_grant_worker('regress_sched_worker');
SELECT a2_grant_monitor('regress_sched_monitor');
SET ROLE regress_sched_worker;
SELECT a2_schedule('by-worker', '@hourly', 'w', '{"type": "t"}') > now() AS scheduled;
SELECT a2_pause_schedule('by-worker') IS NOT NULL AS paused;
SELECT count(*) >= 0 AS fired FROM a2_fire_schedules();
SELECT a2_unschedule('by-worker');
RESET ROLE;
SET ROLE regress_sched_monitor;
SELECT count(*) AS listed FROM a2_list_schedules();
SELECT schedules FROM a2_metrics();
SELECT a2_schedule('by-monitor', '@hourly', 'm', '{"type": "t"}');
RESET ROLE;
SELECT a2_revoke('regress_sched_worker');
SELECT a2_revoke('regress_sched_monitor');
DROP ROLE regress_sched_worker;
DROP ROLE regress_sched_monitor;
