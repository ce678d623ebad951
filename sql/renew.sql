--
-- renew: a2_renew(session_id, holder, claims, ttl_ms, expires_at)
-- (SPEC sections 3, 4 "renew")
--
\set VERBOSITY terse
SET a2.now = '2026-04-01 00:00:00+00';

-- the lease columns as stored, for one session
CREATE FUNCTION pg_temp.leases(s text)
RETURNS TABLE (idx bigint, processed boolean, dead boolean, attempt_count int,
			   claim_holder text, claim_expires_at text, last_claimed_at text)
LANGUAGE sql AS $$
  SELECT e.idx, e.processed_at IS NOT NULL, e.failed_at IS NOT NULL,
         e.attempt_count, e.claim_holder,
         to_char(to_timestamp(e.claim_expires_at / 1000.0) AT TIME ZONE 'UTC', 'HH24:MI:SS.MS'),
         to_char(to_timestamp(e.last_claimed_at / 1000.0) AT TIME ZONE 'UTC', 'HH24:MI:SS.MS')
    FROM a2_events e WHERE e.session_id = s ORDER BY e.idx
$$;

-- an empty list renews nothing
SELECT a2_renew('renew-a', 'w1', '[]', 30000);

--
-- Seven events in the states renew distinguishes:
--   1 held by w2 (another holder)
--   2 held by w1, lease expiring at 00:00:05
--   3 held by w1, live lease                          -> renewed
--   4 completed by attempt 1
--   5 dead-lettered at attempt 1
--   6 failed at attempt 1, re-claimed: attempt 2 held by w1
--   7 held by w1, live lease                          -> renewed
--
SELECT a2_append('renew-a', '[{"id": "renew-a-1", "type": "t"}]') -> 'hasPending' AS has_pending;
SELECT a2_claim('renew-a', 'w2', 60000) ->> 'outcome' AS outcome;
SELECT a2_append('renew-a', '[{"id": "renew-a-2", "type": "t"}]') -> 'hasPending' AS has_pending;
SELECT a2_claim('renew-a', 'w1', 60000, '2026-04-01 00:00:05+00') ->> 'outcome' AS outcome;
SELECT a2_append('renew-a', '[
  {"id": "renew-a-3", "type": "t"}, {"id": "renew-a-4", "type": "t"},
  {"id": "renew-a-5", "type": "t"}, {"id": "renew-a-6", "type": "t"},
  {"id": "renew-a-7", "type": "t"}
]') -> 'hasPending' AS has_pending;
SELECT a2_claim('renew-a', 'w1', 60000) ->> 'outcome' AS outcome;
SELECT a2_complete('renew-a', 4, 1) ->> 'outcome' AS outcome;
SELECT a2_fail('renew-a', 5, 1, 'gave up', 1) ->> 'outcome' AS outcome;
SELECT a2_fail('renew-a', 6, 1, 'try again', 5) ->> 'outcome' AS outcome;
SELECT jsonb_path_query(a2_claim('renew-a', 'w1', 60000), '$.events[*].index') AS reclaimed;
SELECT * FROM pg_temp.leases('renew-a');

--
-- At 00:00:10 (2 has expired) w1 renews everything as attempt 1, listed
-- out of order, plus an index that does not exist: renewed 3 and 7;
-- superseded 6 (its attempt moved on); neither 1 (other holder), 2
-- (expired), 4 (processed), 5 (dead-lettered), 99 (no such event).
-- Both lists come back sorted.
--
SET a2.now = '2026-04-01 00:00:10+00';
SELECT a2_renew('renew-a', 'w1', '[
  {"index": 7, "attempt": 1}, {"index": 99, "attempt": 1},
  {"index": 6, "attempt": 1}, {"index": 5, "attempt": 1},
  {"index": 4, "attempt": 1}, {"index": 3, "attempt": 1},
  {"index": 2, "attempt": 1}, {"index": 1, "attempt": 1}
]', 30000);
-- only the renewed leases moved, to now + ttl_ms; nothing else changed
SELECT * FROM pg_temp.leases('renew-a');

-- the current attempt of 6 renews; an attempt it never reached does not,
-- and is not superseded either
SELECT a2_renew('renew-a', 'w1', '[{"index": 6, "attempt": 2}]', 30000);
SELECT a2_renew('renew-a', 'w1', '[{"index": 6, "attempt": 3}]', 30000);
-- w2 renews its own lease (1), not w1's (3)
SELECT a2_renew('renew-a', 'w2', '[{"index": 1, "attempt": 1}, {"index": 3, "attempt": 1}]', 30000);
-- the same indexes in another session are not these events
SELECT a2_renew('renew-other', 'w1', '[{"index": 3, "attempt": 1}, {"index": 6, "attempt": 1}]', 30000);
SELECT * FROM pg_temp.leases('renew-a');

-- expires_at replaces now + ttl_ms
SELECT a2_renew('renew-a', 'w1', '[{"index": 3, "attempt": 1}]', 30000,
                '2026-04-01 02:00:00+00');
SELECT * FROM pg_temp.leases('renew-a') WHERE idx = 3;

--
-- a lease is live while claim_expires_at > now: at 00:00:40 exactly,
-- 7's lease (00:00:40) has expired and is not renewed, 6's (00:00:40) too
--
SET a2.now = '2026-04-01 00:00:39.999+00';
SELECT a2_renew('renew-a', 'w1', '[{"index": 6, "attempt": 2}]', 1);
SET a2.now = '2026-04-01 00:00:40+00';
SELECT a2_renew('renew-a', 'w1', '[{"index": 6, "attempt": 2}, {"index": 7, "attempt": 1}]', 30000);
SELECT * FROM pg_temp.leases('renew-a') WHERE idx IN (6, 7);

-- an expired lease that was re-claimed belongs to the new attempt: the old
-- one is superseded, the new one renews
SELECT jsonb_path_query(a2_claim('renew-a', 'w3', 60000), '$.events[*].index') AS reclaimed;
SELECT a2_renew('renew-a', 'w1', '[{"index": 2, "attempt": 1}, {"index": 6, "attempt": 2}, {"index": 7, "attempt": 1}]', 30000);
SELECT a2_renew('renew-a', 'w3', '[{"index": 2, "attempt": 2}, {"index": 6, "attempt": 3}, {"index": 7, "attempt": 2}]', 30000);

-- once processed, older attempts are superseded, the last one is in neither list
SELECT a2_complete('renew-a', 6, 3) ->> 'outcome' AS outcome;
SELECT a2_renew('renew-a', 'w3', '[{"index": 6, "attempt": 1}]', 30000);
SELECT a2_renew('renew-a', 'w3', '[{"index": 6, "attempt": 2}]', 30000);
SELECT a2_renew('renew-a', 'w3', '[{"index": 6, "attempt": 3}]', 30000);

SELECT * FROM pg_temp.leases('renew-a');

-- bad arguments (22023, 22004)
SELECT a2_renew('renew-a', 'w3', '{"index": 2, "attempt": 2}', 30000);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_renew('renew-a', 'w3', '[{"index": 2}]', 30000);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_renew('renew-a', 'w3', '[{"index": 2, "attempt": 0}]', 30000);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_renew('renew-a', 'w3', NULL, 30000);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
