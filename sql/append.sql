--
-- append: a2_append(session_id, events) (SPEC sections 3, 4 "append", 5)
--
\set VERBOSITY terse
SET a2.now = '2026-01-01 00:00:00+00';

-- ev(result) and claimed(result): test/lib/regress.sql
\i test/lib/regress.sql

--
-- An empty batch writes nothing and reports whether the session has an
-- unprocessed event
--
SELECT a2_append('append-a', '[]');
SELECT count(*) AS rows FROM a2_events WHERE session_id = 'append-a';

--
-- Dense indexes 1, 2, 3... in batch order; a missing payload is JSON null
--
SELECT a2_append('append-a', '[
  {"id": "append-a-1", "type": "order.placed", "payload": {"sku": "A1", "qty": 2}},
  {"id": "append-a-2", "type": "order.noted"},
  {"id": "append-a-3", "type": "order.counted", "payload": 42}
]') AS r \gset
SELECT :'r'::jsonb -> 'hasPending' AS has_pending;
SELECT index, id, type, payload, session_id, created_at
  FROM pg_temp.ev(:'r');
-- (the blank payload above is JSON null, not an absent key)
SELECT :'r'::jsonb -> 'events' -> 1 -> 'payload' AS payload_2,
       :'r'::jsonb -> 'events' -> 1 ? 'payload' AS has_payload_key;

-- a StoredEvent has exactly the keys of the seed's toStored (no laneReady)
SELECT jsonb_pretty(:'r'::jsonb -> 'events' -> 0);
SELECT string_agg(k, ', ' ORDER BY k) AS keys
  FROM jsonb_object_keys(:'r'::jsonb -> 'events' -> 2) k;

