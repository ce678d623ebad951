/*
 * test/stress/schedules.sql
 *	  The recurring-schedules phase of the stress suite (test/suites/20-stress.sh,
 *	  after the dispatch-control phase): concurrent callers of
 *	  a2_fire_schedules() while a shared store clock advances (each pass sets
 *	  a2.now from sstress_clock, some a little behind it, never sleeping), and
 *	  pause/resume in between (test/stress/schedules.pgbench).
 *
 *	  The clock starts on 2031-03-29 22:00 UTC, years after the wall clock,
 *	  so the background scheduler (which fires on the wall clock) finds
 *	  nothing due and only the passes of this phase fire; it crosses the
 *	  spring-forward gap of Europe/Berlin (2031-03-30 01:00 UTC).
 *
 *	  The invariant "no tick twice" (docs/time.md, "Exactly once"), checked
 *	  by sstress_check() at the end and raising ZS000 on a violation:
 *	    - every tick's event (id schedule:NAME@TICK) is stored at most once,
 *	      and every row a fire pass returned was returned once (the primary
 *	      key of sstress_fired, in the pass's own transaction);
 *	    - per schedule, the tick events stored = the rows the passes
 *	      returned = a2_list_schedules()'s fired_count, and last_tick_at is
 *	      the latest of them;
 *	    - each pass (a schedule's events with one createdAt, the pass's
 *	      clock) obeys the missed-tick policy: its ticks are consecutive
 *	      ticks of the spec (a2_schedule_ticks), the last of them is the last
 *	      tick at or before the pass's clock; latest and skip fire one tick,
 *	      skip only within graceMs; backfill at most backfillLimit, and it
 *	      leaves no gap after the previous pass (or the creation) unless the
 *	      pass is full: up to its bound, no tick is missed;
 *	    - a schedule's ticks rise with the session's index.
 */
\set ON_ERROR_STOP 1

-- The shared store clock the passes read.
CREATE TABLE sstress_clock (t timestamptz NOT NULL);
INSERT INTO sstress_clock VALUES ('2031-03-29 22:00:00+00');

-- Every row a fire pass returned, committed with the pass.
CREATE TABLE sstress_fired (
	name		text		NOT NULL,
	tick_at		timestamptz NOT NULL,
	session_id	text		NOT NULL,
	event_index bigint		NOT NULL,
	event_id	text		NOT NULL,
	pass_at		timestamptz NOT NULL,
	client		integer		NOT NULL,
	PRIMARY KEY (name, tick_at)
);

CREATE TABLE sstress_counts (op text PRIMARY KEY, n bigint NOT NULL DEFAULT 0);

CREATE FUNCTION sstress_count(what text, k bigint DEFAULT 1) RETURNS void LANGUAGE sql AS $$
	INSERT INTO sstress_counts AS c VALUES (what, k) ON CONFLICT (op) DO UPDATE SET n = c.n + k;
$$;

CREATE FUNCTION sstress_iso(t timestamptz) RETURNS text LANGUAGE sql STABLE AS $$
	SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- Names use no '_' or '%' (they are matched with LIKE below).
SET a2.now = '2031-03-29 22:00:00+00';
SELECT a2_schedule('ss-bf-10s', 'every 10 seconds', 'ss-a', '{"type": "tick10"}',
				   '{"missed": "backfill", "backfillLimit": 100000}');
SELECT a2_schedule('ss-bf-45s-lim3', 'every 45 seconds', 'ss-a', '{"type": "tick45", "settled": true}',
				   '{"missed": "backfill", "backfillLimit": 3}');
SELECT a2_schedule('ss-bf-berlin-5m', '*/5 * * * *', 'ss-b', '{"type": "berlin5", "lane": "L"}',
				   '{"missed": "backfill", "backfillLimit": 100000, "timezone": "Europe/Berlin"}');
SELECT a2_schedule('ss-latest-berlin-1m', '* * * * *', 'ss-b', '{"type": "berlin1", "payload": {"k": 1}}',
				   '{"timezone": "Europe/Berlin"}');
SELECT a2_schedule('ss-latest-hourly', '@hourly', 'ss-c', '{"type": "hourly"}', '{"missed": "latest"}');
SELECT a2_schedule('ss-skip-ny-2m', '*/2 * * * *', 'ss-c', '{"type": "ny2"}',
				   '{"missed": "skip", "graceMs": 30000, "timezone": "America/New_York"}');
SELECT a2_schedule('ss-skip-7s', 'every 7 seconds', 'ss-d', '{"type": "tick7"}',
				   '{"missed": "skip", "graceMs": 5000}');
SELECT a2_schedule('ss-bf-sydney-3m-lim5', '1-59/3 * * * *', 'ss-d', '{"type": "syd3"}',
				   '{"missed": "backfill", "backfillLimit": 5, "timezone": "Australia/Sydney"}');
