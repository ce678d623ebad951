--
-- scheduling: delayed events, retry backoff and durable timers (SPEC 7.1),
-- all driven with a2.now.
--
-- An event with notBefore is not claimed before that time; a claim that
-- finds only leased or not-yet-due work answers busy with the earliest
-- time something becomes claimable; a failed attempt can back off with
-- retry_after_ms; a completion that returns a delayed event is a timer.
--
\set VERBOSITY terse

-- claimed(result): the indexes a claim took, else its outcome and retryAt
CREATE FUNCTION pg_temp.claimed(r jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE r ->> 'outcome'
           WHEN 'claimed' THEN 'claimed ' || (SELECT string_agg(e ->> 'index', ',')
                                                FROM jsonb_array_elements(r -> 'events') e)
           WHEN 'busy' THEN 'busy until ' || (r ->> 'retryAt')
           ELSE r ->> 'outcome' END
$$;

-- claims(result of a2_claim_next): "session:index ..." then the retryAt
CREATE FUNCTION pg_temp.claims(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE((SELECT string_agg(c ->> 'sessionId' || ':' ||
                          (SELECT string_agg(e ->> 'index', ',') FROM jsonb_array_elements(c -> 'events') e),
                          ' ' ORDER BY co)
                    FROM jsonb_array_elements(j -> 'claims') WITH ORDINALITY AS x(c, co)), '-')
         || ' retry ' || COALESCE(j ->> 'retryAt', 'null')
$$;

--
-- 1. A delayed event: stored with notBefore (ISO, or any timestamptz
-- literal), shown only when set, not claimed before it is due.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT e ->> 'index' AS index, e ->> 'notBefore' AS not_before, e ? 'notBefore' AS has_key
  FROM jsonb_array_elements(a2_append('sched-a', '[
    {"id": "sched-a1", "type": "remind", "notBefore": "2026-07-01T00:10:00.000Z"},
    {"id": "sched-a2", "type": "now"},
    {"id": "sched-a3", "type": "literal", "notBefore": "2026-07-01 02:10:00+02"}
  ]') -> 'events') e;
SELECT not_before FROM a2_events WHERE session_id = 'sched-a' ORDER BY idx;
-- a2_read shows the key on the delayed events only
SELECT e ->> 'index' AS index, e ->> 'notBefore' AS not_before, e ? 'notBefore' AS has_key
  FROM jsonb_array_elements(a2_read('sched-a')) e;

-- now: only event 2; then busy until the earliest of its lease (00:01)
-- and the due time (00:10)
SELECT pg_temp.claimed(a2_claim('sched-a', 'w', 60000));
SELECT pg_temp.claimed(a2_claim('sched-a', 'w', 60000));
SELECT a2_complete('sched-a', 2, 1) ->> 'outcome';
-- nothing leased: busy until the due time, not settled
SELECT pg_temp.claimed(a2_claim('sched-a', 'w', 60000));
SET a2.now = '2026-07-01 00:09:59.999+00';
SELECT pg_temp.claimed(a2_claim('sched-a', 'w', 60000));
-- due: both delayed events are claimed at 00:10
SET a2.now = '2026-07-01 00:10:00+00';
SELECT pg_temp.claimed(a2_claim('sched-a', 'w', 60000));

-- a notBefore in the past or equal to now is eligible at once, but stored
SELECT jsonb_path_query_array(a2_append('sched-b', '[
    {"id": "sched-b1", "type": "past", "notBefore": "2020-01-01T00:00:00Z"},
    {"id": "sched-b2", "type": "now", "notBefore": "2026-07-01T00:10:00Z"}
  ]'), '$.events[*].notBefore') AS stored;
SELECT pg_temp.claimed(a2_claim('sched-b', 'w', 60000));

-- settled only when nothing is leased or scheduled
SELECT a2_complete('sched-b', 1, 1) ->> 'outcome', a2_complete('sched-b', 2, 1) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('sched-b', 'w', 60000));

--
-- 2. Lanes: a delayed event heading its lane blocks the lane until it is
-- due and processed; events without a lane are independent.
--
SET a2.now = '2026-07-02 00:00:00+00';
SELECT jsonb_path_query_array(a2_append('sched-l', '[
    {"id": "sched-l1", "type": "first", "lane": "L", "notBefore": "2026-07-02T01:00:00Z"},
    {"id": "sched-l2", "type": "second", "lane": "L"},
    {"id": "sched-l3", "type": "free"}
  ]'), '$.events[*].index') AS appended;
SELECT pg_temp.claimed(a2_claim('sched-l', 'w', 60000));
SELECT a2_complete('sched-l', 3, 1) ->> 'outcome';
-- lane L waits for its delayed head: busy until 01:00, not settled
SELECT pg_temp.claimed(a2_claim('sched-l', 'w', 60000));
SET a2.now = '2026-07-02 01:00:00+00';
SELECT pg_temp.claimed(a2_claim('sched-l', 'w', 60000));
SELECT a2_complete('sched-l', 1, 1) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('sched-l', 'w', 60000));

--
-- 3. Backoff: a failed attempt with retry_after_ms is due again at
-- now + retry_after_ms; without it (or 0) at once.
--
SET a2.now = '2026-07-03 00:00:00+00';
SELECT jsonb_path_query_array(a2_append('sched-f', '[{"id": "sched-f1", "type": "flaky"}]'), '$.events[*].index');
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));
SELECT a2_fail('sched-f', 1, 1, 'upstream 503', 5, 30000);
SELECT e ->> 'notBefore' AS not_before, e ->> 'claimHolder' AS holder
  FROM jsonb_array_elements(a2_read('sched-f')) e;
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));
-- the idempotent repeat of the failed call changes nothing
SET a2.now = '2026-07-03 00:00:05+00';
SELECT a2_fail('sched-f', 1, 1, 'upstream 503', 5, 60000);
SELECT not_before, failure_count FROM a2_events WHERE session_id = 'sched-f';
SET a2.now = '2026-07-03 00:00:30+00';
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));
-- retry_after_ms 0 or NULL: claimable again at once (not_before unchanged)
SELECT a2_fail('sched-f', 1, 2, 'again', 5, 0) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));
SELECT a2_fail('sched-f', 1, 3, 'again', 5) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));
-- dead-lettering ignores the backoff; a redrive clears not_before
SELECT a2_fail('sched-f', 1, 4, 'gave up', 4, 600000);
SELECT not_before IS NULL AS cleared_before FROM a2_events WHERE session_id = 'sched-f';
UPDATE a2_events SET not_before = 1783036800000 WHERE session_id = 'sched-f';  -- as if scheduled far ahead
SELECT a2_redrive('sched-f', 1) ->> 'outcome';
SELECT not_before IS NULL AS cleared FROM a2_events WHERE session_id = 'sched-f';
SELECT pg_temp.claimed(a2_claim('sched-f', 'w', 60000));

