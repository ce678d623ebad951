--
-- complete: a2_complete(session_id, event_index, attempt, events)
-- (SPEC sections 1, 3, 4 "complete", 5)
--
\set VERBOSITY terse
SET a2.now = '2026-05-01 00:00:00+00';

-- ev(result) and claimed(result): test/lib/regress.sql
\i test/lib/regress.sql

-- the dispatch columns as stored, for one session (times as HH:MI:SS)
CREATE FUNCTION pg_temp.rows(s text)
RETURNS TABLE (idx bigint, event_id text, lane text, lane_ready boolean,
			   processed_at text, processed_by_attempt int,
			   returned_event_ids jsonb, attempt_count int,
			   claim_holder text, claim_expires_at text, dead boolean)
LANGUAGE sql AS $$
  SELECT e.idx, e.event_id, e.lane, e.lane_ready,
         to_char(to_timestamp(e.processed_at / 1000.0) AT TIME ZONE 'UTC', 'HH24:MI:SS'),
         e.processed_by_attempt, e.returned_event_ids, e.attempt_count,
         e.claim_holder,
         to_char(to_timestamp(e.claim_expires_at / 1000.0) AT TIME ZONE 'UTC', 'HH24:MI:SS'),
         e.failed_at IS NOT NULL
    FROM a2_events e WHERE e.session_id = s ORDER BY e.idx
$$;

--
-- Completing an attempt: 1 and 2 share lane x, 3 has no lane, 4 is in lane y
--
SELECT a2_append('complete-a', '[
  {"id": "complete-a-1", "type": "job", "lane": "x"},
  {"id": "complete-a-2", "type": "job", "lane": "x"},
  {"id": "complete-a-3", "type": "job"},
  {"id": "complete-a-4", "type": "job", "lane": "y"}
]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-a', 'w1', 60000)) AS claimed;

-- the children take the next indexes, with cause {index, attempt} of the
-- completed attempt, created at the completion's single clock reading;
-- lane readiness and settled as in append (c2 waits behind 2 in lane x)
SET a2.now = '2026-05-01 00:00:05+00';
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]') AS r \gset
SELECT :'r'::jsonb ->> 'outcome' AS outcome;
SELECT index, id, type, payload, cause, lane, created_at, processed_at
  FROM pg_temp.ev(:'r');
SELECT string_agg(k, ', ' ORDER BY k) AS keys
  FROM jsonb_object_keys(:'r'::jsonb -> 'events' -> 0) k;

-- the parent is processed by attempt 1 with the returned ids, its lease is
-- cleared and it is no longer lane-ready; 2, the oldest unprocessed event
-- of lane x, became lane-ready
SELECT * FROM pg_temp.rows('complete-a');
SELECT index, processed_at, processed_by_attempt, returned_event_ids,
       claim_holder, claim_expires_at
  FROM pg_temp.ev(a2_read('complete-a', 0, 1));

-- so the next claim takes 2 (lane x's new head) and the ready children
SELECT pg_temp.claimed(a2_claim('complete-a', 'w1', 60000)) AS claimed;

--
-- Idempotent retry: the same attempt repeating the same batch gets the
-- stored children back (as they are now) and nothing is written
--
SET a2.now = '2026-05-01 00:00:20+00';
SELECT count(*) AS rows_before FROM a2_events WHERE session_id = 'complete-a';
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]') AS r \gset
SELECT :'r'::jsonb ->> 'outcome' AS outcome;
SELECT index, id, cause, created_at, processed_at, attempt_count, claim_holder
  FROM pg_temp.ev(:'r');
SELECT count(*) AS rows_after FROM a2_events WHERE session_id = 'complete-a';
SELECT * FROM pg_temp.rows('complete-a') WHERE idx = 1;

-- another attempt of a processed event is superseded
SELECT a2_complete('complete-a', 1, 2, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]');

