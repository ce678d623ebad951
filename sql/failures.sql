--
-- failures: a2_failure_groups and a2_dead_letters, the dashboard's bounded
-- views of dead letters (docs/functions.md "Dead letters").
--
\set VERBOSITY terse
SET a2.now = '2026-05-01 00:00:00+00';
SET timezone = 'UTC';

-- The views count every dead letter in the database: set aside those the
-- earlier tests left (restored at the end), so that this test sees its own.
CREATE TEMP TABLE earlier_dead AS SELECT * FROM a2_events WHERE failed_at IS NOT NULL;
DELETE FROM a2_events WHERE failed_at IS NOT NULL;

-- no dead letters: no groups, an empty last page
SELECT * FROM a2_failure_groups();
SELECT a2_dead_letters();

-- dl(session, n, error, at): append n events to a session and dead-letter
-- each (max_failures 1) with error, at the store time at
CREATE FUNCTION pg_temp.dl(s text, n int, err text, at text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE i int;
BEGIN
  PERFORM set_config('a2.now', at, true);
  FOR i IN 1..n LOOP
    PERFORM a2_append(s, jsonb_build_array(jsonb_build_object('type', 'job')));
  END LOOP;
  FOR i IN SELECT (e ->> 'index')::int FROM jsonb_array_elements(a2_claim(s, 'w', 60000) -> 'events') e LOOP
    PERFORM a2_fail(s, i, 1, err, 1);
  END LOOP;
END $$;

BEGIN;
SELECT pg_temp.dl('f-a', 3, 'card declined', '2026-05-01 00:01:00+00');
COMMIT;
BEGIN;
SELECT pg_temp.dl('f-b', 2, 'timeout', '2026-05-01 00:02:00+00');
COMMIT;
BEGIN;
SELECT pg_temp.dl('f-c', 1, 'card declined', '2026-05-01 00:03:00+00');
COMMIT;
-- a live failure under its budget is no dead letter
SELECT a2_append('f-d', '[{"type": "job"}]') -> 'hasPending' AS pending;
SELECT jsonb_array_length(a2_claim('f-d', 'w', 60000) -> 'events') AS claimed;
SELECT a2_fail('f-d', 1, 1, 'flaky', 5) ->> 'outcome' AS outcome;

-- groups: largest first, with their sessions, times and newest sample
SELECT * FROM a2_failure_groups();
-- max_groups bounds the groups; max_scan bounds the walk (newest first:
-- the 3 newest are f-c's 1 and f-b's 2), and complete says it was cut
SELECT error, events FROM a2_failure_groups(1);
SELECT error, events, scanned, complete FROM a2_failure_groups(10, 3);
SELECT error, events, scanned, complete FROM a2_failure_groups(10, 5);
SELECT error, events, scanned, complete FROM a2_failure_groups(10, 6);

-- pages, newest first; all of them, then only one error
SELECT jsonb_pretty(a2_dead_letters(NULL, NULL, 2));
SELECT e ->> 'sessionId' AS s, e ->> 'index' AS i, e ->> 'failedAt' AS failed_at
  FROM jsonb_array_elements(a2_dead_letters(NULL, a2_dead_letters(NULL, NULL, 2) -> 'cursor', 10) -> 'events') e;
SELECT e ->> 'sessionId' AS s, e ->> 'index' AS i, e ->> 'lastError' AS err
  FROM jsonb_array_elements(a2_dead_letters('card declined') -> 'events') e;
SELECT a2_dead_letters('card declined') -> 'cursor' AS last_page;
-- max_scan stops a walk for a rare error early, with a cursor to go on
SELECT jsonb_array_length(r -> 'events') AS events, r -> 'events' -> 0 ->> 'sessionId' AS s,
       r -> 'cursor' AS cursor, r -> 'scanned' AS scanned
  FROM a2_dead_letters('card declined', NULL, 10, 2) r;
SELECT e ->> 'sessionId' AS s, e ->> 'index' AS i
  FROM jsonb_array_elements(a2_dead_letters('card declined',
         a2_dead_letters('card declined', NULL, 10, 2) -> 'cursor', 10, 2) -> 'events') e;
SELECT a2_dead_letters('no such error') -> 'events' AS none;

-- a redriven event leaves both views
SELECT a2_redrive('f-c', 1) ->> 'outcome' AS outcome;
SELECT error, events, sessions FROM a2_failure_groups();

-- the walk is the partial index, never a scan of a2_events
SET enable_seqscan = off;
EXPLAIN (COSTS OFF)
SELECT e.session_id FROM a2_events e WHERE e.failed_at IS NOT NULL
 ORDER BY e.failed_at DESC, e.session_id DESC, e.idx DESC LIMIT 10;
RESET enable_seqscan;

-- bad bounds and cursors: 22023
SELECT * FROM a2_failure_groups(0);
SELECT * FROM a2_failure_groups(1001);
SELECT * FROM a2_failure_groups(10, 0);
SELECT a2_dead_letters(NULL, NULL, 0);
SELECT a2_dead_letters(NULL, NULL, 10, 2000000);
SELECT a2_dead_letters(NULL, '{"a": 1}');
SELECT a2_dead_letters(NULL, '[1, "s"]');
SELECT a2_dead_letters(NULL, '[1.5, "s", 1]');
SELECT a2_dead_letters(NULL, '[1e30, "s", 1]');
-- NULL bounds mean the defaults
SELECT count(*) FROM a2_failure_groups(NULL, NULL);
SELECT a2_dead_letters(NULL, NULL, NULL, NULL) -> 'scanned' AS scanned;

-- the earlier tests' dead letters back
INSERT INTO a2_events SELECT * FROM earlier_dead;
SELECT count(*) > 0 AS restored FROM a2_failure_groups();
