--
-- fail: a2_fail(session_id, event_index, attempt, error, max_failures)
-- (SPEC sections 3, 4 "fail", 5)
--
\set VERBOSITY terse
SET a2.now = '2026-06-01 00:00:00+00';

-- claimed(result): test/lib/regress.sql
\i test/lib/regress.sql

-- the failure columns of one event, as a2_read returns them
CREATE FUNCTION pg_temp.failure(s text, i bigint)
RETURNS TABLE (index bigint, attempt_count int, failure_count int,
			   last_error text, last_failed_at text, last_failed_attempt int,
			   failed_at text, claim_holder text, claim_expires_at text)
LANGUAGE sql AS $$
  SELECT * FROM jsonb_to_recordset(a2_read(s, i - 1, i))
    AS e("index" bigint, "attemptCount" int, "failureCount" int,
         "lastError" text, "lastFailedAt" text, "lastFailedAttempt" int,
         "failedAt" text, "claimHolder" text, "claimExpiresAt" text)
$$;

-- 1 and 2 share lane q; 3, 4 and 5 have no lane
SELECT a2_append('fail-a', '[
  {"id": "fail-a-1", "type": "job", "lane": "q"},
  {"id": "fail-a-2", "type": "job", "lane": "q"},
  {"id": "fail-a-3", "type": "job"},
  {"id": "fail-a-4", "type": "job"},
  {"id": "fail-a-5", "type": "job"}
]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('fail-a', 'w1', 60000)) AS claimed;

--
-- A failure below max_failures: counted, error and time recorded, lease
-- cleared, the event is not dead-lettered
--
SET a2.now = '2026-06-01 00:00:05+00';
SELECT a2_fail('fail-a', 1, 1, 'boom', 3);
SELECT * FROM pg_temp.failure('fail-a', 1);

-- failing the same attempt again is idempotent: failed, same count,
-- nothing rewritten
SET a2.now = '2026-06-01 00:00:06+00';
SELECT a2_fail('fail-a', 1, 1, 'boom again', 3);
SELECT * FROM pg_temp.failure('fail-a', 1);

-- the cleared lease makes it claimable at once (the others are still leased)
SELECT pg_temp.claimed(a2_claim('fail-a', 'w2', 60000)) AS claimed;
-- the old attempt is superseded now, and changes nothing
SELECT a2_fail('fail-a', 1, 1, 'late', 3);
SELECT * FROM pg_temp.failure('fail-a', 1);

--
-- Reaching max_failures dead-letters the event: failedAt = lastFailedAt
--
SELECT a2_fail('fail-a', 1, 2, 'boom 2', 3);
SELECT pg_temp.claimed(a2_claim('fail-a', 'w2', 60000)) AS claimed;
SET a2.now = '2026-06-01 00:00:07+00';
SELECT a2_fail('fail-a', 1, 3, 'boom 3', 3);
SELECT * FROM pg_temp.failure('fail-a', 1);

-- later calls for it: the same attempt (any max_failures) stays
-- dead_lettered, an older attempt is superseded; nothing changes
SELECT a2_fail('fail-a', 1, 3, 'again', 3);
SELECT a2_fail('fail-a', 1, 3, 'again', 10);
SELECT a2_fail('fail-a', 1, 2, 'again', 3);
SELECT * FROM pg_temp.failure('fail-a', 1);

-- a NULL error is stored as null
SELECT a2_fail('fail-a', 4, 1, NULL, 3);
SELECT * FROM pg_temp.failure('fail-a', 4);
SELECT a2_read('fail-a', 3, 4) -> 0 -> 'lastError' AS last_error_json,
       (SELECT last_error IS NULL FROM a2_events
         WHERE session_id = 'fail-a' AND idx = 4) AS stored_null;

--
-- Failing is fenced by attempt, not by lease time: 5's lease expired at
-- 00:01:00 and nobody re-claimed it, so attempt 1 still fails it
--
SET a2.now = '2026-06-01 00:02:00+00';
SELECT a2_fail('fail-a', 5, 1, 'slow', 3);
SELECT * FROM pg_temp.failure('fail-a', 5);