--
-- 4. A durable timer: a completion that returns a delayed event.
--
SET a2.now = '2026-07-04 00:00:00+00';
SELECT jsonb_path_query_array(a2_append('sched-t', '[{"id": "sched-t1", "type": "order.placed"}]'), '$.events[*].index');
SELECT pg_temp.claimed(a2_claim('sched-t', 'w', 60000));
SELECT r ->> 'outcome' AS outcome, r -> 'events' -> 0 ->> 'notBefore' AS timer
  FROM a2_complete('sched-t', 1, 1,
         '[{"id": "sched-t1/recheck", "type": "order.recheck", "notBefore": "2026-07-04T01:00:00Z"}]') r;
SELECT pg_temp.claimed(a2_claim('sched-t', 'w', 60000));
-- a replay of the completion returns the stored timer
SELECT r ->> 'outcome' AS outcome, r -> 'events' -> 0 ->> 'notBefore' AS timer
  FROM a2_complete('sched-t', 1, 1,
         '[{"id": "sched-t1/recheck", "type": "order.recheck", "notBefore": "2026-07-04T01:00:00Z"}]') r;
SET a2.now = '2026-07-04 01:00:00+00';
SELECT pg_temp.claimed(a2_claim('sched-t', 'w', 60000));

--
-- 5. Replay compares notBefore like type, payload, lane and cause.
--
SELECT jsonb_path_query_array(a2_append('sched-a', '[
    {"id": "sched-a1", "type": "remind", "notBefore": "2026-07-01T00:10:00.000Z"},
    {"id": "sched-a2", "type": "now"},
    {"id": "sched-a3", "type": "literal", "notBefore": "2026-07-01 02:10:00+02"}
  ]'), '$.events[*].index') AS replayed;
SELECT a2_append('sched-a', '[{"id": "sched-a1", "type": "remind"}]');
SELECT a2_append('sched-a', '[{"id": "sched-a2", "type": "now", "notBefore": "2026-07-01T00:10:00Z"}]');
SELECT a2_append('sched-a', '[{"id": "sched-a1", "type": "remind", "notBefore": "2026-07-01T00:10:00.001Z"}]');

--
-- 6. a2_claim_next orders by when work became available, due times
-- included, and its retryAt covers scheduled work.
--
BEGIN;
DELETE FROM a2_events;
SET LOCAL a2.now = '2026-08-01 00:00:00+00';
SELECT a2_append('sched-n-late', '[{"type": "x", "notBefore": "2026-08-01T00:00:10Z"}]') IS NOT NULL AS appended;
SET LOCAL a2.now = '2026-08-01 00:00:05+00';
SELECT a2_append('sched-n-early', '[{"type": "x"}]') IS NOT NULL AS appended;
SELECT a2_append('sched-n-future', '[{"type": "x", "notBefore": "2026-08-01T01:00:00Z"}]') IS NOT NULL AS appended;
SET LOCAL a2.now = '2026-08-01 00:00:20+00';
-- sched-n-late was created first but fell due at :10, after sched-n-early
-- (created :05): early first; the future one is the retryAt
SELECT pg_temp.claims(a2_claim_next('w', 3600000 * 2, 10));
SET LOCAL a2.now = '2026-08-01 01:00:00+00';
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10));
ROLLBACK;

