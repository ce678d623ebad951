--
-- retire: a2_drop_session(session_id, force) and
-- a2_drop_finished_sessions(idle_ms, max_sessions)  (issue 10)
--
\set VERBOSITY terse
SET timezone = 'UTC';
SET a2.now = '2026-09-01 00:00:00+00';

-- rows of a session in every session-keyed table
CREATE FUNCTION pg_temp.rows_of(s text) RETURNS text
LANGUAGE sql AS $$
  SELECT format('events=%s snapshots=%s history=%s pins=%s',
                (SELECT count(*) FROM a2_events WHERE session_id = s),
                (SELECT count(*) FROM a2_snapshots WHERE session_id = s),
                (SELECT count(*) FROM a2_snapshot_history WHERE session_id = s),
                (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = s))
$$;

-- ret-a: three events, one processed, one dead-lettered, one unfinished,
-- with a pinned history snapshot
SELECT a2_append('ret-a', '[{"id": "ret-a-1", "type": "t"}, {"id": "ret-a-2", "type": "t"},
                            {"id": "ret-a-3", "type": "t", "lane": "q"}]') IS NOT NULL AS ok;
SELECT a2_claim('ret-a', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_complete('ret-a', 1, 1) -> 'outcome' AS outcome;
SELECT a2_fail('ret-a', 2, 1, 'boom', 1) -> 'outcome' AS outcome;
SELECT a2_put_snapshots('ret-a', 'r', '[{"index": 1, "state": {}, "pinEventIndexes": [3]},
                                        {"index": 2, "state": {}}]');
SELECT pg_temp.rows_of('ret-a');

-- refused while event 3 is unfinished (Z2010), and nothing is removed
SELECT a2_drop_session('ret-a');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT pg_temp.rows_of('ret-a');

-- once 3 is complete (its pin released), the dead letter does not block
SELECT a2_complete('ret-a', 3, 1) -> 'outcome' AS outcome;
SELECT a2_drop_session('ret-a');
SELECT pg_temp.rows_of('ret-a');
SELECT a2_read('ret-a') AS events, a2_list_snapshots('ret-a', true) AS snapshots;
SELECT session_id, last_index, to_timestamp(retired_at / 1000.0) AS retired_at
  FROM a2_retired_sessions WHERE session_id = 'ret-a';

-- indexes are never reused: the next append continues after 3
SELECT e ->> 'index' AS index, e ->> 'id' AS id
  FROM jsonb_array_elements(a2_append('ret-a', '[{"id": "ret-a-4", "type": "t"}]') -> 'events') e;
-- a replay of a dropped event id is a new event: the id is free again
SELECT e ->> 'index' AS index, e ->> 'id' AS id
  FROM jsonb_array_elements(a2_append('ret-a', '[{"id": "ret-a-1", "type": "t"}]') -> 'events') e;
-- the batch path (several events) continues after the mark too
SELECT a2_drop_session('ret-a', true) ->> 'lastIndex' AS last_index;
SELECT string_agg(e ->> 'index', ',') AS indexes
  FROM jsonb_array_elements(a2_append('ret-a', '[{"type": "t"}, {"type": "t"}]') -> 'events') e;
-- and so does a completion's child (it appends through the same path)
SELECT a2_claim('ret-a', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_complete('ret-a', 6, 1, '[{"id": "ret-a-child", "type": "c"}]') -> 'events' -> 0 -> 'index' AS child_index;

-- force drops unfinished events; the mark keeps the greatest index
SELECT a2_drop_session('ret-a', true);
SELECT a2_retired_last_index('ret-a') AS mark;
-- dropping again: nothing to drop, the mark is reported and unchanged
SELECT a2_drop_session('ret-a');
SELECT a2_retired_last_index('ret-a') AS mark;

-- an unknown session: nothing dropped, no mark
SELECT a2_drop_session('ret-none');
SELECT a2_retired_last_index('ret-none') AS mark;

-- a session with snapshots but no events: the snapshots go, no mark
SELECT a2_put_snapshots('ret-snaps', 'r', '[{"index": 5, "state": {}}]');
SELECT a2_drop_session('ret-snaps');
SELECT pg_temp.rows_of('ret-snaps');

-- refusals
SELECT a2_drop_session(NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_session('');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_session('ret-a', NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE

-- the batch form, on this file's sessions only (the others are hidden in
-- this transaction and come back at ROLLBACK)
BEGIN;
DELETE FROM a2_events WHERE session_id NOT LIKE 'ret-%';
SET LOCAL a2.now = '2026-09-02 00:00:00+00';
-- ret-b1..b4 finished at day 2; ret-c unfinished; ret-d finished at day 2 + 10 min
SELECT count(*) AS appended FROM generate_series(1, 4) i,
       LATERAL a2_append('ret-b' || i, '[{"type": "t", "settled": true}]');
SELECT a2_append('ret-c', '[{"type": "t"}]') IS NOT NULL AS ok;
SET LOCAL a2.now = '2026-09-02 00:10:00+00';
SELECT a2_append('ret-d', '[{"type": "t", "settled": true}]') IS NOT NULL AS ok;
-- at +15 min, idle 10 min: only ret-b* qualify; at most 3 per call, in id order
SET LOCAL a2.now = '2026-09-02 00:15:00+00';
SELECT a2_drop_finished_sessions(600000, 3) AS dropped;
SELECT string_agg(DISTINCT session_id, ',' ORDER BY session_id) AS left_sessions FROM a2_events;
SELECT a2_drop_finished_sessions(600000, 3) AS dropped;
SELECT a2_drop_finished_sessions(600000, 3) AS dropped;
SELECT string_agg(DISTINCT session_id, ',' ORDER BY session_id) AS left_sessions FROM a2_events;
-- idle 1 min: ret-d goes too; ret-c (unfinished) never does
SELECT a2_drop_finished_sessions(60000, 100) AS dropped;
SELECT string_agg(DISTINCT session_id, ',' ORDER BY session_id) AS left_sessions FROM a2_events;
SELECT session_id, last_index FROM a2_retired_sessions
 WHERE session_id LIKE 'ret-b%' OR session_id = 'ret-d' ORDER BY session_id;
-- an idle time reaching before 1970 selects nothing
SELECT a2_drop_finished_sessions(9223372036854775807, 100) AS dropped;
ROLLBACK;

-- refusals
SELECT a2_drop_finished_sessions(NULL, 10);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_finished_sessions(0, NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_finished_sessions(-1, 10);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_finished_sessions(0, 0);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_drop_finished_sessions(0, 10001);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
