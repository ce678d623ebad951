-- test/fuzz/report.sql: summary and verdict of a fuzz run, then invariants
-- every a2 table must still satisfy after thousands of hostile calls.
-- Fails (psql exit status 3) when a case did not pass or an invariant broke.

\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = notice;

\echo '--- outcomes by function (cast = PostgreSQL rejected an argument before a2 ran)'
SELECT fn,
	   count(*) AS cases,
	   count(*) FILTER (WHERE outcome = 'ok') AS ok,
	   count(*) FILTER (WHERE outcome = '22004') AS "22004",
	   count(*) FILTER (WHERE outcome = '22023') AS "22023",
	   count(*) FILTER (WHERE outcome = 'Z2001') AS "Z2001",
	   count(*) FILTER (WHERE outcome = 'Z2002') AS "Z2002",
	   count(*) FILTER (WHERE outcome = 'Z2003') AS "Z2003",
	   count(*) FILTER (WHERE outcome = 'Z2004') AS "Z2004",
	   count(*) FILTER (WHERE outcome = 'XX001') AS "XX001",
	   count(*) FILTER (WHERE outcome LIKE 'cast:%') AS "cast",
	   count(*) FILTER (WHERE outcome NOT IN ('ok', '22004', '22023', 'Z2001', 'Z2002', 'Z2003', 'Z2004', 'XX001')
						  AND outcome NOT LIKE 'cast:%') AS other,
	   count(*) FILTER (WHERE NOT passed) AS failed
  FROM a2_fuzz.results
 GROUP BY ROLLUP (fn)
 ORDER BY fn NULLS LAST;

\echo '--- argument errors raised by PostgreSQL itself, by SQLSTATE'
SELECT substr(outcome, 6) AS sqlstate, count(*)
  FROM a2_fuzz.results WHERE outcome LIKE 'cast:%' GROUP BY 1 ORDER BY 1;

\echo '--- errors raised after the call had written rows (undone by the rollback; allowed except for 22004/22023)'
SELECT outcome, fn, count(*) FROM a2_fuzz.results
 WHERE outcome NOT LIKE 'cast:%' AND outcome <> 'ok' AND writes > 0
 GROUP BY 1, 2 ORDER BY 1, 2;

\echo '--- time by function (ms), and the slowest cases'
SELECT fn, count(*) AS cases, round(sum(ms)) AS total_ms, max(ms) AS max_ms
  FROM a2_fuzz.results GROUP BY fn ORDER BY sum(ms) DESC NULLS LAST LIMIT 8;
SELECT r.id, r.ms, r.outcome, left(c.label, 100) AS mutation
  FROM a2_fuzz.results r JOIN a2_fuzz.cases c USING (id) ORDER BY r.ms DESC NULLS LAST LIMIT 5;

\echo '--- failed cases (first 40)'
SELECT r.id, r.outcome, c.expect, left(c.label, 160) AS mutation,
	   coalesce(r.problem, '') AS problem, left(r.message, 160) AS message
  FROM a2_fuzz.results r JOIN a2_fuzz.cases c USING (id)
 WHERE NOT r.passed
 ORDER BY r.id LIMIT 40;

-- Invariants of the stored data (the planted corrupt row excepted).
CREATE TEMP TABLE violations (what text, detail text);

INSERT INTO violations
SELECT 'indexes not dense 1..n', session_id
  FROM a2_events GROUP BY session_id
HAVING min(idx) <> 1 OR max(idx) <> count(*);

INSERT INTO violations
SELECT 'holder/expiry disagree', session_id || ' ' || idx
  FROM a2_events WHERE (claim_holder IS NULL) <> (claim_expires_at IS NULL);

INSERT INTO violations
SELECT 'processed row still leased', session_id || ' ' || idx
  FROM a2_events WHERE processed_at IS NOT NULL AND claim_holder IS NOT NULL;

INSERT INTO violations
SELECT 'dead-lettered row processed or leased', session_id || ' ' || idx
  FROM a2_events WHERE failed_at IS NOT NULL AND (processed_at IS NOT NULL OR claim_holder IS NOT NULL)
   -- a cancelled dead letter keeps failed_at (docs/semantics.md, "Cancel")
   AND NOT (cancelled_at IS NOT NULL AND processed_at = cancelled_at AND claim_holder IS NULL);

-- a2_cancel: never processed by an attempt, processed at the cancel
INSERT INTO violations
SELECT 'cancelled event processed', session_id || ' ' || idx
  FROM a2_events
 WHERE cancelled_at IS NOT NULL
   AND (processed_by_attempt IS NOT NULL OR returned_event_ids IS NOT NULL
		OR processed_at IS DISTINCT FROM cancelled_at OR claim_holder IS NOT NULL);

INSERT INTO violations
SELECT 'counts out of range', session_id || ' ' || idx
  FROM a2_events WHERE attempt_count < 0 OR failure_count < 0 OR failure_count > attempt_count;

