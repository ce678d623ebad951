--
-- inspect: a2_list_sessions(prefix, cursor, max_sessions) and
-- a2_list_snapshots(session_id, include_history)  (issue 10)
--
\set VERBOSITY terse
SET a2.now = '2026-07-01 00:00:00+00';

-- nothing under an unused prefix: an empty page without a cursor
SELECT a2_list_sessions('insp-none:');

-- three sessions under insp:, and inspx, which starts with "insp" but not
-- with "insp:" (the prefix is matched exactly)
SELECT a2_append('insp:b', '[{"id": "insp-b-1", "type": "t"}, {"id": "insp-b-2", "type": "t"}]') IS NOT NULL AS ok;
SET a2.now = '2026-07-01 00:00:01+00';
SELECT a2_append('insp:a', '[{"id": "insp-a-1", "type": "t"}]') IS NOT NULL AS ok;
SELECT a2_append('insp:c', '[{"id": "insp-c-1", "type": "t", "settled": true}]') IS NOT NULL AS ok;
SELECT a2_append('inspx', '[{"id": "inspx-1", "type": "t"}]') IS NOT NULL AS ok;

-- one page: StoredSessionSummary objects in session-id order
SELECT jsonb_pretty(a2_list_sessions('insp:'));

-- attempts, failures and dead letters are counted; updatedAt follows the
-- latest claim, failure or completion
SET a2.now = '2026-07-01 00:00:05+00';
SELECT a2_claim('insp:b', 'w', 60000) -> 'outcome' AS outcome;
SET a2.now = '2026-07-01 00:00:06+00';
SELECT a2_fail('insp:b', 1, 1, 'boom', 1) -> 'outcome' AS outcome;
SELECT a2_complete('insp:b', 2, 1) -> 'outcome' AS outcome;
SELECT s -> 'eventCount' AS events, s -> 'pendingCount' AS pending,
       s -> 'failedCount' AS failed, s -> 'attemptCount' AS attempts,
       s -> 'failureCount' AS failures, s ->> 'firstEventAt' AS first_event_at,
       s ->> 'updatedAt' AS updated_at
  FROM jsonb_array_elements(a2_list_sessions('insp:b') -> 'sessions') s;

-- paging: max_sessions per page, the cursor is the last id of the page,
-- and the last page has a null cursor
SELECT p -> 'cursor' AS cursor,
       jsonb_path_query_array(p, '$.sessions[*].sessionId') AS ids
  FROM a2_list_sessions('insp:', NULL, 2) p;
SELECT p -> 'cursor' AS cursor,
       jsonb_path_query_array(p, '$.sessions[*].sessionId') AS ids
  FROM a2_list_sessions('insp:', 'insp:b', 2) p;
-- a page that is exactly full still says whether more exist
SELECT p -> 'cursor' AS cursor,
       jsonb_path_query_array(p, '$.sessions[*].sessionId') AS ids
  FROM a2_list_sessions('insp:', NULL, 3) p;
-- the empty prefix lists every session (here: the ones starting "insp")
SELECT jsonb_path_query_array(p, '$.sessions[*].sessionId ? (@ starts with "insp")') AS ids
  FROM a2_list_sessions('', NULL, 10000) p;

-- walk every page of a larger listing with page size 7: each id once, in order
SELECT count(*) AS appended
  FROM generate_series(1, 40) i,
       LATERAL a2_append('insp-many:' || lpad(i::text, 3, '0'), '[{"type": "t"}]');
WITH RECURSIVE pages(n, cur, ids) AS (
  SELECT 1, p ->> 'cursor', jsonb_path_query_array(p, '$.sessions[*].sessionId')
    FROM a2_list_sessions('insp-many:', NULL, 7) p
  UNION ALL
  SELECT n + 1, p ->> 'cursor', jsonb_path_query_array(p, '$.sessions[*].sessionId')
    FROM pages, LATERAL a2_list_sessions('insp-many:', pages.cur, 7) p
   WHERE pages.cur IS NOT NULL
)
SELECT max(n) AS pages, sum(jsonb_array_length(ids)) AS sessions,
       (SELECT array_agg(x ORDER BY x) = array_agg(x ORDER BY o)
          FROM (SELECT x, row_number() OVER () AS o
                  FROM pages, jsonb_array_elements_text(ids) x) y) AS in_order,
       (SELECT count(DISTINCT x) FROM pages, jsonb_array_elements_text(ids) x) AS distinct_ids
  FROM pages;

-- refusals: a NULL prefix (22004), a bad page size or cursor (22023)
SELECT a2_list_sessions(NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_sessions('insp:', NULL, 0);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_sessions('insp:', NULL, 10001);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_sessions('insp:', '');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_sessions(repeat('x', 1025));
\echo SQLSTATE :LAST_ERROR_SQLSTATE

-- 0.4.0: a session with a pending event outside the default queue gets
-- pendingByQueue, its pending events per queue (they sum to pendingCount;
-- settled, completed and dead-lettered events are not pending); a session
-- whose named-queue work is finished lists without it.  Rolled back, so
-- that the later files' claims never meet these events.
BEGIN;
SET LOCAL a2.now = '2026-07-01 00:00:10+00';
SELECT a2_append('insp-q:a', '[{"type": "t", "queue": "email"}, {"type": "t", "queue": "email"},
                               {"type": "t"}, {"type": "t", "queue": "sms", "settled": true},
                               {"type": "t", "queue": "sms"}]') IS NOT NULL AS ok;
SELECT a2_claim('insp-q:a', 'w', 60000, NULL, '{}', '{sms}') -> 'outcome' AS outcome;
SELECT a2_fail('insp-q:a', 5, 1, 'boom', 1) -> 'outcome' AS outcome;
SELECT a2_append('insp-q:b', '[{"type": "t", "queue": "email", "settled": true}, {"type": "t"}]') IS NOT NULL AS ok;
SELECT jsonb_pretty(a2_list_sessions('insp-q:'));
ROLLBACK;

-- snapshots: heads by reducer name; with include_history the pinned
-- history rows too, each element flagged
SELECT a2_list_snapshots('insp:a');
SELECT a2_put_snapshots('insp:a', 'zeta', '[{"index": 1, "state": {"n": 1}}]');
SET a2.now = '2026-07-01 00:00:07+00';
SELECT a2_put_snapshots('insp:a', 'alpha', '[{"index": 0, "state": {}, "pinEventIndexes": [1]}]');
SET a2.now = '2026-07-01 00:00:08+00';
SELECT a2_put_snapshots('insp:a', 'alpha', '[{"index": 1, "state": {"n": 1}}]');
SELECT jsonb_pretty(a2_list_snapshots('insp:a'));
SELECT jsonb_pretty(a2_list_snapshots('insp:a', true));
SELECT a2_list_snapshots('insp:none', true);

-- refusals
SELECT a2_list_snapshots(NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_snapshots('');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_list_snapshots('insp:a', NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