-- more schedules on the same sessions: concurrent passes take their
-- sessions' locks in some order (two passes taking them in opposite orders
-- deadlocked, before a2_fire_schedules fired in session order)
SELECT a2_schedule('ss-latest-20s-' || i, 'every 20 seconds', 'ss-' || chr(96 + i), '{"type": "tick20"}')
  FROM generate_series(1, 4) i;
SELECT a2_schedule('ss-bf-30s-lim2-' || i, 'every 30 seconds', 'ss-' || chr(101 - i), '{"type": "tick30"}',
				   '{"missed": "backfill", "backfillLimit": 2}')
  FROM generate_series(1, 4) i;
RESET a2.now;

-- One fire pass at the shared clock (one call in ten up to 3 minutes
-- behind it: a slow caller), of all due schedules or at most 1 or 3.
CREATE FUNCTION sstress_fire(c integer, r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	now_t timestamptz;
	f record;
	n integer := 0;
BEGIN
	SELECT date_trunc('milliseconds', t - CASE WHEN r % 10 = 0 THEN random() * interval '3 min'
											   ELSE interval '0' END)
	  INTO now_t FROM sstress_clock;
	PERFORM set_config('a2.now', now_t::text, true);
	FOR f IN SELECT * FROM a2_fire_schedules(CASE r % 4 WHEN 0 THEN 1 WHEN 1 THEN 3 END) LOOP
		IF f.tick_at > now_t OR f.event_id IS DISTINCT FROM format('schedule:%s@%s', f.name, sstress_iso(f.tick_at))
		   OR f.event_index IS NULL THEN
			RAISE EXCEPTION 'fire pass at % returned %', now_t, f USING ERRCODE = 'ZS000';
		END IF;
		IF EXISTS (SELECT 1 FROM sstress_fired x WHERE x.name = f.name AND x.tick_at = f.tick_at) THEN
			RAISE EXCEPTION 'tick fired twice: % (pass at %)', f, now_t USING ERRCODE = 'ZS000';
		END IF;
		-- (a pass not yet committed that returned it too: the primary key
		-- waits for it, then fails)
		INSERT INTO sstress_fired VALUES (f.name, f.tick_at, f.session_id, f.event_index, f.event_id, now_t, c);
		n := n + 1;
	END LOOP;
	PERFORM sstress_count(CASE WHEN n = 0 THEN 'pass fired nothing' ELSE 'pass fired' END);
	PERFORM sstress_count('ticks fired', n);
END $$;

-- Advance the shared clock by 0 to 120 s (0.1 s steps).
CREATE FUNCTION sstress_advance(r integer) RETURNS void LANGUAGE sql AS $$
	UPDATE sstress_clock SET t = t + make_interval(secs => (r % 1201) / 10.0);
	SELECT sstress_count('clock advanced');
$$;

-- Pause or resume one schedule.
CREATE FUNCTION sstress_pause(r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	nm text;
BEGIN
	SELECT name INTO nm FROM a2_schedules ORDER BY name OFFSET (r / 2) % 16 LIMIT 1;
	PERFORM set_config('a2.now', (SELECT t FROM sstress_clock)::text, true);
	IF r % 2 = 0 THEN
		PERFORM a2_pause_schedule(nm);
		PERFORM sstress_count('paused');
	ELSE
		PERFORM a2_resume_schedule(nm);
		PERFORM sstress_count('resumed');
	END IF;
END $$;

-- The invariants of the header; raises ZS000 with every violation.
CREATE FUNCTION sstress_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	v text[];
BEGIN
	-- a schedule's events, with the tick from the id and the pass's clock
	CREATE TEMP TABLE sstress_ev ON COMMIT DROP AS
	SELECT s.name, s.spec, s.timezone AS tz, s.missed, s.backfill_limit AS lim, s.grace_ms,
		   s.created_at AS sched_created, e.idx, e.event_id, e.created_at AS pass_ms,
		   substring(e.event_id FROM '@([^@]*)$')::timestamptz AS tick
	  FROM a2_schedules s
	  JOIN a2_events e ON e.session_id = s.session_id AND e.event_id LIKE 'schedule:' || s.name || '@%'
	 WHERE s.name LIKE 'ss-%';

	SELECT array_agg(x) INTO v FROM (
		-- no tick twice
		SELECT format('%s: tick %s stored %s times', name, tick, count(*)) AS x
		  FROM sstress_ev GROUP BY name, tick HAVING count(*) > 1
		UNION ALL
		-- stored = returned = fired_count; last_tick_at the latest
		SELECT format('%s: fired_count %s, %s tick events stored, %s returned by passes, last_tick_at %s, latest stored %s',
					  l.name, l.fired_count, st.n, rt.n, l.last_tick_at, st.latest)
		  FROM a2_list_schedules() l
		  CROSS JOIN LATERAL (SELECT count(*) AS n, max(tick) AS latest FROM sstress_ev e WHERE e.name = l.name) st
		  CROSS JOIN LATERAL (SELECT count(*) AS n FROM sstress_fired f WHERE f.name = l.name) rt
		 WHERE l.name LIKE 'ss-%'
		   AND (l.fired_count <> st.n OR st.n <> rt.n OR l.last_tick_at IS DISTINCT FROM st.latest)
		UNION ALL
		-- every returned row is the stored event
		SELECT format('%s: pass returned %s at %s/%s, stored %s', f.name, f.event_id, f.session_id,
					  f.event_index, COALESCE(e.session_id || '/' || e.idx, 'nowhere'))
		  FROM sstress_fired f LEFT JOIN a2_events e ON e.event_id = f.event_id
		 WHERE e.session_id IS DISTINCT FROM f.session_id OR e.idx IS DISTINCT FROM f.event_index
		UNION ALL
		-- ticks rise with the index
		SELECT format('%s: tick %s at index %s after tick %s', name, tick, idx, prev)
		  FROM (SELECT name, tick, idx, lag(tick) OVER (PARTITION BY name ORDER BY idx) AS prev
				  FROM sstress_ev) x
		 WHERE tick <= prev
		UNION ALL
		-- within a pass: consecutive ticks of the spec
		SELECT format('%s: pass at %s fired %s then %s, the spec''s next tick is %s', name,
					  to_timestamp(pass_ms / 1000.0), tick, nxt, a2_schedule_ticks(spec, tz, tick, 1))
		  FROM (SELECT *, lead(tick) OVER (PARTITION BY name, pass_ms ORDER BY tick) AS nxt FROM sstress_ev) x
		 WHERE nxt IS NOT NULL AND nxt <> (SELECT t FROM a2_schedule_ticks(spec, tz, tick, 1) t)
		UNION ALL
		-- per pass: the policy
		SELECT format('%s (%s, limit %s, grace %s ms): pass at %s fired %s ticks %s .. %s after %s: %s',
					  name, missed, lim, grace_ms, pass_at, n, first_tick, last_tick, prev_last, problem)
		  FROM (SELECT p.*, to_timestamp(p.pass_ms / 1000.0) AS pass_at,
					   CASE
					   WHEN p.last_tick > to_timestamp(p.pass_ms / 1000.0) THEN 'a tick after the pass''s clock'
					   WHEN (SELECT t FROM a2_schedule_ticks(p.spec, p.tz, p.last_tick, 1) t)
							<= to_timestamp(p.pass_ms / 1000.0) THEN 'not the last due tick'
					   WHEN p.missed IN ('latest', 'skip') AND p.n <> 1 THEN 'more than one tick'
					   WHEN p.missed = 'skip'
							AND p.pass_ms - (extract(epoch FROM p.last_tick) * 1000)::bigint > p.grace_ms
							THEN 'later than graceMs'
					   WHEN p.missed = 'backfill' AND p.n > p.lim THEN 'more than backfillLimit'
					   WHEN p.missed = 'backfill' AND p.first_tick < p.expected_first THEN 'a tick before the next one'
					   WHEN p.missed = 'backfill' AND p.first_tick > p.expected_first AND p.n < p.lim
							THEN format('a gap: expected %s first', p.expected_first)
					   END AS problem
				  FROM (SELECT q.*,
							   (SELECT t FROM a2_schedule_ticks(q.spec, q.tz,
									COALESCE(q.prev_last, to_timestamp(q.sched_created / 1000.0)), 1) t) AS expected_first
						  FROM (SELECT name, spec, tz, missed, lim, grace_ms, sched_created, pass_ms,
									   count(*) AS n, min(tick) AS first_tick, max(tick) AS last_tick,
									   lag(max(tick)) OVER (PARTITION BY name ORDER BY pass_ms) AS prev_last
								  FROM sstress_ev
								 GROUP BY name, spec, tz, missed, lim, grace_ms, sched_created, pass_ms) q) p) y
		 WHERE problem IS NOT NULL
	) z;

	IF v IS NOT NULL THEN
		RAISE EXCEPTION 'schedules: % violations of "no tick twice" and the missed-tick policies: %',
			cardinality(v), array_to_string(v[1:5], '; ') USING ERRCODE = 'ZS000';
	END IF;
	RETURN (SELECT format('%s ticks of %s schedules in %s passes over %s of store clock, each once; %s',
						  count(*), count(DISTINCT name), count(DISTINCT (name, pass_ms)),
						  (SELECT t FROM sstress_clock) - '2031-03-29 22:00:00+00',
						  (SELECT string_agg(op || ' ' || n, ', ' ORDER BY op) FROM sstress_counts))
			  FROM sstress_ev);
END $$;
