--
-- waits: durable waits (docs/semantics.md, "Waits"), driven with a2.now.
--
-- An event appended with "waitFor": {"types": [...], "timeoutMs": n} is not
-- claimed until an event of one of those types is appended to its session
-- after it, or until created + timeoutMs, whichever comes first; the claim
-- says which in "waitResult".
--
\set VERBOSITY terse

-- claimed(result): the indexes a claim took (with their waitResult), else
-- its outcome and retryAt
CREATE FUNCTION pg_temp.claimed(r jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE r ->> 'outcome'
           WHEN 'claimed' THEN 'claimed ' || (SELECT string_agg(e ->> 'index' ||
                                                  COALESCE(' ' || (e -> 'waitResult')::text, ''), ', ')
                                                FROM jsonb_array_elements(r -> 'events') e)
           WHEN 'busy' THEN 'busy until ' || (r ->> 'retryAt')
           ELSE r ->> 'outcome' END
$$;

-- waits(result): index, notBefore, waitFor, waitResult of each event
CREATE FUNCTION pg_temp.waits(r jsonb) RETURNS TABLE (index int, not_before text, wait_for jsonb, wait_result jsonb)
LANGUAGE sql AS $$
  SELECT (e ->> 'index')::int, e ->> 'notBefore', e -> 'waitFor', e -> 'waitResult'
    FROM jsonb_array_elements(CASE WHEN jsonb_typeof(r) = 'array' THEN r ELSE r -> 'events' END) e
$$;

-- the stored columns
CREATE FUNCTION pg_temp.stored(s text) RETURNS TABLE (idx bigint, not_before timestamptz, wait_for jsonb, wait_result jsonb)
LANGUAGE sql AS $$
  SELECT idx, to_timestamp(not_before / 1000.0), wait_for, wait_result
    FROM a2_events WHERE session_id = s ORDER BY idx
$$;

-- err(sql): the SQLSTATE, message and detail of the error a statement raises
CREATE FUNCTION pg_temp.err(q text) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE st text; msg text; det text;
BEGIN
  EXECUTE q;
  RETURN 'no error';
EXCEPTION WHEN OTHERS THEN
  GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT, det = PG_EXCEPTION_DETAIL;
  RETURN st || ': ' || msg || COALESCE(' | ' || NULLIF(det, ''), '');
END $$;

SET TIME ZONE 'UTC';

--
-- 1. A wait that ends by event.  The StoredEvent shows waitFor as appended,
-- no notBefore (the event has none of its own) and no waitResult while it
-- waits; the column not_before holds the timeout.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-a', '[
  {"id": "w-a1", "type": "order.placed", "waitFor": {"types": ["payment.confirmed", "payment.failed"], "timeoutMs": 3600000}},
  {"id": "w-a2", "type": "other"}
]'));
SELECT * FROM pg_temp.stored('w-a');
-- only event 2 is claimable; then busy until the timeout
SELECT pg_temp.claimed(a2_claim('w-a', 'w', 60000));
SELECT a2_complete('w-a', 2, 1) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('w-a', 'w', 60000));
-- a2_claim_next passes it by too (it may lease other tests' sessions)
SELECT count(*) AS claimed_next FROM jsonb_array_elements(a2_claim_next('w', 60000, 1000) -> 'claims') c
 WHERE c ->> 'sessionId' = 'w-a';
-- a type nobody waits for changes nothing
SELECT * FROM pg_temp.waits(a2_append('w-a', '[{"type": "payment.pending"}]'));
SELECT * FROM pg_temp.stored('w-a') WHERE idx = 1;
-- the awaited type ends the wait in the same transaction: result, and
-- not_before back to NULL
SET a2.now = '2026-07-01 00:20:00+00';
BEGIN;
SELECT * FROM pg_temp.waits(a2_append('w-a', '[{"type": "payment.failed", "payload": {"code": 7}}]'));
SELECT * FROM pg_temp.stored('w-a') WHERE idx = 1;
COMMIT;
SELECT pg_temp.claimed(a2_claim('w-a', 'w', 60000));
-- reads show it too; a second awaited event changes nothing
SELECT * FROM pg_temp.waits(a2_append('w-a', '[{"type": "payment.confirmed"}]'));
SELECT * FROM pg_temp.waits(a2_read('w-a')) WHERE index = 1;

--
-- 2. A wait that ends by timeout: claimed at created + timeoutMs with
-- {"timedOut": true}; an awaited event after the timeout ends nothing.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-b', '[{"type": "reminder", "waitFor": {"types": ["reply"], "timeoutMs": 60000}}]'));
SET a2.now = '2026-07-01 00:00:59.999+00';
SELECT pg_temp.claimed(a2_claim('w-b', 'w', 60000));
SELECT * FROM pg_temp.waits(a2_read('w-b'));
SET a2.now = '2026-07-01 00:01:00+00';
-- timed out, not yet claimed: a read says so, and a late reply ends nothing
SELECT * FROM pg_temp.waits(a2_read('w-b'));
SELECT * FROM pg_temp.waits(a2_append('w-b', '[{"type": "reply"}]'));
SELECT * FROM pg_temp.stored('w-b');
SELECT pg_temp.claimed(a2_claim('w-b', 'w', 60000));

-- timeoutMs 0: timed out at once (returned so by the append itself)
SELECT * FROM pg_temp.waits(a2_append('w-b0', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 0}}]'));
SELECT pg_temp.claimed(a2_claim('w-b0', 'w', 60000));