--
-- 7. Metrics: scheduled events and the earliest due time, apart from the
-- eligible ones.
--
BEGIN;
DELETE FROM a2_events;
SET LOCAL a2.now = '2026-09-01 00:00:00+00';
SELECT a2_append('sched-m', '[{"type": "now"}, {"type": "soon", "notBefore": "2026-09-01T00:05:00Z"},
                              {"type": "later", "notBefore": "2026-09-02T00:00:00Z"}]') IS NOT NULL AS appended;
SELECT eligible_events, scheduled_events, earliest_due_at AT TIME ZONE 'UTC' AS earliest_due_utc FROM a2_metrics();
SET LOCAL a2.now = '2026-09-01 00:05:00+00';
SELECT eligible_events, scheduled_events, earliest_due_at AT TIME ZONE 'UTC' AS earliest_due_utc FROM a2_metrics();
-- scheduled events are unfinished: they keep the session pending
SELECT a2_append('sched-m', '[]') -> 'hasPending' AS has_pending;
SELECT a2_drop_session('sched-m');
ROLLBACK;

--
-- 8. Bad input: 22023 and nothing written.
--
\set VERBOSITY default
SET a2.now = '2026-07-05 00:00:00+00';
SELECT a2_append('sched-bad', '[{"type": "x", "notBefore": 1767225600000}]');
SELECT a2_append('sched-bad', '[{"type": "x", "notBefore": "next tuesday"}]');
SELECT a2_append('sched-bad', '[{"type": "x", "notBefore": "infinity"}]');
SELECT a2_append('sched-bad', '[{"type": "x", "notBefore": "275760-09-14T00:00:00Z"}]');
SELECT a2_append('sched-bad', '[{"type": "x"}, {"type": "y", "notbefore": "2026-07-05T00:00:00Z"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS written FROM a2_events WHERE session_id = 'sched-bad';
-- JSON null is absent
SELECT a2_append('sched-bad', '[{"type": "x", "notBefore": null}]') -> 'events' -> 0 ? 'notBefore' AS has_key;
SELECT pg_temp.claimed(a2_claim('sched-bad', 'w', 60000));
SELECT a2_fail('sched-bad', 1, 1, 'e', 3, -1);
SELECT a2_fail('sched-bad', 1, 1, 'e', 3, 9223372036854775807);
\echo :LAST_ERROR_SQLSTATE
SELECT failure_count, not_before FROM a2_events WHERE session_id = 'sched-bad';
\set VERBOSITY terse

RESET a2.now;