INSERT INTO violations
SELECT 'invalid stored cause', e.session_id || ' ' || e.idx || ' ' || e.cause::text
  FROM a2_events e
 WHERE e.cause IS NOT NULL AND NOT (e.session_id = 'fz:corrupt' AND e.idx = 2)
   AND NOT (jsonb_typeof(e.cause) = 'object'
			AND a2_fuzz.is_int(e.cause->'index', 1) AND a2_fuzz.is_int(e.cause->'attempt', 1)
			AND (NOT e.cause ? 'batchSize' OR a2_fuzz.is_int(e.cause->'batchSize', 1))
			AND a2_fuzz.keys(e.cause) IN ('attempt,index', 'attempt,batchSize,index'));

-- a child is only ever appended by a current attempt of an existing parent
INSERT INTO violations
SELECT 'cause names a later or missing parent', e.session_id || ' ' || e.idx
  FROM a2_events e
 WHERE e.cause IS NOT NULL AND NOT (e.session_id = 'fz:corrupt' AND e.idx = 2)
   AND NOT EXISTS (SELECT 1 FROM a2_events p
					WHERE p.session_id = e.session_id
					  AND p.idx = (e.cause->>'index')::numeric AND p.idx < e.idx
					  AND p.attempt_count >= (e.cause->>'attempt')::numeric);

-- lanes: among a lane's unprocessed events only the oldest may be ready
INSERT INTO violations
SELECT 'lane readiness', session_id || ' ' || lane || ' ' || idx
  FROM (SELECT session_id, lane, idx, lane_ready,
			   row_number() OVER (PARTITION BY session_id, lane ORDER BY idx) AS rn
		  FROM a2_events WHERE lane IS NOT NULL AND processed_at IS NULL) s
 WHERE rn > 1 AND lane_ready;

INSERT INTO violations
SELECT 'pin on a finished event', p.session_id || ' ' || p.event_index
  FROM a2_snapshot_pins p
  LEFT JOIN a2_events e ON e.session_id = p.session_id AND e.idx = p.event_index
 WHERE e.idx IS NULL OR e.processed_at IS NOT NULL OR e.failed_at IS NOT NULL;

INSERT INTO violations
SELECT 'history row without a pin', h.session_id || ' ' || h.reducer_name || ' ' || h.up_to_index
  FROM a2_snapshot_history h
 WHERE NOT EXISTS (SELECT 1 FROM a2_snapshot_pins p
					WHERE p.session_id = h.session_id AND p.reducer_name = h.reducer_name
					  AND p.up_to_index = h.up_to_index);

INSERT INTO violations
SELECT 'history at or after the head', h.session_id || ' ' || h.reducer_name || ' ' || h.up_to_index
  FROM a2_snapshot_history h
  LEFT JOIN a2_snapshots s ON s.session_id = h.session_id AND s.reducer_name = h.reducer_name
 WHERE s.up_to_index IS NULL OR h.up_to_index >= s.up_to_index;

INSERT INTO violations
SELECT 'presence value and tombstone coexist', p.ns || ' ' || p.participant || ' ' || p.field
  FROM a2_presence p
  JOIN a2_presence_tombstones t USING (ns, participant, field);

INSERT INTO violations
SELECT 'names over 1024 bytes or empty', 'a2_events ' || session_id
  FROM a2_events
 WHERE octet_length(session_id) NOT BETWEEN 1 AND 1024 OR octet_length(event_id) NOT BETWEEN 1 AND 1024
	OR octet_length(lane) NOT BETWEEN 1 AND 1024 OR octet_length(claim_holder) NOT BETWEEN 1 AND 1024;

-- scheduling (SPEC 7.1): not_before within the JavaScript range, and no
-- event last claimed before it (unless its current attempt failed since,
-- which may have backed it off)
INSERT INTO violations
SELECT 'not_before out of range', session_id || ' ' || idx || ' ' || not_before
  FROM a2_events WHERE not_before NOT BETWEEN -8640000000000000 AND 8640000000000000;

-- durable waits (docs/semantics.md, "Waits"): a claimed event that waited
-- was ended by a later event of an awaited type appended before its
-- timeout, or claimed at or after its timeout
INSERT INTO violations
SELECT 'waiting event claimed before its condition', w.session_id || ' ' || w.idx
  FROM a2_events w
  LEFT JOIN a2_events s ON s.session_id = w.session_id AND s.idx = (w.wait_result->>'index')::bigint
 WHERE w.attempt_count > 0 AND w.wait_for IS NOT NULL
   AND CASE WHEN w.wait_result IS NOT NULL
			THEN s.idx IS NULL OR s.idx <= w.idx OR NOT (w.wait_for->'types') ? s.event_type
				 OR (w.wait_for ? 'until' AND s.created_at >= (w.wait_for->>'until')::bigint)
			ELSE NOT w.wait_for ? 'until' OR w.first_claimed_at < (w.wait_for->>'until')::bigint END;