-- a claimed event's wait is over: an awaited event after its timeout and
-- claim (even at an earlier a2.now) does not rewrite it
SET a2.now = '2026-07-01 00:00:30+00';
SELECT * FROM pg_temp.waits(a2_append('w-b', '[{"type": "reply"}]'));
SELECT * FROM pg_temp.stored('w-b') WHERE idx = 1;

--
-- 3. No timeout: not_before holds the far-future sentinel (the largest time
-- a2 stores), which a busy claim reports as retryAt; only an event ends it.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-c', '[{"type": "approval", "waitFor": {"types": ["approved"]}}]'));
SELECT not_before FROM a2_events WHERE session_id = 'w-c';
SELECT pg_temp.claimed(a2_claim('w-c', 'w', 60000));
SET a2.now = '2100-01-01 00:00:00+00';
SELECT pg_temp.claimed(a2_claim('w-c', 'w', 60000));
SELECT * FROM pg_temp.waits(a2_append('w-c', '[{"type": "approved"}]'));
SELECT pg_temp.claimed(a2_claim('w-c', 'w', 60000));
-- timeoutMs null means no timeout
SELECT wait_for FROM pg_temp.stored('w-c') WHERE idx = 1;
SELECT * FROM pg_temp.waits(a2_append('w-c', '[{"type": "n", "waitFor": {"types": ["approved"], "timeoutMs": null}}]'));
SELECT not_before, wait_for FROM pg_temp.stored('w-c') WHERE idx = 3;

--
-- 4. With its own notBefore: the StoredEvent keeps showing its own
-- notBefore; not_before is the later of it and the timeout while waiting,
-- and the own notBefore again once an event ends the wait.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-d', '[
  {"type": "a", "notBefore": "2026-07-01T00:10:00Z", "waitFor": {"types": ["go"], "timeoutMs": 60000}},
  {"type": "b", "notBefore": "2026-07-01T00:10:00Z", "waitFor": {"types": ["go"], "timeoutMs": 3600000}}
]'));
SELECT * FROM pg_temp.stored('w-d');
SELECT * FROM pg_temp.waits(a2_append('w-d', '[{"type": "go"}]'));
SELECT * FROM pg_temp.stored('w-d') WHERE idx < 3;
-- both wait for their own notBefore now: the wait's end does not hurry it
SELECT pg_temp.claimed(a2_claim('w-d', 'w', 60000, NULL, ARRAY[3]::bigint[]));
SET a2.now = '2026-07-01 00:10:00+00';
SELECT pg_temp.claimed(a2_claim('w-d', 'w', 60000, NULL, ARRAY[3]::bigint[]));

