-- claim_next.sql: fairness and cost of a2_claim_next.
--
-- Fairness.  a2_claim_next serves the work that became available first
-- (lease expiry, else creation time).  The bound: with max_sessions = 1,
-- a session whose work became available at t is served within B + 1
-- calls, B being the number of sessions with work available before t,
-- whatever new work arrives after t.  So with S sessions that always have
-- work, every session is served at least once in every S consecutive
-- calls.  The test floods 20 sessions with new work before every call and
-- checks both.
--
-- Cost.  One call reads the index a2_events_default_available from the oldest
-- entry and never scans the table: checked with the transaction's own
-- statistics (pg_stat_xact_user_tables), which count sequential scans and
-- the rows index scans fetched.  The same call fetches the same number of
-- rows with 100 sessions of pending work and 2,000 finished events as with
-- 2,100 sessions and 22,000 finished events, both after ANALYZE (so the
-- plans are the ones a real table gets; this caught a retryAt probe that
-- the planner answered by sorting every live lease).
BEGIN;
SELECT plan(10);

DELETE FROM a2_events;

-- t0 = 2026-02-01 00:00:00.  fl-01 .. fl-20 each have 5 events created at
-- t0; crashed's lease (taken at t0 - 1 s for 1.5 s) expires at t0 + 0.5 s;
-- quiet gets one event at t0 + 1 s.
SELECT set_config('a2.now', '2026-01-31 23:59:59+00', true);
SELECT is(a2_append('crashed', '[{"type":"job"}]')->'events'->0->>'index', '1', 'crashed: appended');
SELECT is(a2_claim('crashed', 'dead-worker', 1500)->>'outcome', 'claimed', 'crashed: leased by a worker that dies');
SELECT set_config('a2.now', '2026-02-01 00:00:00+00', true);
SELECT is(count(*), 20::bigint, 'flood: 20 sessions with a backlog')
  FROM (SELECT a2_append(format('fl-%s', lpad(i::text, 2, '0')),
          '[{"type":"job"},{"type":"job"},{"type":"job"},{"type":"job"},{"type":"job"}]')
          FROM generate_series(1, 20) i) s;
SELECT set_config('a2.now', '2026-02-01 00:00:01+00', true);
SELECT is(a2_append('quiet', '[{"type":"job"}]')->'events'->0->>'index', '1', 'quiet: one event at t0 + 1 s');

-- 300 rounds, 10 ms apart from t0 + 2 s: every flood session gets a new
-- event, then one worker call claims one session and completes what it got.
CREATE TEMP TABLE served (round int, session_id text) ON COMMIT DROP;
DO $$
DECLARE
	r int;
	c jsonb;
	e jsonb;
BEGIN
	FOR r IN 1..300 LOOP
		PERFORM set_config('a2.now', (timestamptz '2026-02-01 00:00:02+00' + r * interval '10 ms')::text, true);
		PERFORM a2_append(format('fl-%s', lpad(i::text, 2, '0')), '[{"type":"job"}]')
		   FROM generate_series(1, 20) i;
		FOR c IN SELECT jsonb_array_elements(a2_claim_next('worker', 60000) -> 'claims') LOOP
			INSERT INTO served VALUES (r, c ->> 'sessionId');
			FOR e IN SELECT jsonb_array_elements(c -> 'events') LOOP
				PERFORM a2_complete(c ->> 'sessionId', (e ->> 'index')::bigint, (e ->> 'attemptCount')::int);
			END LOOP;
		END LOOP;
	END LOOP;
END $$;

SELECT is((SELECT count(*) FROM served), 300::bigint, 'every call served a session');
SELECT is((SELECT min(round) FROM served WHERE session_id = 'crashed'), 21,
	'the expired lease is served right after the 20 older backlogs');
SELECT is((SELECT min(round) FROM served WHERE session_id = 'quiet'), 22,
	'quiet is served at call B + 1 = 22 despite the flood (B = 20 flood sessions + crashed)');
SELECT is((SELECT max(gap) FROM (
			SELECT round - lag(round) OVER (PARTITION BY session_id ORDER BY round) AS gap
			  FROM served WHERE session_id LIKE 'fl-%') g), 22,
	'no flooded session waits more calls than the 22 sessions that have work');
SELECT is((SELECT max(gap) FROM (
			SELECT round, round - lag(round) OVER (PARTITION BY session_id ORDER BY round) AS gap
			  FROM served WHERE session_id LIKE 'fl-%') g WHERE round > 42), 20,
	'once crashed and quiet are served, each flooded session is served every 20 calls');

-- Cost.  100 sessions with one pending event each, created at t1.
DELETE FROM a2_events;
SELECT set_config('a2.now', '2026-02-02 00:00:00+00', true);
SELECT count(a2_append(format('small-%s', i), '[{"type":"job"}]')) FROM generate_series(1, 100) i;
SELECT count(a2_append(format('done-%s', i),
		(SELECT jsonb_agg(jsonb_build_object('type', 'old', 'settled', true)) FROM generate_series(1, 100))))
  FROM generate_series(1, 20) i;
ANALYZE a2_events;

CREATE FUNCTION pg_temp.cost_of_claim_next() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s0 bigint;
	f0 bigint;
	s1 bigint;
	f1 bigint;
BEGIN
	SELECT seq_scan, idx_tup_fetch INTO s0, f0 FROM pg_stat_xact_user_tables
	 WHERE relid = 'a2_events'::regclass;
	PERFORM a2_claim_next('cost', 60000);
	SELECT seq_scan, idx_tup_fetch INTO s1, f1 FROM pg_stat_xact_user_tables
	 WHERE relid = 'a2_events'::regclass;
	RETURN format('seq scans %s, rows fetched %s', s1 - s0, f1 - f0);
END
$$;
CREATE TEMP TABLE costs (label text, cost text) ON COMMIT DROP;
INSERT INTO costs SELECT 'small', pg_temp.cost_of_claim_next();

-- 2,000 more sessions with pending work (newer), and 20,000 more finished events.
SELECT set_config('a2.now', '2026-02-02 00:00:01+00', true);
SELECT count(a2_append(format('large-%s', i), '[{"type":"job"}]')) FROM generate_series(1, 2000) i;
SELECT count(a2_append(format('done-%s', i),
		(SELECT jsonb_agg(jsonb_build_object('type', 'old', 'settled', true)) FROM generate_series(1, 100))))
  FROM generate_series(21, 220) i;
ANALYZE a2_events;
INSERT INTO costs SELECT 'large', pg_temp.cost_of_claim_next();

SELECT is((SELECT cost FROM costs WHERE label = 'large'), (SELECT cost FROM costs WHERE label = 'small'),
	'one call costs the same with 21x the sessions and 11x the finished events: '
	|| (SELECT cost FROM costs WHERE label = 'large'));

SELECT * FROM finish();
ROLLBACK;