-- a retry that returns a different batch is PARTIAL_DUPLICATE_BATCH (Z2001):
-- another id, fewer events, another order, no events
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c5", "type": "child", "lane": "z"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-a', 1, 1, '[]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- the same ids with another payload, type or lane (Z2001)
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 2}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child", "lane": "x"},
  {"id": "complete-c3", "type": "child", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-a', 1, 1, '[
  {"id": "complete-c1", "type": "child", "payload": {"n": 1}},
  {"id": "complete-c2", "type": "child"},
  {"id": "complete-c3", "type": "note", "settled": true},
  {"id": "complete-c4", "type": "child", "lane": "z"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT count(*) AS rows_after FROM a2_events WHERE session_id = 'complete-a';

-- a completion without children, and its retry
SELECT a2_complete('complete-a', 3, 1);
SELECT a2_complete('complete-a', 3, 1, '[]');
SELECT a2_complete('complete-a', 3, 1, NULL);
SELECT a2_complete('complete-a', 3, 1, '[{"id": "complete-c6", "type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.rows('complete-a') WHERE idx = 3;

--
-- Superseded: the attempt is stale, the lease was released by a failure,
-- the event was dead-lettered or never claimed.  A superseded completion
-- writes nothing, children included.  Completion is fenced by attempt,
-- not by lease time: an expired lease nobody re-claimed still completes.
--
SET a2.now = '2026-05-01 01:00:00+00';
SELECT a2_append('complete-s', '[
  {"id": "complete-s-1", "type": "job"}, {"id": "complete-s-2", "type": "job"},
  {"id": "complete-s-3", "type": "job"}, {"id": "complete-s-4", "type": "job"},
  {"id": "complete-s-5", "type": "job"}
]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-s', 'w1', 10000, exclude_indexes => '{4}')) AS claimed;
SELECT a2_fail('complete-s', 2, 1, 'try again', 5) ->> 'outcome' AS outcome;
SELECT a2_fail('complete-s', 3, 1, 'gave up', 1) ->> 'outcome' AS outcome;
SET a2.now = '2026-05-01 01:00:20+00';
-- 5: lease expired at 01:00:10, nobody re-claimed it: completed
SELECT a2_complete('complete-s', 5, 1) ->> 'outcome' AS outcome;
-- 2: failed, so no holder: superseded
SELECT a2_complete('complete-s', 2, 1, '[{"id": "complete-s-x2", "type": "child"}]');
-- 3: dead-lettered: superseded
SELECT a2_complete('complete-s', 3, 1, '[{"id": "complete-s-x3", "type": "child"}]');
-- 4: never claimed (attempt 0): superseded
SELECT a2_complete('complete-s', 4, 1, '[{"id": "complete-s-x4", "type": "child"}]');
-- 1: expired and re-claimed, so attempt 1 is stale: superseded; attempt 2 completes
SELECT pg_temp.claimed(a2_claim('complete-s', 'w2', 10000, exclude_indexes => '{2,4}')) AS claimed;
SELECT a2_complete('complete-s', 1, 1, '[{"id": "complete-s-x1", "type": "child"}]');
SELECT * FROM pg_temp.rows('complete-s');
SELECT a2_complete('complete-s', 1, 2, '[{"id": "complete-s-x1", "type": "child"}]') ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.rows('complete-s');

--
-- Errors; each writes nothing
--
SET a2.now = '2026-05-01 02:00:00+00';
SELECT a2_append('complete-e', '[{"id": "complete-e-1", "type": "job"}]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-e', 'w1', 60000)) AS claimed;
-- no event at that index (NOT_FOUND, Z2003), also when another session has one
SELECT a2_complete('complete-e', 99, 1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-e', 2, 1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- a returned id that already exists, in this session or another (Z2001)
SELECT a2_complete('complete-e', 1, 1, '[{"id": "complete-e-1", "type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-e', 1, 1, '[{"id": "complete-e-new", "type": "child"}, {"id": "complete-c1", "type": "child", "payload": {"n": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- the same returned id twice (Z2001)
SELECT a2_complete('complete-e', 1, 1, '[{"id": "complete-e-2", "type": "child"}, {"id": "complete-e-2", "type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- cause is not accepted in returned events, ids are required (22023)
SELECT a2_complete('complete-e', 1, 1, '[{"id": "complete-e-2", "type": "child", "cause": {"index": 1, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_complete('complete-e', 1, 1, '[{"type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- nothing was written: the event is still unprocessed and leased, no children
SELECT * FROM pg_temp.rows('complete-e');
SELECT a2_complete('complete-e', 1, 1, '[{"id": "complete-e-2", "type": "child"}]') ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.rows('complete-e');

--
-- A completion runs in the caller's transaction: the handler's own writes
-- and the completion commit together, or neither does
--
CREATE TEMP TABLE handler_output (note text);
SELECT a2_append('complete-t', '[{"id": "complete-t-1", "type": "job"}]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-t', 'w1', 60000)) AS claimed;
BEGIN;
INSERT INTO handler_output VALUES ('handled complete-t-1');
SELECT a2_complete('complete-t', 1, 1, '[{"id": "complete-t-2", "type": "child"}]') ->> 'outcome' AS outcome;
ROLLBACK;
SELECT count(*) AS handler_rows FROM handler_output;
SELECT * FROM pg_temp.rows('complete-t');
BEGIN;
INSERT INTO handler_output VALUES ('handled complete-t-1');
SELECT a2_complete('complete-t', 1, 1, '[{"id": "complete-t-2", "type": "child"}]') ->> 'outcome' AS outcome;
COMMIT;
SELECT count(*) AS handler_rows FROM handler_output;
SELECT * FROM pg_temp.rows('complete-t');

--
-- Lane promotion, step by step: each completion makes the oldest
-- unprocessed event of the lane ready, including a child returned into it
--
SET a2.now = '2026-05-01 03:00:00+00';
SELECT a2_append('complete-l', '[
  {"id": "complete-l-1", "type": "job", "lane": "q"},
  {"id": "complete-l-2", "type": "job", "lane": "q"},
  {"id": "complete-l-3", "type": "job", "lane": "q"}
]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
SELECT index, lane FROM pg_temp.ev(a2_complete('complete-l', 1, 1, '[{"id": "complete-l-4", "type": "child", "lane": "q"}]'));
SELECT idx, lane, lane_ready, processed_at FROM pg_temp.rows('complete-l');
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
SELECT a2_complete('complete-l', 2, 1) ->> 'outcome' AS outcome;
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
SELECT a2_complete('complete-l', 3, 1) ->> 'outcome' AS outcome;
SELECT idx, lane, lane_ready, processed_at FROM pg_temp.rows('complete-l');
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
SELECT a2_complete('complete-l', 4, 1) ->> 'outcome' AS outcome;
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
-- a child returned into its parent's otherwise empty lane waits for the
-- parent while being inserted, and is promoted by the same completion
SELECT a2_append('complete-l', '[{"id": "complete-l-5", "type": "job", "lane": "r"}]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;
SELECT index, lane FROM pg_temp.ev(a2_complete('complete-l', 5, 1, '[{"id": "complete-l-6", "type": "child", "lane": "r"}]'));
SELECT idx, lane, lane_ready, processed_at FROM pg_temp.rows('complete-l') WHERE idx >= 5;
SELECT pg_temp.claimed(a2_claim('complete-l', 'w1', 60000)) AS claimed;

--
-- Snapshot pins: completing an event deletes its pins and every history
-- checkpoint of the session that no pin references any more; rows another
-- event still pins stay, and other sessions are untouched.  (The rows are
-- inserted directly here; snapshots.sql covers a2_put_snapshots.)
--
SET a2.now = '2026-05-01 04:00:00+00';
SELECT a2_append('complete-p', '[
  {"id": "complete-p-1", "type": "job"}, {"id": "complete-p-2", "type": "job"},
  {"id": "complete-p-3", "type": "job"}
]') -> 'hasPending' AS has_pending;
SELECT pg_temp.claimed(a2_claim('complete-p', 'w1', 60000)) AS claimed;
INSERT INTO a2_snapshots VALUES ('complete-p', 'r', 9, '{"head": true}', 0);
INSERT INTO a2_snapshot_history VALUES
  ('complete-p', 'r', 1, '{"at": 1}', 0),
  ('complete-p', 'r', 2, '{"at": 2}', 0),
  ('complete-p', 'r', 3, '{"at": 3}', 0),
  ('complete-p', 'r2', 1, '{"at": 1}', 0),
  ('complete-p-other', 'r', 1, '{"at": 1}', 0),
  ('complete-p-other', 'r', 7, '{"at": 7}', 0);
INSERT INTO a2_snapshot_pins VALUES
  ('complete-p', 1, 'r', 1),
  ('complete-p', 1, 'r', 2),
  ('complete-p', 2, 'r', 2),
  ('complete-p', 3, 'r2', 1),
  ('complete-p-other', 1, 'r', 1);

CREATE FUNCTION pg_temp.pins() RETURNS TABLE (session_id text, event_index bigint, reducer_name text, up_to_index bigint)
LANGUAGE sql AS $$
  SELECT session_id, event_index, reducer_name, up_to_index FROM a2_snapshot_pins
   WHERE session_id LIKE 'complete-p%' ORDER BY 1, 2, 3, 4
$$;
CREATE FUNCTION pg_temp.history() RETURNS TABLE (session_id text, reducer_name text, up_to_index bigint)
LANGUAGE sql AS $$
  SELECT session_id, reducer_name, up_to_index FROM a2_snapshot_history
   WHERE session_id LIKE 'complete-p%' ORDER BY 1, 2, 3
$$;

-- a superseded completion and a failed one release nothing
SELECT a2_complete('complete-p', 1, 2);
SELECT a2_complete('complete-p', 1, 1, '[{"id": "complete-p-1", "type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT count(*) AS pins FROM pg_temp.pins();
SELECT count(*) AS history FROM pg_temp.history();

-- completing 1: its two pins go; history r/1 (now unpinned) and r/3 (never
-- pinned) go; r/2 (pinned by 2) and r2/1 (pinned by 3) stay; the other
-- session's pin and history rows and the head snapshot stay
SELECT a2_complete('complete-p', 1, 1) ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.pins();
SELECT * FROM pg_temp.history();
SELECT session_id, reducer_name, up_to_index FROM a2_snapshots WHERE session_id = 'complete-p';

-- completing 2 and 3 releases the rest of this session's history
SELECT a2_complete('complete-p', 2, 1) ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.history();
SELECT a2_complete('complete-p', 3, 1) ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.pins();
SELECT * FROM pg_temp.history();
SELECT session_id, reducer_name, up_to_index FROM a2_snapshots WHERE session_id = 'complete-p';