--
-- 5. Inside one batch: an awaited event after the waiting one ends its wait
-- (the append returns the result), one before it does not; one event ends
-- every wait that names its type; with several awaited events the first
-- after the waiting event is the result.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-e', '[
  {"type": "x"},
  {"type": "w1", "waitFor": {"types": ["x", "y"], "timeoutMs": 1000}},
  {"type": "w2", "waitFor": {"types": ["y"]}},
  {"type": "y"},
  {"type": "x"}
]'));
SELECT * FROM pg_temp.stored('w-e');
SELECT * FROM pg_temp.waits(a2_append('w-f', '[
  {"type": "w1", "waitFor": {"types": ["x"]}},
  {"type": "w2", "waitFor": {"types": ["x", "z"]}},
  {"type": "w3", "waitFor": {"types": ["z"]}}
]'));
SELECT * FROM pg_temp.waits(a2_append('w-f', '[{"type": "z"}, {"type": "x"}]'));
SELECT idx, wait_result FROM pg_temp.stored('w-f');

--
-- 6. Lanes: a waiting event at a lane's head blocks its lane, as a delayed
-- one does; other lanes and lane-less events go on.
--
SELECT * FROM pg_temp.waits(a2_append('w-g', '[
  {"type": "step1", "lane": "L", "waitFor": {"types": ["ok"], "timeoutMs": 60000}},
  {"type": "step2", "lane": "L"},
  {"type": "other", "lane": "M"}
]'));
SELECT pg_temp.claimed(a2_claim('w-g', 'w', 60000));
SELECT a2_complete('w-g', 3, 1) ->> 'outcome';
SELECT * FROM pg_temp.waits(a2_append('w-g', '[{"type": "ok"}]'));
SELECT pg_temp.claimed(a2_claim('w-g', 'w', 60000));
SELECT a2_complete('w-g', 1, 1) ->> 'outcome';
SELECT pg_temp.claimed(a2_claim('w-g', 'w', 60000));

--
-- 7. Completions: a handler returns an event that waits ("continue when X
-- happens"), and a returned event can end a wait.
--
SELECT * FROM pg_temp.waits(a2_append('w-h', '[{"type": "start"}]'));
SELECT pg_temp.claimed(a2_claim('w-h', 'w', 60000));
SELECT * FROM pg_temp.waits(a2_complete('w-h', 1, 1, '[
  {"id": "w-h-cont", "type": "continue", "waitFor": {"types": ["payment.confirmed"], "timeoutMs": 3600000}}
]'));
SELECT pg_temp.claimed(a2_claim('w-h', 'w', 60000));
SELECT * FROM pg_temp.waits(a2_append('w-h', '[{"type": "payment.confirmed"}]'));
SELECT pg_temp.claimed(a2_claim('w-h', 'w', 60000));
-- the completion retried: the same stored children, still ended
SELECT * FROM pg_temp.waits(a2_complete('w-h', 1, 1, '[
  {"id": "w-h-cont", "type": "continue", "waitFor": {"types": ["payment.confirmed"], "timeoutMs": 3600000}}
]'));
-- a completion's returned event ends another event's wait
SELECT * FROM pg_temp.waits(a2_append('w-h', '[{"type": "w", "waitFor": {"types": ["done"]}}]'));
SELECT a2_complete('w-h', 3, 1, '[{"id": "w-h-done", "type": "done"}]') -> 'events' -> 0 ->> 'index' AS returned;
SELECT idx, wait_result FROM pg_temp.stored('w-h') WHERE idx = 4;

--
-- 8. Replays: the same batch again returns the stored events, even after
-- the wait ended (its own notBefore is compared, not the gate); a replay
-- with another wait is a partial duplicate (Z2001).
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z", "waitFor": {"types": ["x"], "timeoutMs": 5000}}]'));
SELECT * FROM pg_temp.waits(a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z", "waitFor": {"types": ["x"], "timeoutMs": 5000}}]'));
SELECT * FROM pg_temp.waits(a2_append('w-i', '[{"type": "x"}]'));
SELECT * FROM pg_temp.waits(a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z", "waitFor": {"types": ["x"], "timeoutMs": 5000}}]'));
SELECT pg_temp.err($q$SELECT a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z", "waitFor": {"types": ["x"], "timeoutMs": 5001}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z", "waitFor": {"types": ["y"], "timeoutMs": 5000}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-i', '[{"id": "w-i1", "type": "t", "notBefore": "2026-07-02T00:00:00Z"}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-i', '[{"id": "w-i1", "type": "t", "waitFor": {"types": ["x"], "timeoutMs": 5000}}]')$q$);

--
-- 9. Errors: 22023 for every bad shape, nothing written.
--
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": ["x"]}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": "x"}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": null}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": "x"}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": {"x": 1}}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": []}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x", 1]}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x", null]}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": [""]}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', jsonb_build_array(jsonb_build_object('type', 't', 'waitFor',
  jsonb_build_object('types', jsonb_build_array(repeat('x', 1025))))))$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', jsonb_build_array(jsonb_build_object('type', 't', 'waitFor',
  jsonb_build_object('types', (SELECT jsonb_agg('t' || i) FROM generate_series(1, 101) i)))))$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": -1}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 1.5}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": "60000"}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 9223372036854775807}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 8640000000000000}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 1e30}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "waitFor": {"types": ["x"], "timeout": 5}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "t", "settled": true, "waitFor": {"types": ["x"]}}]')$q$);
