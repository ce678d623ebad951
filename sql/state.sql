--
-- state: a2_read_state and a2_read_states -- a reducer checkpoint plus the
-- events after it (SPEC section 4, "read_state").
--
-- Every session id of this file starts with "state-".
--
SET timezone = 'UTC';
SET a2.now = '2026-02-01 00:00:00+00';

-- headIndex, the selected snapshot and the indexes of the returned events.
CREATE FUNCTION state_summary(r jsonb)
RETURNS TABLE (head_index jsonb, snapshot jsonb, event_indexes jsonb)
LANGUAGE sql IMMUTABLE AS $$
	SELECT r->'headIndex', r->'snapshot', jsonb_path_query_array(r, '$.events[*].index')
$$;

-- state-a: six events (payload n = index), a running sum as the reducer.
SELECT jsonb_array_length(a2_append('state-a', '[
	{"id": "state-a-1", "type": "add", "payload": {"n": 1}},
	{"id": "state-a-2", "type": "add", "payload": {"n": 2}},
	{"id": "state-a-3", "type": "add", "payload": {"n": 3}},
	{"id": "state-a-4", "type": "add", "payload": {"n": 4}},
	{"id": "state-a-5", "type": "add", "payload": {"n": 5}},
	{"id": "state-a-6", "type": "add", "payload": {"n": 6}, "lane": "l"}]')->'events') AS appended;
-- Claim everything and complete event 1, so the stored rows carry lease,
-- attempt and processing fields (an Event must not show them).
SET a2.now = '2026-02-01 00:01:00+00';
SELECT a2_claim('state-a', 'worker', 86400000)->>'outcome' AS claim;
SELECT a2_complete('state-a', 1, 1)->>'outcome' AS complete_1;
-- Checkpoints: history at 2 and 4 (pinned by the unfinished event 6) and
-- the head at 5.
SELECT a2_put_snapshots('state-a', 'sum', '[
	{"index": 2, "state": {"sum": 3}, "pinEventIndexes": [6]},
	{"index": 4, "state": {"sum": 10}, "pinEventIndexes": [6]},
	{"index": 5, "state": {"sum": 15}}]');
SELECT 'head' AS kind, up_to_index, state FROM a2_snapshots
 WHERE session_id = 'state-a' AND reducer_name = 'sum'
UNION ALL
SELECT 'history', up_to_index, state FROM a2_snapshot_history
 WHERE session_id = 'state-a' AND reducer_name = 'sum'
ORDER BY 1, 2;

-- The whole result for one read: the greatest checkpoint <= 3 is the
-- history row 2; headIndex still reports the head (5); the events are the
-- tail 2 < index <= 3, as Events.
SELECT jsonb_pretty(a2_read_state('state-a', 'sum', 3));

-- The top-level keys, and the exact key set of every Event (no cause,
-- lane, processedAt, attemptCount, claimHolder, ...).
SELECT array(SELECT k FROM jsonb_object_keys(a2_read_state('state-a', 'sum')) k
			 ORDER BY k COLLATE "C") AS result_keys;
SELECT DISTINCT array(SELECT k FROM jsonb_object_keys(e) k ORDER BY k COLLATE "C") AS event_keys
  FROM jsonb_array_elements(a2_read_state('state-a', 'sum', NULL, 0)->'events') e;
SELECT jsonb_array_length(a2_read_state('state-a', 'sum', NULL, 0)->'events') AS events_with_those_keys;

-- Bounds.  snapshotThroughIndex defaults to throughIndex; the selected
-- checkpoint is the greatest head-or-history index <= that bound; events
-- are those after it (or all, without one) and <= throughIndex.
SELECT v.label, v.through, v.snap_through, s.*
  FROM (VALUES
	(1, 'no bounds', NULL::bigint, NULL::bigint),
	(2, 'through beyond the log', 100, NULL),
	(3, 'through the head', 5, NULL),
	(4, 'through a history row', 4, NULL),
	(5, 'history under a bound', 3, NULL),
	(6, 'through the oldest checkpoint', 2, NULL),
	(7, 'below every checkpoint', 1, NULL),
	(8, 'through 0', 0, NULL),
	(9, 'snapshot bound only', NULL, 3),
	(10, 'snapshot bound below through', 5, 4),
	(11, 'snapshot bound 0', NULL, 0),
	(12, 'snapshot bound below checkpoints', 3, 1),
	(13, 'snapshot bound above through', 3, 100),
	(14, 'snapshot bound = head', 100, 5)
  ) AS v(n, label, through, snap_through),
  LATERAL state_summary(a2_read_state('state-a', 'sum', v.through, v.snap_through)) s
 ORDER BY v.n;

-- Reducers do not mix: a "max" reducer with its own head (3) and history
-- (1) changes nothing for "sum", and "sum"'s checkpoints are not "max"'s.
SELECT a2_put_snapshots('state-a', 'max', '[
	{"index": 1, "state": {"max": 1}, "pinEventIndexes": [6]},
	{"index": 3, "state": {"max": 3}}]');
SELECT * FROM state_summary(a2_read_state('state-a', 'sum', 3));
SELECT * FROM state_summary(a2_read_state('state-a', 'max'));
SELECT * FROM state_summary(a2_read_state('state-a', 'max', 2));
SELECT * FROM state_summary(a2_read_state('state-a', 'max', NULL, 0));

-- A reducer of the same session without any checkpoint: the full log.
SELECT * FROM state_summary(a2_read_state('state-a', 'other'));

-- state-b: a session with events and no snapshot at all.
SET a2.now = '2026-02-01 00:02:00+00';
SELECT jsonb_array_length(a2_append('state-b', '[
	{"id": "state-b-1", "type": "x"},
	{"id": "state-b-2", "type": "y", "payload": [1, "two"]},
	{"id": "state-b-3", "type": "z", "payload": "three"}]')->'events') AS appended;
SELECT jsonb_pretty(a2_read_state('state-b', 'sum'));
SELECT * FROM state_summary(a2_read_state('state-b', 'sum', 2));
SELECT * FROM state_summary(a2_read_state('state-b', 'sum', NULL, 2));

-- A session that does not exist: no head, no snapshot, no events.
SELECT a2_read_state('state-nobody', 'sum');

-- state-c: a checkpoint at index 0 is a checkpoint like any other.
SELECT jsonb_array_length(a2_append('state-c', '[{"type": "x"}, {"type": "x"}]')->'events') AS appended;
SELECT a2_put_snapshots('state-c', 'sum', '[{"index": 0, "state": "zero"}]');
SELECT * FROM state_summary(a2_read_state('state-c', 'sum'));
SELECT * FROM state_summary(a2_read_state('state-c', 'sum', 0));

--
-- a2_read_states: one result per request, in request order, with mixed
-- bounds, repeated and unknown sessions; JSON null bounds mean absent.
--
CREATE TEMP TABLE state_requests AS SELECT '[
	{"sessionId": "state-b"},
	{"sessionId": "state-a", "throughIndex": 3},
	{"sessionId": "state-a"},
	{"sessionId": "state-nobody"},
	{"sessionId": "state-a", "snapshotThroughIndex": 2},
	{"sessionId": "state-a", "throughIndex": null, "snapshotThroughIndex": null},
	{"sessionId": "state-a", "throughIndex": 1},
	{"sessionId": "state-b", "throughIndex": 2},
	{"sessionId": "state-a", "throughIndex": 5, "snapshotThroughIndex": 4},
	{"sessionId": "state-a", "throughIndex": 3}]'::jsonb AS q;
SELECT jsonb_array_length(q) AS requests,
	   jsonb_array_length(a2_read_states(q, 'sum')) AS results
  FROM state_requests;
SELECT e.ord, e.req->>'sessionId' AS session, s.*
  FROM state_requests,
	   jsonb_array_elements(a2_read_states(q, 'sum')) WITH ORDINALITY AS r(res, ord),
	   jsonb_array_elements(q) WITH ORDINALITY AS e(req, ord),
	   LATERAL state_summary(r.res) s
 WHERE r.ord = e.ord
 ORDER BY e.ord;
-- Each result is exactly what a2_read_state returns for that request.
SELECT e.ord,
	   a2_read_states(q, 'sum')->(e.ord::int - 1)
	   = a2_read_state(e.req->>'sessionId', 'sum',
					   (e.req->>'throughIndex')::bigint,
					   (e.req->>'snapshotThroughIndex')::bigint) AS same_as_read_state
  FROM state_requests, jsonb_array_elements(q) WITH ORDINALITY AS e(req, ord)
 ORDER BY e.ord;
-- The reducer name applies to every request.
SELECT jsonb_path_query_array(a2_read_states(q, 'other'), '$[*].headIndex') AS other_heads
  FROM state_requests;

-- An empty request list answers [].
SELECT a2_read_states('[]', 'sum');

DROP FUNCTION state_summary(jsonb);
