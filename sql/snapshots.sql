--
-- snapshots: a2_put_snapshots -- the head checkpoint, history rows and
-- pins (SPEC section 4, "put_snapshots"), and pin release when the pinning
-- event completes or is dead-lettered ("complete", "fail").
--
-- Every session id of this file starts with "snap-".  The clock is fixed
-- with a2.now and advanced one minute per write, so the "updated" column
-- (updated_at, HH24:MI UTC) tells which call wrote a row.
--
SET timezone = 'UTC';
SET a2.now = '2026-01-01 00:00:00+00';

-- Head, history and pin rows of one session, in one ordered listing.
CREATE FUNCTION snap_rows(sid text)
RETURNS TABLE (kind text, reducer text, idx bigint, state jsonb,
			   updated text, pinned_by bigint)
LANGUAGE sql STABLE AS $$
	SELECT kind, reducer, idx, state, updated, pinned_by FROM (
		SELECT 'head' AS kind, reducer_name AS reducer, up_to_index AS idx,
			   state, to_char(to_timestamp(updated_at / 1000.0), 'HH24:MI') AS updated,
			   NULL::bigint AS pinned_by
		  FROM a2_snapshots WHERE session_id = sid
		UNION ALL
		SELECT 'history', reducer_name, up_to_index, state,
			   to_char(to_timestamp(updated_at / 1000.0), 'HH24:MI'), NULL
		  FROM a2_snapshot_history WHERE session_id = sid
		UNION ALL
		SELECT 'pin', reducer_name, up_to_index, NULL, NULL, event_index
		  FROM a2_snapshot_pins WHERE session_id = sid
	) r
	ORDER BY kind, reducer, idx, pinned_by
$$;