SELECT pg_temp.err($q$SELECT a2_append('w-err', '[{"type": "ok"}, {"type": "t", "waitFor": {"types": ["x"], "timeoutMs": 1, "extra": true}}]')$q$);
-- a returned event is checked the same way
SELECT pg_temp.err($q$SELECT a2_complete('w-h', 5, 1, '[{"id": "w-err-c", "type": "t", "waitFor": {"types": []}}]')$q$);
-- nothing was written
SELECT count(*) FROM a2_events WHERE session_id = 'w-err';
-- 100 types, each 1024 bytes, and a waitFor of JSON null (absent) pass
SELECT jsonb_array_length(e -> 'waitFor' -> 'types') AS types
  FROM jsonb_array_elements(a2_append('w-ok', jsonb_build_array(jsonb_build_object('type', 't', 'waitFor',
    jsonb_build_object('types', (SELECT jsonb_agg(repeat('t', 1021) || lpad(i::text, 3, '0')) FROM generate_series(1, 100) i))))) -> 'events') e;
SELECT e ? 'waitFor' AS has_wait FROM jsonb_array_elements(a2_append('w-ok', '[{"type": "t", "waitFor": null}]') -> 'events') e;

--
-- 10. Without waitFor nothing changes: no new keys, NULL columns.
--
SELECT e ? 'waitFor' OR e ? 'waitResult' AS wait_keys
  FROM jsonb_array_elements(a2_append('w-none', '[{"type": "t"}]') -> 'events') e;
SELECT wait_for IS NULL AND wait_result IS NULL AS no_wait FROM a2_events WHERE session_id = 'w-none';

--
-- 11. Waits compose with queues, priorities and concurrency limits
-- (docs/semantics.md, "Queues, priorities and limits"): a waiting event in
-- a named queue, with a priority and a concurrency key, is not claimed by
-- a2_claim_next(queues => ...) before its condition; once an append ends
-- the wait it is served in priority order and within its key's limit.
--
-- claimed_next(result): session:index of each claimed event (with its
-- waitResult), else the retryAt
CREATE FUNCTION pg_temp.claimed_next(r jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE((SELECT string_agg(c ->> 'sessionId' || ':' || (e ->> 'index') ||
                                     COALESCE(' ' || (e -> 'waitResult')::text, ''), ', ')
                     FROM jsonb_array_elements(r -> 'claims') c, jsonb_array_elements(c -> 'events') e),
                  'nothing, retryAt ' || COALESCE(r ->> 'retryAt', 'null'))
$$;
SET a2.now = '2026-08-01 00:00:00+00';
SELECT a2_set_concurrency_limit('wk-waits', 1);
-- w-q1: two keyed priority-5 events waiting for "go" without timeout;
-- w-q3: a keyed priority-9 event waiting for "go" up to 10 minutes;
-- w-q2: a priority-1 event of the same queue, no key, no wait
SELECT * FROM pg_temp.waits(a2_append('w-q1', '[
  {"id": "w-q1-a", "type": "job", "queue": "wq-waits", "priority": 5, "concurrencyKey": "wk-waits", "waitFor": {"types": ["go"]}},
  {"id": "w-q1-b", "type": "job", "queue": "wq-waits", "priority": 5, "concurrencyKey": "wk-waits", "waitFor": {"types": ["go"]}}
]'));
SELECT * FROM pg_temp.waits(a2_append('w-q3', '[
  {"id": "w-q3-a", "type": "job", "queue": "wq-waits", "priority": 9, "concurrencyKey": "wk-waits", "waitFor": {"types": ["go"], "timeoutMs": 600000}}
]'));
SELECT e ->> 'queue' AS queue, e ->> 'priority' AS priority
  FROM jsonb_array_elements(a2_append('w-q2', '[{"id": "w-q2-a", "type": "job", "queue": "wq-waits", "priority": 1}]') -> 'events') e;
-- before the condition only w-q2's event is served; the waiting ones are
-- not, whatever their priority
SELECT pg_temp.claimed_next(a2_claim_next('w', 1000, 10, NULL, '{wq-waits}'));
SELECT pg_temp.claimed(a2_claim('w-q1', 'w', 60000, NULL, '{}', '{wq-waits}'));
SELECT pg_temp.claimed(a2_claim('w-q3', 'w', 60000, NULL, '{}', '{wq-waits}'));
-- two seconds on: w-q2's lease expired; still nothing waiting is served
SET a2.now = '2026-08-01 00:00:02+00';
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 10, NULL, '{wq-waits}'));
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 10, NULL, '{wq-waits}'));
SELECT a2_complete('w-q2', 1, 2) ->> 'outcome' AS completed;
-- a priority-0 event of the queue, available now, to be served last
SELECT a2_append('w-q2', '[{"id": "w-q2-b", "type": "job", "queue": "wq-waits"}]') -> 'events' -> 0 ->> 'index' AS index;
-- "go" in both sessions ends the three waits (the "go" events themselves
-- are in the default queue, which these claims do not serve)
SELECT * FROM pg_temp.waits(a2_append('w-q1', '[{"id": "w-q1-go", "type": "go"}]'));
SELECT * FROM pg_temp.waits(a2_append('w-q3', '[{"id": "w-q3-go", "type": "go"}]'));
SELECT idx, wait_result FROM pg_temp.stored('w-q1') UNION ALL SELECT idx, wait_result FROM pg_temp.stored('w-q3');
-- one session per call: priority 9 first; then w-q1's priority 5 is held
-- back by the key's limit (w-q3's event holds its one slot), so the
-- priority-0 event of w-q2 comes next
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 1, NULL, '{wq-waits}'));
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 1, NULL, '{wq-waits}'));
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 1, NULL, '{wq-waits}'));
SELECT key, max_leased, leased, at_limit FROM a2_list_limits() WHERE key = 'wk-waits';
-- the slot frees: one of w-q1's two keyed events, never both
SELECT a2_complete('w-q3', 1, 1) ->> 'outcome' AS completed;
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 10, NULL, '{wq-waits}'));
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 10, NULL, '{wq-waits}'));
SELECT a2_complete('w-q1', 1, 1) ->> 'outcome' AS completed;
SELECT pg_temp.claimed_next(a2_claim_next('w', 60000, 10, NULL, '{wq-waits}'));
SELECT a2_set_concurrency_limit('wk-waits', NULL);
RESET a2.now;

