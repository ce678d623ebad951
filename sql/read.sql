--
-- read: a2_read(session_id, after_index, through_index, max_events)
-- (SPEC sections 3, 4 "read")
--
\set VERBOSITY terse
SET a2.now = '2026-02-01 00:00:00+00';

-- an empty or unknown session reads as an empty array
SELECT a2_read('read-none');
SELECT a2_read('read-none', 0, 10, 5);

-- five events in two batches, and an interleaved session that must not leak in
SELECT a2_append('read-a', '[
  {"id": "read-a-1", "type": "t", "payload": 1},
  {"id": "read-a-2", "type": "t", "payload": 2},
  {"id": "read-a-3", "type": "t", "payload": 3}
]') -> 'hasPending' AS has_pending;
SELECT a2_append('read-b', '[{"id": "read-b-1", "type": "t"}]') -> 'hasPending' AS has_pending;
SET a2.now = '2026-02-01 00:00:01+00';
SELECT a2_append('read-a', '[
  {"id": "read-a-4", "type": "t", "payload": 4},
  {"id": "read-a-5", "type": "t", "payload": 5}
]') -> 'hasPending' AS has_pending;

-- ids(result): the indexes of a read, in the order returned
CREATE FUNCTION pg_temp.ids(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE(string_agg(e ->> 'index', ',' ORDER BY o), '')
    FROM jsonb_array_elements(j) WITH ORDINALITY AS x(e, o)
$$;

-- everything, ordered by index
SELECT pg_temp.ids(a2_read('read-a')) AS indexes;

-- a read returns StoredEvents: exactly the keys of the seed's toStored
SELECT jsonb_pretty(a2_read('read-a', 3, 4));
SELECT string_agg(k, ', ' ORDER BY k) AS keys
  FROM jsonb_object_keys(a2_read('read-a', 0, 1) -> 0) k;

--
-- bounds: after_index < index <= through_index, each optional (NULL or
-- omitted = unbounded)
--
SELECT after_index, through_index,
       pg_temp.ids(a2_read('read-a', after_index, through_index)) AS indexes
  FROM (VALUES (NULL::bigint, NULL::bigint),
               (0, NULL), (2, NULL), (4, NULL), (5, NULL), (9, NULL),
               (NULL, 0), (NULL, 1), (NULL, 3), (NULL, 5), (NULL, 9),
               (1, 4), (2, 3), (3, 3), (4, 2), (0, 0)) AS b(after_index, through_index);

-- named arguments
SELECT pg_temp.ids(a2_read('read-a', through_index => 2)) AS through_2,
       pg_temp.ids(a2_read('read-a', after_index => 3)) AS after_3,
       pg_temp.ids(a2_read('read-a', max_events => 1)) AS first_only;

--
-- max_events: the first max_events of the range, so a client can page
--
SELECT after_index, through_index, max_events,
       pg_temp.ids(a2_read('read-a', after_index, through_index, max_events)) AS indexes
  FROM (VALUES (NULL::bigint, NULL::bigint, 2), (NULL, NULL, 5), (NULL, NULL, 6),
               (NULL, NULL, NULL), (1, 4, 2), (1, 4, 10), (1, 2, 3), (5, NULL, 1))
       AS b(after_index, through_index, max_events);

-- paging through the session two events at a time
WITH RECURSIVE page(n, after_index, events) AS (
  SELECT 1, 0::bigint, a2_read('read-a', 0, NULL, 2)
  UNION ALL
  SELECT n + 1, (events -> -1 ->> 'index')::bigint,
         a2_read('read-a', (events -> -1 ->> 'index')::bigint, NULL, 2)
    FROM page WHERE jsonb_array_length(events) > 0
)
SELECT n AS page, after_index, pg_temp.ids(events) AS indexes FROM page ORDER BY n;

--
-- reads see the current state of each event, and stay ordered by index
-- after rows were updated (updated rows move in the heap)
--
SELECT pg_temp.ids(a2_claim('read-a', 'read-worker', 60000, exclude_indexes => '{1,3,5}') -> 'events')
       AS claimed;
SELECT a2_complete('read-a', 4, 1, '[{"id": "read-a-6", "type": "child"}]') ->> 'outcome' AS outcome;
SELECT e ->> 'index' AS index, e ->> 'attemptCount' AS attempt_count,
       e ->> 'claimHolder' AS claim_holder, e ->> 'processedAt' AS processed_at,
       e -> 'returnedEventIds' AS returned_event_ids, e -> 'cause' AS cause
  FROM jsonb_array_elements(a2_read('read-a')) e;
SELECT pg_temp.ids(a2_read('read-a')) AS indexes,
       pg_temp.ids(a2_read('read-b')) AS other_session;

-- bad bounds are refused (22023)
SELECT a2_read('read-a', -1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_read('read-a', NULL, -1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_read('read-a', NULL, NULL, 0);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