INSERT INTO violations
SELECT 'last claimed before its not_before', session_id || ' ' || idx
  FROM a2_events
 WHERE not_before IS NOT NULL AND attempt_count > 0 AND last_claimed_at < not_before
   AND last_failed_attempt IS DISTINCT FROM attempt_count;

-- dispatch fields (0.4.0): the defaults are stored as NULL, names and
-- priorities within their bounds
INSERT INTO violations
SELECT 'dispatch fields stored out of bounds or as the default', session_id || ' ' || idx
  FROM a2_events
 WHERE queue = 'default' OR octet_length(queue) NOT BETWEEN 1 AND 1024
	OR priority = 0 OR priority NOT BETWEEN -32768 AND 32767
	OR octet_length(concurrency_key) NOT BETWEEN 1 AND 1024;

-- recurring schedules (docs/time.md, "Exactly once"): no tick returned by
-- two fire passes, every returned tick stored, and every tick event stored
-- returned by a pass (the cases' schedules run 14 years ahead of the wall
-- clock, so the background scheduler fires none of them)
INSERT INTO violations
SELECT 'schedule tick fired twice', name || ' ' || tick_at || ' by cases ' || string_agg(id::text, ',')
  FROM a2_fuzz.fired GROUP BY name, tick_at HAVING count(*) > 1;
INSERT INTO violations
SELECT 'schedule tick event not stored as returned', f.id || ' ' || f.event_id
  FROM a2_fuzz.fired f LEFT JOIN a2_events e ON e.event_id = f.event_id
 WHERE e.session_id IS DISTINCT FROM f.session_id OR e.idx IS DISTINCT FROM f.event_index;
INSERT INTO violations
SELECT 'schedule tick event no fire pass returned', e.session_id || ' ' || e.event_id
  FROM a2_events e
 WHERE e.event_id LIKE 'schedule:%' AND NOT EXISTS (SELECT 1 FROM a2_fuzz.fired f WHERE f.event_id = e.event_id);

\echo '--- schedules: cases by function and outcome; ticks fired'
SELECT fn, outcome, count(*) FROM a2_fuzz.results
 WHERE fn LIKE '%schedule%' GROUP BY 1, 2 ORDER BY 1, 2;
SELECT count(*) AS ticks_fired, count(DISTINCT name) AS schedules_fired, count(DISTINCT id) AS passes_that_fired,
	   (SELECT count(*) FROM a2_schedules) AS schedules_left
  FROM a2_fuzz.fired;
\echo '--- dispatch fields on stored events'
SELECT count(*) FILTER (WHERE queue IS NOT NULL) AS with_queue, count(*) FILTER (WHERE priority IS NOT NULL) AS with_priority,
	   count(*) FILTER (WHERE concurrency_key IS NOT NULL) AS with_key
  FROM a2_events;

\echo '--- scheduling: cases with notBefore or retry_after_ms, by outcome'
SELECT c.fn, CASE WHEN c.fn = 'a2_fail' THEN 'retry_after_ms' ELSE 'notBefore' END AS what,
	   count(*) AS cases,
	   count(*) FILTER (WHERE r.outcome = 'ok') AS ok,
	   count(*) FILTER (WHERE r.outcome = '22023') AS "22023",
	   count(*) FILTER (WHERE r.outcome NOT IN ('ok', '22023')) AS other
  FROM a2_fuzz.cases c JOIN a2_fuzz.results r USING (id)
 WHERE (c.fn IN ('a2_append', 'a2_complete') AND array_to_string(c.args, ' ') LIKE '%notBefore%')
	OR (c.fn = 'a2_fail' AND array_length(c.args, 1) = 6 AND c.args[6] <> 'NULL::bigint')
 GROUP BY 1, 2 ORDER BY 1;
SELECT count(*) FILTER (WHERE not_before IS NOT NULL) AS events_with_not_before,
	   count(*) FILTER (WHERE not_before IS NOT NULL AND attempt_count > 0) AS of_them_claimed,
	   count(*) FILTER (WHERE wait_for IS NOT NULL) AS events_with_wait,
	   count(*) FILTER (WHERE wait_result IS NOT NULL) AS ended_by_event,
	   count(*) FILTER (WHERE wait_for IS NOT NULL AND attempt_count > 0) AS waits_claimed
  FROM a2_events;

\echo '--- invariant violations (expected: none)'
SELECT what, count(*), left(min(detail), 120) AS example FROM violations GROUP BY what ORDER BY what;

DO $$
DECLARE
	total bigint;
	ran bigint;
	failed bigint;
	broken bigint;
BEGIN
	SELECT count(*) INTO total FROM a2_fuzz.cases;
	SELECT count(*), count(*) FILTER (WHERE NOT passed) INTO ran, failed FROM a2_fuzz.results;
	SELECT count(*) INTO broken FROM violations;
	RAISE NOTICE 'fuzz: % cases generated, % run, % failed, % invariant violations', total, ran, failed, broken;
	IF ran <> total OR failed > 0 OR broken > 0 THEN
		RAISE EXCEPTION 'fuzz: FAILED';
	END IF;
END $$;