-- the next batch continues the session's numbering
SET a2.now = '2026-01-01 00:00:01+00';
SELECT index, id, created_at
  FROM pg_temp.ev(a2_append('append-a', '[
    {"id": "append-a-4", "type": "order.shipped"},
    {"id": "append-a-5", "type": "order.closed", "payload": null}
  ]'));

-- sessions are numbered independently
SELECT index, id, session_id
  FROM pg_temp.ev(a2_append('append-b', '[{"id": "append-b-1", "type": "other"}]'));

-- the rows as stored
SELECT session_id, idx, event_type, payload, event_id, created_at, cause,
       lane, lane_ready, processed_at, attempt_count, failure_count
  FROM a2_events WHERE session_id IN ('append-a', 'append-b')
 ORDER BY session_id, idx;

--
-- Generated ids: an event without an id (or with "id": null) gets a random
-- UUID, returned and stored
--
SELECT a2_append('append-b', '[{"type": "gen"}, {"id": null, "type": "gen"}]') AS r \gset
SELECT index,
       id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' AS is_uuid,
       id = (SELECT event_id FROM a2_events
              WHERE session_id = 'append-b' AND idx = e.index) AS stored_as_returned
  FROM pg_temp.ev(:'r') e;
SELECT count(DISTINCT id) AS distinct_ids FROM pg_temp.ev(:'r');

--
-- Idempotent replay: a batch whose ids are all stored in this session
-- returns the stored events (same indexes, same createdAt) and writes nothing
--
SET a2.now = '2026-01-01 00:05:00+00';
SELECT count(*) AS rows_before FROM a2_events WHERE session_id = 'append-a';
SELECT a2_append('append-a', '[
  {"id": "append-a-1", "type": "order.placed", "payload": {"sku": "A1", "qty": 2}},
  {"id": "append-a-2", "type": "order.noted"},
  {"id": "append-a-3", "type": "order.counted", "payload": 42}
]') AS r \gset
SELECT :'r'::jsonb -> 'hasPending' AS has_pending;
SELECT index, id, type, payload, created_at FROM pg_temp.ev(:'r');
SELECT count(*) AS rows_after, max(idx) AS max_idx
  FROM a2_events WHERE session_id = 'append-a';

-- the stored events come back in the batch's order; "payload": null is a
-- missing payload
SELECT index, id, created_at
  FROM pg_temp.ev(a2_append('append-a', '[
    {"id": "append-a-3", "type": "order.counted", "payload": 42},
    {"id": "append-a-2", "type": "order.noted", "payload": null}
  ]'));

-- hasPending of a replay is whether the session has an unprocessed event:
-- a replayed settled batch in a session with nothing pending reports false
SELECT a2_append('append-settled-replay', '[{"id": "append-sr-1", "type": "done", "settled": true}]')
       -> 'hasPending' AS has_pending;
SELECT a2_append('append-settled-replay', '[{"id": "append-sr-1", "type": "done", "settled": true}]')
       -> 'hasPending' AS replay_has_pending;

--
-- A replay that changes an event is a PARTIAL_DUPLICATE_BATCH (Z2001)
--
-- payload
SELECT a2_append('append-a', '[{"id": "append-a-1", "type": "order.placed", "payload": {"sku": "A1", "qty": 3}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- payload present vs absent
SELECT a2_append('append-a', '[{"id": "append-a-2", "type": "order.noted", "payload": {}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- type
SELECT a2_append('append-a', '[{"id": "append-a-3", "type": "order.recounted", "payload": 42}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- lane
SELECT a2_append('append-a', '[{"id": "append-a-3", "type": "order.counted", "payload": 42, "lane": "l"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- cause (the parent exists, but the stored event has no cause)
SELECT a2_append('append-a', '[{"id": "append-a-3", "type": "order.counted", "payload": 42,
                                "cause": {"index": 1, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- one unchanged event does not excuse a changed one
SELECT a2_append('append-a', '[
  {"id": "append-a-1", "type": "order.placed", "payload": {"sku": "A1", "qty": 2}},
  {"id": "append-a-2", "type": "order.noted", "payload": "changed"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE

--
-- Partial duplicates: some ids stored, some fresh (an event without an id
-- is fresh) (Z2001)
--
SELECT a2_append('append-a', '[
  {"id": "append-a-5", "type": "order.closed"},
  {"id": "append-a-6", "type": "order.reopened"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-a', '[
  {"id": "append-a-5", "type": "order.closed"},
  {"type": "order.reopened"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE

-- the same id twice in one batch, fresh or stored (Z2001)
SELECT a2_append('append-a', '[
  {"id": "append-a-7", "type": "x"}, {"id": "append-a-8", "type": "x"}, {"id": "append-a-7", "type": "x"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-a', '[
  {"id": "append-a-4", "type": "order.shipped"}, {"id": "append-a-4", "type": "order.shipped"}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE

-- ids are unique across sessions: an id stored in another session (Z2001)
SELECT a2_append('append-b', '[{"id": "append-a-1", "type": "order.placed", "payload": {"sku": "A1", "qty": 2}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-b', '[{"id": "append-b-9", "type": "x"}, {"id": "append-a-4", "type": "order.shipped"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE

-- none of the refused batches wrote anything
SELECT session_id, count(*) AS rows, max(idx) AS max_idx
  FROM a2_events WHERE session_id IN ('append-a', 'append-b')
 GROUP BY session_id ORDER BY session_id;

--
-- Empty batches: no write; hasPending says whether the session has an
-- unprocessed event
--
SELECT a2_append('append-a', '[]');
SELECT count(*) AS rows FROM a2_events WHERE session_id = 'append-a';

--
-- Settled events: processedAt = createdAt = now; hasPending is false when
-- every new event is settled and nothing was pending before
--
SET a2.now = '2026-01-01 00:10:00+00';
SELECT a2_append('append-s', '[
  {"id": "append-s-1", "type": "note", "settled": true},
  {"id": "append-s-2", "type": "note", "settled": true}
]') AS r \gset
SELECT :'r'::jsonb -> 'hasPending' AS has_pending;
SELECT index, id, created_at, processed_at, processed_by_attempt, attempt_count
  FROM pg_temp.ev(:'r');
SELECT idx, processed_at, processed_by_attempt FROM a2_events
 WHERE session_id = 'append-s' ORDER BY idx;
SELECT a2_append('append-s', '[]') -> 'hasPending' AS empty_has_pending;
-- a settled event is never claimed
SELECT a2_claim('append-s', 'append-worker', 1000);

-- "settled": false and "settled": null are unsettled: hasPending is true
SELECT a2_append('append-s', '[{"id": "append-s-3", "type": "work", "settled": false}]')
       -> 'hasPending' AS has_pending;
SELECT a2_append('append-s2', '[{"id": "append-s2-1", "type": "work", "settled": null}]')
       -> 'hasPending' AS has_pending;
-- one unsettled event among settled ones makes hasPending true
SELECT a2_append('append-s3', '[
  {"id": "append-s3-1", "type": "note", "settled": true},
  {"id": "append-s3-2", "type": "work"}
]') -> 'hasPending' AS has_pending;
-- an event pending from before keeps hasPending true for a settled batch
SELECT a2_append('append-s', '[{"id": "append-s-4", "type": "note", "settled": true}]')
       -> 'hasPending' AS has_pending;
SELECT a2_append('append-s', '[]') -> 'hasPending' AS empty_has_pending;
-- a dead-lettered event is still unprocessed, so it counts as pending
SELECT a2_claim('append-s', 'append-worker', 1000) -> 'events' -> 0 -> 'index' AS claimed;
SELECT a2_fail('append-s', 3, 1, 'gave up', 1);
SELECT a2_append('append-s', '[]') -> 'hasPending' AS empty_has_pending;
SELECT a2_append('append-s', '[{"id": "append-s-5", "type": "note", "settled": true}]')
       -> 'hasPending' AS has_pending;

--
-- Lanes: an event is lane-ready when its lane has no unprocessed event;
-- earlier unsettled events of the same batch count, settled ones do not
--
SET a2.now = '2026-01-01 00:20:00+00';
SELECT index, id, lane FROM pg_temp.ev(a2_append('append-l', '[
  {"id": "append-l-1", "type": "t", "lane": "x"},
  {"id": "append-l-2", "type": "t", "lane": "x"},
  {"id": "append-l-3", "type": "t", "lane": "y"},
  {"id": "append-l-4", "type": "t"},
  {"id": "append-l-5", "type": "t", "lane": "x"},
  {"id": "append-l-6", "type": "t", "lane": "z", "settled": true},
  {"id": "append-l-7", "type": "t", "lane": "z"},
  {"id": "append-l-8", "type": "t", "lane": null}
]'));
SELECT idx, lane, lane_ready, processed_at IS NOT NULL AS processed
  FROM a2_events WHERE session_id = 'append-l' ORDER BY idx;
-- exactly the ready ones are claimable: 1, 3, 4, 7, 8
SELECT index, lane, attempt_count
  FROM pg_temp.ev(a2_claim('append-l', 'append-worker', 60000));

-- across batches: lanes x, y, z are busy, so new events there wait; a new
-- lane is ready
SELECT index, id, lane FROM pg_temp.ev(a2_append('append-l', '[
  {"id": "append-l-9", "type": "t", "lane": "y"},
  {"id": "append-l-10", "type": "t", "lane": "w"}
]'));
SELECT idx, lane, lane_ready FROM a2_events
 WHERE session_id = 'append-l' AND idx > 8 ORDER BY idx;
-- once lane z has nothing unprocessed, a later append to it is ready at once
SELECT a2_complete('append-l', 7, 1) ->> 'outcome' AS outcome;
SELECT index, id, lane FROM pg_temp.ev(a2_append('append-l', '[{"id": "append-l-11", "type": "t", "lane": "z"}]'));
SELECT idx, lane, lane_ready FROM a2_events
 WHERE session_id = 'append-l' AND idx = 11;

--
-- Causes and the attempt-currency fence: a caused event commits only while
-- its parent exists, is at that attempt and is not dead-lettered
--
SET a2.now = '2026-01-01 00:30:00+00';
SELECT index, id FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-1", "type": "parent"},
  {"id": "append-f-2", "type": "parent"}
]'));
SELECT index, attempt_count FROM pg_temp.ev(a2_claim('append-f', 'append-worker', 60000));

-- the current attempt may append; cause is stored as {index, attempt},
-- plus batchSize only when given ("batchSize": null is absent; 2.0 is 2)
SELECT a2_append('append-f', '[
  {"id": "append-f-3", "type": "child", "cause": {"index": 1, "attempt": 1}},
  {"id": "append-f-4", "type": "child", "cause": {"index": 1, "attempt": 1, "batchSize": 3}},
  {"id": "append-f-5", "type": "child", "cause": {"index": 1, "attempt": 1, "batchSize": null}},
  {"id": "append-f-6", "type": "child", "cause": {"index": 1.0, "attempt": 1.0, "batchSize": 2.0}},
  {"id": "append-f-7", "type": "child", "cause": null}
]') AS r \gset
SELECT index, id, cause FROM pg_temp.ev(:'r');
SELECT idx, cause FROM a2_events WHERE session_id = 'append-f' AND idx > 2 ORDER BY idx;
-- read returns the same causes
SELECT index, cause FROM pg_temp.ev(a2_read('append-f', 2));

-- attempt 1 of event 2 appends too; then event 2 fails and is re-claimed
SELECT index, cause FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-stale", "type": "child", "cause": {"index": 2, "attempt": 1}}
]'));
SELECT a2_fail('append-f', 2, 1, 'retry me', 5) ->> 'outcome' AS outcome;
SELECT index, attempt_count FROM pg_temp.ev(a2_claim('append-f', 'append-worker', 60000, exclude_indexes => '{3,4,5,6,7,8}'));

-- 2.0 is accepted as 2 for the attempt too
SELECT index, cause FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-8", "type": "child", "cause": {"index": 2, "attempt": 2.0}}
]'));

-- a stale attempt is SUPERSEDED_ATTEMPT (Z2002)
SELECT a2_append('append-f', '[{"id": "append-f-9", "type": "child", "cause": {"index": 2, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- an attempt the parent never reached is not current either (Z2002)
SELECT a2_append('append-f', '[{"id": "append-f-9", "type": "child", "cause": {"index": 2, "attempt": 3}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- a parent that does not exist is NOT_FOUND (Z2003), also when it exists
-- in another session only
SELECT a2_append('append-f', '[{"id": "append-f-9", "type": "child", "cause": {"index": 99, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-b', '[{"id": "append-b-9", "type": "child", "cause": {"index": 8, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- one bad cause refuses the whole batch
SELECT a2_append('append-f', '[
  {"id": "append-f-9", "type": "child", "cause": {"index": 2, "attempt": 2}},
  {"id": "append-f-10", "type": "child", "cause": {"index": 1, "attempt": 2}}
]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- a dead-lettered parent refuses even its current attempt (Z2002)
SELECT a2_fail('append-f', 2, 2, 'gave up', 2) ->> 'outcome' AS outcome;
SELECT attempt_count, failed_at IS NOT NULL AS dead_lettered
  FROM a2_events WHERE session_id = 'append-f' AND idx = 2;
SELECT a2_append('append-f', '[{"id": "append-f-9", "type": "child", "cause": {"index": 2, "attempt": 2}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT count(*) AS rows, max(idx) AS max_idx FROM a2_events WHERE session_id = 'append-f';

-- the fence compares attempts only: a completed parent's last attempt may
-- still append (its lease is gone, its attempt is current)
SELECT a2_complete('append-f', 1, 1) ->> 'outcome' AS outcome;
SELECT index, cause FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-9", "type": "late-child", "cause": {"index": 1, "attempt": 1}}
]'));

-- replay comes before the fence: stored batches are returned although
-- their causes are stale by now (attempt 1 of event 2 was superseded,
-- attempt 2 was dead-lettered), without writing anything
SET a2.now = '2026-01-01 00:40:00+00';
SELECT index, id, cause, created_at FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-stale", "type": "child", "cause": {"index": 2, "attempt": 1}}
]'));
SELECT index, id, cause, created_at FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-8", "type": "child", "cause": {"index": 2, "attempt": 2}}
]'));
SELECT index, id, cause, created_at FROM pg_temp.ev(a2_append('append-f', '[
  {"id": "append-f-3", "type": "child", "cause": {"index": 1, "attempt": 1}},
  {"id": "append-f-4", "type": "child", "cause": {"index": 1, "attempt": 1, "batchSize": 3}}
]'));
-- but a replay whose cause differs from the stored one is refused (Z2001):
-- batchSize missing, batchSize different, attempt different
SELECT a2_append('append-f', '[{"id": "append-f-4", "type": "child", "cause": {"index": 1, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-f', '[{"id": "append-f-4", "type": "child", "cause": {"index": 1, "attempt": 1, "batchSize": 4}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_append('append-f', '[{"id": "append-f-8", "type": "child", "cause": {"index": 2, "attempt": 1}}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- a stored event with a cause replayed without one (Z2001)
SELECT a2_append('append-f', '[{"id": "append-f-3", "type": "child"}]');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT count(*) AS rows, max(idx) AS max_idx FROM a2_events WHERE session_id = 'append-f';

-- the stored rows are untouched by all of the above
SELECT idx, event_id, event_type, cause, created_at
  FROM a2_events WHERE session_id = 'append-f' ORDER BY idx;