--
-- A dead-lettered event is never claimed again and keeps its lane
-- blocked: 2 waits behind 1 forever
--
SELECT pg_temp.claimed(a2_claim('fail-a', 'w3', 60000)) AS claimed;
SELECT a2_complete('fail-a', 3, 2) ->> 'outcome' AS outcome;
SELECT a2_complete('fail-a', 4, 2) ->> 'outcome' AS outcome;
SELECT a2_complete('fail-a', 5, 2) ->> 'outcome' AS outcome;
SET a2.now = '2026-06-01 01:00:00+00';
SELECT pg_temp.claimed(a2_claim('fail-a', 'w3', 60000)) AS claimed;
-- a new event in lane q waits too
SELECT a2_append('fail-a', '[{"id": "fail-a-6", "type": "job", "lane": "q"}]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('fail-a', 'w3', 60000)) AS claimed;
SELECT idx, lane, lane_ready, processed_at IS NOT NULL AS processed,
       failed_at IS NOT NULL AS dead, attempt_count, failure_count
  FROM a2_events WHERE session_id = 'fail-a' ORDER BY idx;

--
-- Superseded: processed, or not at this attempt (including never claimed);
-- failureCount is the event's current count
--
SELECT a2_fail('fail-a', 3, 2, 'too late', 3);
SELECT a2_fail('fail-a', 3, 1, 'too late', 3);
SELECT a2_fail('fail-a', 5, 2, 'too late', 3);
SELECT a2_fail('fail-a', 2, 1, 'never claimed', 3);
SELECT * FROM pg_temp.failure('fail-a', 2);

-- max_failures 1 dead-letters on the first failure
SELECT a2_append('fail-b', '[{"id": "fail-b-1", "type": "job"}]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('fail-b', 'w1', 60000)) AS claimed;
SELECT a2_fail('fail-b', 1, 1, 'fatal', 1);
SELECT * FROM pg_temp.failure('fail-b', 1);
SELECT pg_temp.claimed(a2_claim('fail-b', 'w1', 60000)) AS claimed;

-- no event at that index (NOT_FOUND, Z2003), also when another session has one
SELECT a2_fail('fail-b', 99, 1, 'x', 3);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_fail('fail-b', 2, 1, 'x', 3);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- bad arguments (22023, 22004)
SELECT a2_fail('fail-b', 1, 1, 'x', 0);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_fail('fail-b', 1, NULL, 'x', 3);
\echo SQLSTATE :LAST_ERROR_SQLSTATE

--
-- Snapshot pins: a failure that does not dead-letter keeps everything; a
-- dead-lettering releases the event's pins and collects the session's
-- unreferenced history, as completion does.  (Rows inserted directly;
-- snapshots.sql covers a2_put_snapshots.)
--
SET a2.now = '2026-06-01 02:00:00+00';
SELECT a2_append('fail-p', '[{"id": "fail-p-1", "type": "job"}, {"id": "fail-p-2", "type": "job"}]')
       -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('fail-p', 'w1', 60000)) AS claimed;
INSERT INTO a2_snapshot_history VALUES
  ('fail-p', 'r', 1, '{"at": 1}', 0),
  ('fail-p', 'r', 2, '{"at": 2}', 0),
  ('fail-p', 'r', 3, '{"at": 3}', 0),
  ('fail-p-other', 'r', 1, '{"at": 1}', 0);
INSERT INTO a2_snapshot_pins VALUES
  ('fail-p', 1, 'r', 1),
  ('fail-p', 1, 'r', 2),
  ('fail-p', 2, 'r', 2);

CREATE FUNCTION pg_temp.pins() RETURNS TABLE (session_id text, event_index bigint, reducer_name text, up_to_index bigint)
LANGUAGE sql AS $$
  SELECT session_id, event_index, reducer_name, up_to_index FROM a2_snapshot_pins
   WHERE session_id LIKE 'fail-p%' ORDER BY 1, 2, 3, 4
$$;
CREATE FUNCTION pg_temp.history() RETURNS TABLE (session_id text, reducer_name text, up_to_index bigint)
LANGUAGE sql AS $$
  SELECT session_id, reducer_name, up_to_index FROM a2_snapshot_history
   WHERE session_id LIKE 'fail-p%' ORDER BY 1, 2, 3
$$;

-- a plain failure (and a superseded one) releases nothing, not even the
-- unpinned r/3
SELECT a2_fail('fail-p', 1, 1, 'retry', 2);
SELECT a2_fail('fail-p', 2, 7, 'stale', 1);
SELECT * FROM pg_temp.pins();
SELECT * FROM pg_temp.history();

-- dead-lettering 1: its pins go, r/1 and r/3 go, r/2 stays pinned by 2,
-- the other session's row stays
SELECT pg_temp.claimed(a2_claim('fail-p', 'w1', 60000)) AS claimed;
SELECT a2_fail('fail-p', 1, 2, 'gave up', 2);
SELECT * FROM pg_temp.pins();
SELECT * FROM pg_temp.history();

-- dead-lettering 2 releases the rest
SELECT a2_fail('fail-p', 2, 1, 'gave up', 1);
SELECT * FROM pg_temp.pins();
SELECT * FROM pg_temp.history();
