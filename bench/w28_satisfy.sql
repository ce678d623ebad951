-- Durable waits (issue 28): what an append costs that satisfies one of k
-- waiting events of its session (k = 1, 10, 100), beside an append that
-- satisfies none of 100 and appends to sessions without waiting events,
-- short and long (10,000 processed events before one waiting event).
-- Counted (EXPLAIN ANALYZE BUFFERS WAL of the a2_append, rolled back) and
-- timed (the median of :reps appends, each rolled back in a subtransaction,
-- so every one finds the same state; clock_timestamp() around the call).
--   psql -X -v reps=200 -f bench/w28_satisfy.sql <a database with a2 0.4.0>
\pset footer off
SET a2.now = '2026-01-01 00:00:00+00';
-- sat-K: K waiting events, event i waits for type "t<i>" (no timeout), and
-- one ordinary event; long-1: 10,000 processed events, then one waiting
-- for "t1"; plain-short, plain-long: no waiting event (10 and 10,000
-- processed events)
DELETE FROM a2_events WHERE session_id LIKE 'sat-%' OR session_id LIKE 'long-%' OR session_id LIKE 'plain-%';
SELECT count(*) AS sessions FROM (
	SELECT a2_append('sat-' || k, (SELECT jsonb_agg(jsonb_build_object('type', 'step' || i,
				'waitFor', jsonb_build_object('types', jsonb_build_array('t' || i)))) FROM generate_series(1, k) i)
			|| '[{"type": "other"}]'::jsonb)
	  FROM unnest(ARRAY[1, 10, 100]) k) x;
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready, processed_at,
					   processed_by_attempt, attempt_count)
SELECT s, i, 'old', 'null'::jsonb, s || '-' || i, 1767225600000, true, 1767225600001, 1, 1
  FROM unnest(ARRAY['long-1', 'plain-long']) s, generate_series(1, 10000) i
UNION ALL
SELECT 'plain-short', i, 'old', 'null'::jsonb, 'plain-short-' || i, 1767225600000, true, 1767225600001, 1, 1
  FROM generate_series(1, 10) i;
SELECT a2_append('long-1', '[{"type": "step1", "waitFor": {"types": ["t1"]}}]') IS NOT NULL AS appended;
VACUUM ANALYZE a2_events;

CREATE TEMP TABLE cases (name text, session text, type text);
INSERT INTO cases VALUES
	('no waiting event, 10 events', 'plain-short', 'x'),
	('no waiting event, 10,000 events', 'plain-long', 'x'),
	('satisfies 1 of 1 waiting', 'sat-1', 't1'),
	('satisfies 1 of 10 waiting', 'sat-10', 't5'),
	('satisfies 1 of 100 waiting', 'sat-100', 't50'),
	('satisfies none of 100 waiting', 'sat-100', 'x'),
	('satisfies 1 of 1 waiting after 10,000 events', 'long-1', 't1');

CREATE FUNCTION pg_temp.counted(s text, t text) RETURNS text LANGUAGE plpgsql AS $$
DECLARE line text; buffers text := ''; wal text := '';
BEGIN
	FOR line IN EXECUTE format('EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_append(%L, %L)',
							   s, jsonb_build_array(jsonb_build_object('type', t))) LOOP
		IF line ~ '^\s*Buffers:' AND buffers = '' THEN buffers := btrim(line); END IF;
		IF line ~ '^\s*WAL:' AND wal = '' THEN wal := btrim(line); END IF;
	END LOOP;
	RAISE EXCEPTION USING ERRCODE = 'P0003', MESSAGE = buffers || ' | ' || wal;
EXCEPTION WHEN SQLSTATE 'P0003' THEN
	RETURN SQLERRM;
END $$;

CREATE FUNCTION pg_temp.median_us(s text, t text, reps int) RETURNS numeric LANGUAGE plpgsql AS $$
DECLARE t0 timestamptz; us float8[] := '{}'; ev jsonb := jsonb_build_array(jsonb_build_object('type', t));
BEGIN
	FOR i IN 1 .. reps LOOP
		BEGIN
			t0 := clock_timestamp();
			PERFORM a2_append(s, ev);
			us := us || extract(epoch FROM clock_timestamp() - t0)::float8 * 1e6;
			RAISE EXCEPTION USING ERRCODE = 'P0003';
		EXCEPTION WHEN SQLSTATE 'P0003' THEN NULL;
		END;
	END LOOP;
	RETURN (SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY x)::numeric, 1) FROM unnest(us) x);
END $$;

-- warm-up: plans and caches
SELECT pg_temp.median_us(session, type, 20) IS NOT NULL AS warm FROM cases;
\echo '--- buffers and WAL of one a2_append (rolled back), median microseconds of' :reps 'appends'
SELECT name, pg_temp.counted(session, type) AS "buffers | WAL", pg_temp.median_us(session, type, :reps) AS median_us
  FROM cases;
-- the satisfied case ends the wait it should (checked, then rolled back)
BEGIN;
SELECT a2_append('sat-100', '[{"type": "t50"}]') IS NOT NULL AS appended;
SELECT count(*) FILTER (WHERE wait_result IS NOT NULL) AS ended, count(*) FILTER (WHERE wait_for IS NOT NULL) AS waiting
  FROM a2_events WHERE session_id = 'sat-100';
ROLLBACK;