--
-- 12. After the wait: a2_fail's retry time is the event's notBefore, as for
-- any event (the stress suite caught a claimed event still showing its own,
-- earlier notBefore after a backoff had moved the column past the claim).
-- Ended by an event, then claimed and failed with a retry of 30 s: the
-- column and the StoredEvent both say 00:05:30, and no claim comes sooner.
--
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-r1', '[
  {"type": "a", "notBefore": "2026-07-01T00:01:00Z", "waitFor": {"types": ["go"], "timeoutMs": 600000}}
]'));
SELECT * FROM pg_temp.waits(a2_append('w-r1', '[{"type": "go"}]'));
SET a2.now = '2026-07-01 00:05:00+00';
SELECT pg_temp.claimed(a2_claim('w-r1', 'w', 60000, NULL, ARRAY[2]::bigint[]));
SELECT a2_fail('w-r1', 1, 1, 'later', 5, 30000) ->> 'outcome' AS failed;
SELECT * FROM pg_temp.waits(a2_read('w-r1')) WHERE index = 1;
SELECT * FROM pg_temp.stored('w-r1') WHERE idx = 1;
SELECT pg_temp.claimed(a2_claim('w-r1', 'w', 60000, NULL, ARRAY[2]::bigint[]));
SET a2.now = '2026-07-01 00:05:30+00';
SELECT pg_temp.claimed(a2_claim('w-r1', 'w', 60000, NULL, ARRAY[2]::bigint[]));
-- Timed out, claimed, failed without a retry: the column keeps the gate (the
-- timeout, later than the own notBefore) and the StoredEvent its own
-- notBefore; then failed with a retry: the retry time.
SET a2.now = '2026-07-01 00:00:00+00';
SELECT * FROM pg_temp.waits(a2_append('w-r2', '[
  {"type": "a", "notBefore": "2026-07-01T00:00:10Z", "waitFor": {"types": ["go"], "timeoutMs": 60000}}
]'));
SET a2.now = '2026-07-01 00:01:00+00';
SELECT pg_temp.claimed(a2_claim('w-r2', 'w', 60000));
SELECT a2_fail('w-r2', 1, 1, 'again', 5) ->> 'outcome' AS failed;
SELECT * FROM pg_temp.stored('w-r2');
SELECT * FROM pg_temp.waits(a2_read('w-r2'));
SELECT pg_temp.claimed(a2_claim('w-r2', 'w', 60000));
SELECT a2_fail('w-r2', 1, 2, 'later', 5, 45000) ->> 'outcome' AS failed;
SELECT * FROM pg_temp.waits(a2_read('w-r2'));
RESET a2.now;