--
-- 1. Head writes, ties, stale writes, and the head moving to history.
--
-- Five events, all claimed by one worker (attempt 1): all unfinished.
SELECT jsonb_array_length(a2_append('snap-1', '[{"type": "t"}, {"type": "t"},
	{"type": "t"}, {"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT a2_claim('snap-1', 'worker', 86400000)->>'outcome' AS claim;

-- No head yet: the write becomes the head.
SET a2.now = '2026-01-01 00:01:00+00';
SELECT a2_put_snapshots('snap-1', 'count', '[{"index": 2, "state": {"w": "first 2"}}]');
SELECT * FROM snap_rows('snap-1');

-- index = head: a tie overwrites the head (state and updated_at).
SET a2.now = '2026-01-01 00:02:00+00';
SELECT a2_put_snapshots('snap-1', 'count', '[{"index": 2, "state": {"w": "second 2"}}]');
SELECT * FROM snap_rows('snap-1');

-- index < head and unpinned: dropped, nothing changes.
SET a2.now = '2026-01-01 00:03:00+00';
SELECT a2_put_snapshots('snap-1', 'count', '[{"index": 1, "state": {"w": "stale 1"}}]');
SELECT * FROM snap_rows('snap-1');
-- pinEventIndexes: null means absent: still unpinned, still dropped.
SELECT a2_put_snapshots('snap-1', 'count',
	'[{"index": 1, "state": {"w": "stale 1"}, "pinEventIndexes": null}]');
-- an empty pin list pins nothing either
SELECT a2_put_snapshots('snap-1', 'count',
	'[{"index": 1, "state": {"w": "stale 1"}, "pinEventIndexes": []}]');
SELECT * FROM snap_rows('snap-1');

-- index < head, pinned by unfinished event 3: kept in history, with its pin.
SET a2.now = '2026-01-01 00:04:00+00';
SELECT a2_put_snapshots('snap-1', 'count',
	'[{"index": 1, "state": {"w": "pinned 1"}, "pinEventIndexes": [3]}]');
SELECT * FROM snap_rows('snap-1');

-- The head advances past an unpinned head: the old head (2) is not kept.
SET a2.now = '2026-01-01 00:05:00+00';
SELECT a2_put_snapshots('snap-1', 'count', '[{"index": 3, "state": {"w": "first 3"}}]');
SELECT * FROM snap_rows('snap-1');

-- A tie that pins the head (event 4; listed twice, recorded once).
SET a2.now = '2026-01-01 00:06:00+00';
SELECT a2_put_snapshots('snap-1', 'count',
	'[{"index": 3, "state": {"w": "pinned 3"}, "pinEventIndexes": [4, 4]}]');
SELECT * FROM snap_rows('snap-1');

-- The head advances past a pinned head: the old head moves to history
-- first, keeping its state and its updated_at (00:06).
SET a2.now = '2026-01-01 00:07:00+00';
SELECT a2_put_snapshots('snap-1', 'count', '[{"index": 5, "state": {"w": "first 5"}}]');
SELECT * FROM snap_rows('snap-1');

-- A pinned stale write at an index that already has a history row
-- replaces its state; both pins are kept.
SET a2.now = '2026-01-01 00:08:00+00';
SELECT a2_put_snapshots('snap-1', 'count',
	'[{"index": 1, "state": {"w": "pinned 1 again"}, "pinEventIndexes": [2]}]');
SELECT * FROM snap_rows('snap-1');

-- Reducers are independent: a write for another reducer has its own head.
SELECT a2_put_snapshots('snap-1', 'other', '[{"index": 1, "state": null}]');
SELECT * FROM snap_rows('snap-1') WHERE reducer = 'other';

--
-- 2. Pins are recorded only for unfinished events of this session:
-- processed, dead-lettered and nonexistent indexes are ignored.
--
SET a2.now = '2026-01-01 00:10:00+00';
SELECT jsonb_array_length(a2_append('snap-2', '[{"type": "t"}, {"type": "t"},
	{"type": "t"}, {"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT a2_claim('snap-2', 'worker', 86400000)->>'outcome' AS claim;
SELECT a2_complete('snap-2', 1, 1)->>'outcome' AS complete_1;
SELECT a2_fail('snap-2', 2, 1, 'boom', 1)->>'outcome' AS fail_2;
SELECT a2_fail('snap-2', 3, 1, 'boom', 3)->>'outcome' AS fail_3;
SELECT idx, processed_at IS NOT NULL AS processed, failed_at IS NOT NULL AS dead_lettered
  FROM a2_events WHERE session_id = 'snap-2' ORDER BY idx;
SELECT a2_put_snapshots('snap-2', 'count', '[{"index": 5, "state": "head 5"}]');
-- event 1 is processed (in snap-1 it is unfinished: pins are per session)
SELECT a2_put_snapshots('snap-2', 'count',
	'[{"index": 1, "state": "by processed", "pinEventIndexes": [1]}]');
-- event 2 is dead-lettered
SELECT a2_put_snapshots('snap-2', 'count',
	'[{"index": 2, "state": "by dead-lettered", "pinEventIndexes": [2]}]');
-- there is no event 99 (and a snapshot index is not checked against the log)
SELECT a2_put_snapshots('snap-2', 'count',
	'[{"index": 3, "state": "by nonexistent", "pinEventIndexes": [99]}]');
SELECT * FROM snap_rows('snap-2');
-- a mixed list: only event 3 (failed once, not dead-lettered) pins
SELECT a2_put_snapshots('snap-2', 'count',
	'[{"index": 4, "state": "mixed", "pinEventIndexes": [1, 2, 99, 3]}]');
SELECT * FROM snap_rows('snap-2');
-- the same holds for a head write: an ignored pin leaves the head unpinned,
-- so the next head write does not move it to history
SELECT a2_put_snapshots('snap-2', 'count',
	'[{"index": 6, "state": "head 6", "pinEventIndexes": [1, 2, 99]}]');
SELECT a2_put_snapshots('snap-2', 'count', '[{"index": 7, "state": "head 7"}]');
SELECT * FROM snap_rows('snap-2');

--
-- 3. A history row at the new head's index is dropped.  The head is a
-- disposable cache: when it is gone, a write at a history row's index
-- becomes the head and that history row goes.
--
SET a2.now = '2026-01-01 00:20:00+00';
SELECT jsonb_array_length(a2_append('snap-3', '[{"type": "t"}, {"type": "t"},
	{"type": "t"}]')->'events') AS appended;
SELECT a2_put_snapshots('snap-3', 'count', '[
	{"index": 1, "state": "h1", "pinEventIndexes": [3]},
	{"index": 2, "state": "h2", "pinEventIndexes": [3]},
	{"index": 3, "state": "head 3"}]');
SELECT * FROM snap_rows('snap-3');
DELETE FROM a2_snapshots WHERE session_id = 'snap-3';
SET a2.now = '2026-01-01 00:21:00+00';
SELECT a2_put_snapshots('snap-3', 'count', '[{"index": 2, "state": "new head 2"}]');
SELECT * FROM snap_rows('snap-3');
-- the new head is still pinned by event 3, so the next head write moves it
SET a2.now = '2026-01-01 00:22:00+00';
SELECT a2_put_snapshots('snap-3', 'count', '[{"index": 3, "state": "head 3 again"}]');
SELECT * FROM snap_rows('snap-3');

--
-- 4. Writes are applied in index order, whatever the argument order: the
-- same writes, descending in snap-4a and ascending in snap-4b, give the
-- same rows.  Writes with equal indexes keep their argument order (the
-- last one wins, as with the seed's stable toSorted).
--
SET a2.now = '2026-01-01 00:30:00+00';
SELECT jsonb_array_length(a2_append('snap-4a', '[{"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT jsonb_array_length(a2_append('snap-4b', '[{"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT a2_put_snapshots('snap-4a', 'count', '[
	{"index": 6, "state": "w6 first"},
	{"index": 4, "state": "w4"},
	{"index": 6, "state": "w6 second"},
	{"index": 3, "state": "w3", "pinEventIndexes": [2]},
	{"index": 5, "state": "w5", "pinEventIndexes": [1]},
	{"index": 1, "state": "w1", "pinEventIndexes": [1, 2]}]');
SELECT a2_put_snapshots('snap-4b', 'count', '[
	{"index": 1, "state": "w1", "pinEventIndexes": [1, 2]},
	{"index": 3, "state": "w3", "pinEventIndexes": [2]},
	{"index": 4, "state": "w4"},
	{"index": 5, "state": "w5", "pinEventIndexes": [1]},
	{"index": 6, "state": "w6 first"},
	{"index": 6, "state": "w6 second"}]');
SELECT * FROM snap_rows('snap-4a');
SELECT (SELECT array_agg(r ORDER BY r::text) FROM snap_rows('snap-4a') r)
	 = (SELECT array_agg(r ORDER BY r::text) FROM snap_rows('snap-4b') r) AS same_rows;

--
-- 5. Completion and dead-lettering release the event's pins and collect
-- exactly the history rows no remaining pin references; heads stay.
--
SET a2.now = '2026-01-01 00:40:00+00';
SELECT jsonb_array_length(a2_append('snap-5', '[{"type": "t"}, {"type": "t"},
	{"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT jsonb_array_length(a2_append('snap-5x', '[{"type": "t"}, {"type": "t"}]')->'events') AS appended;
SELECT a2_claim('snap-5', 'worker', 86400000)->>'outcome' AS claim;
SELECT a2_claim('snap-5x', 'worker', 86400000)->>'outcome' AS claim;
-- count: history 1 (pinned by 2 and 3), history 2 (pinned by 2), head 4
SELECT a2_put_snapshots('snap-5', 'count', '[
	{"index": 1, "state": "c1", "pinEventIndexes": [2, 3]},
	{"index": 2, "state": "c2", "pinEventIndexes": [2]},
	{"index": 4, "state": "c4"}]');
-- sum: history 1 (pinned by 2), head 3 (pinned by 2)
SELECT a2_put_snapshots('snap-5', 'sum', '[
	{"index": 1, "state": "s1", "pinEventIndexes": [2]},
	{"index": 3, "state": "s3", "pinEventIndexes": [2]}]');
-- another session, where event 2 also pins a history row
SELECT a2_put_snapshots('snap-5x', 'count', '[
	{"index": 1, "state": "x1", "pinEventIndexes": [2]},
	{"index": 2, "state": "x2"}]');
SELECT * FROM snap_rows('snap-5');

-- A superseded completion (wrong attempt) releases nothing.
SELECT a2_complete('snap-5', 2, 7)->>'outcome' AS complete_2_wrong_attempt;
SELECT count(*) AS pins_of_event_2 FROM a2_snapshot_pins
 WHERE session_id = 'snap-5' AND event_index = 2;

-- Completing event 2: its pins go; count history 2 and sum history 1 lose
-- their last pin and go; count history 1 stays (event 3 still pins it);
-- the heads (count 4, sum 3) stay.
SET a2.now = '2026-01-01 00:41:00+00';
SELECT a2_complete('snap-5', 2, 1)->>'outcome' AS complete_2;
SELECT * FROM snap_rows('snap-5');
-- snap-5x is untouched
SELECT * FROM snap_rows('snap-5x');

-- A failure below max_failures keeps the pins.
SELECT a2_fail('snap-5', 3, 1, 'boom', 2) AS fail_3;
SELECT * FROM snap_rows('snap-5') WHERE kind <> 'head';
-- Re-claim (only event 3 is eligible) and dead-letter it: its pin goes
-- and count history 1 with it.
SELECT jsonb_path_query_array(a2_claim('snap-5', 'worker', 86400000),
	'$.events[*].index') AS reclaimed;
SELECT a2_fail('snap-5', 3, 2, 'boom', 2) AS fail_3_again;
SELECT * FROM snap_rows('snap-5');

--
-- 6. An empty list is a no-op: no head, no history, no pin, no error
-- (even for a session without events).
--
CREATE TEMP TABLE snap_before AS
	SELECT s.sid, r.* FROM unnest(ARRAY['snap-1', 'snap-6']) AS s(sid), snap_rows(s.sid) r;
SELECT a2_put_snapshots('snap-6', 'count', '[]');
SELECT a2_put_snapshots('snap-1', 'count', '[]');
SELECT count(*) AS rows_before,
	   (SELECT count(*) FROM unnest(ARRAY['snap-1', 'snap-6']) AS s(sid), snap_rows(s.sid)) AS rows_after,
	   NOT EXISTS (
		(SELECT s.sid, r.* FROM unnest(ARRAY['snap-1', 'snap-6']) AS s(sid), snap_rows(s.sid) r
		 EXCEPT SELECT * FROM snap_before)
		UNION ALL
		(SELECT * FROM snap_before
		 EXCEPT SELECT s.sid, r.* FROM unnest(ARRAY['snap-1', 'snap-6']) AS s(sid), snap_rows(s.sid) r)
	   ) AS unchanged
  FROM snap_before;
SELECT * FROM snap_rows('snap-6');
SELECT * FROM snap_rows('snap-1') WHERE reducer = 'count' AND kind = 'head';

-- Index 0 is a valid checkpoint index, and a missing state is JSON null.
SELECT a2_put_snapshots('snap-6', 'count', '[{"index": 0}]');
SELECT * FROM snap_rows('snap-6');

DROP FUNCTION snap_rows(text);
