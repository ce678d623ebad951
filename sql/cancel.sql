--
-- cancel: a2_cancel(session_id, indexes, reason) makes unfinished events
-- cancelled: terminal, distinct from processed and dead-lettered.
--
\set VERBOSITY terse
SET a2.now = '2026-06-01 00:00:00+00';

-- one event's state, as a2_read returns it
CREATE FUNCTION pg_temp.ev(s text, i bigint)
RETURNS TABLE (index bigint, processed_at text, by_attempt int, cancelled_at text,
			   cancel_reason text, claim_holder text, failed_at text, lane_ready boolean)
LANGUAGE sql AS $$
  SELECT e.*, (SELECT x.lane_ready FROM a2_events x WHERE x.session_id = s AND x.idx = i)
    FROM jsonb_to_recordset(a2_read(s, i - 1, i))
    AS e("index" bigint, "processedAt" text, "processedByAttempt" int,
         "cancelledAt" text, "cancelReason" text, "claimHolder" text, "failedAt" text)
$$;

-- the indexes a result lists under key k, or its outcome
CREATE FUNCTION pg_temp.idx(j jsonb, k text DEFAULT 'cancelled') RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE(string_agg(e ->> 'index', ',' ORDER BY o), j ->> 'outcome', '')
    FROM jsonb_array_elements(j -> k) WITH ORDINALITY AS x(e, o)
$$;

--
-- A pending event: cancelled with a reason; processed_at is the cancel
-- time (a2.now), processedByAttempt stays null.
--
SELECT a2_append('cx-a', '[
  {"id": "cx-a-1", "type": "job"},
  {"id": "cx-a-2", "type": "job"},
  {"id": "cx-a-3", "type": "note", "settled": true}
]') -> 'hasPending' AS pending;
SET a2.now = '2026-06-01 00:00:05+00';
SELECT jsonb_pretty(a2_cancel('cx-a', '{1}', 'user asked'));
SELECT * FROM pg_temp.ev('cx-a', 1);
-- an event never cancelled keeps the 0.3.0 shape: no cancelledAt key
SELECT a2_read('cx-a', 1, 2) -> 0 ? 'cancelledAt' AS has_cancelled_at,
       a2_read('cx-a', 1, 2) -> 0 ? 'cancelReason' AS has_cancel_reason;
-- without a reason, cancelReason is null (present, since cancelled)
SELECT a2_cancel('cx-a', '{2}') -> 'cancelled' -> 0 -> 'cancelReason' AS reason;
-- idempotent: again, or listing a settled event, cancels nothing
SET a2.now = '2026-06-01 00:00:09+00';
SELECT a2_cancel('cx-a', '{1,2,3}', 'again');
SELECT * FROM pg_temp.ev('cx-a', 1);
SELECT a2_cancel('cx-a');
-- the session is settled: nothing to claim
SELECT a2_claim('cx-a', 'w1', 60000);

--
-- A leased event: its live attempt is superseded on complete, fail and
-- renew; nothing of the attempt is recorded.
--
SET a2.now = '2026-06-01 01:00:00+00';
SELECT a2_append('cx-b', '[{"id": "cx-b-1", "type": "job"}, {"id": "cx-b-2", "type": "job"}]') -> 'hasPending';
SELECT pg_temp.idx(a2_claim('cx-b', 'w1', 60000), 'events') AS claimed;
SELECT pg_temp.idx(a2_cancel('cx-b', '{1}', 'stop')) AS cancelled;
SELECT * FROM pg_temp.ev('cx-b', 1);
SELECT a2_renew('cx-b', 'w1', '[{"index": 1, "attempt": 1}, {"index": 2, "attempt": 1}]', 60000);
SELECT a2_complete('cx-b', 1, 1, '[{"id": "cx-b-child", "type": "child"}]');
SELECT a2_fail('cx-b', 1, 1, 'late', 3);
SELECT * FROM pg_temp.ev('cx-b', 1);
SELECT count(*) AS child_rows FROM a2_events WHERE event_id = 'cx-b-child';
-- the other leased event goes on
SELECT a2_complete('cx-b', 2, 1) ->> 'outcome' AS complete_2;
-- a completed event listed: left alone
SELECT a2_cancel('cx-b', '{2}');
SELECT * FROM pg_temp.ev('cx-b', 2);

--
-- Lanes advance past a cancelled head, as on completion.
--
SET a2.now = '2026-06-01 02:00:00+00';
SELECT a2_append('cx-c', '[
  {"id": "cx-c-1", "type": "job", "lane": "q"},
  {"id": "cx-c-2", "type": "job", "lane": "q"},
  {"id": "cx-c-3", "type": "job", "lane": "q"},
  {"id": "cx-c-4", "type": "job", "lane": "q"},
  {"id": "cx-c-5", "type": "job", "lane": "r"},
  {"id": "cx-c-6", "type": "job", "lane": "r"}
]') -> 'hasPending';
SELECT idx, lane, lane_ready FROM a2_events WHERE session_id = 'cx-c' ORDER BY idx;
-- the head of q and the tail of r: 2 becomes ready, 5 stays the head of r
SELECT pg_temp.idx(a2_cancel('cx-c', '{1,6}')) AS cancelled;
SELECT idx, lane, lane_ready FROM a2_events WHERE session_id = 'cx-c' ORDER BY idx;
SELECT pg_temp.idx(a2_claim('cx-c', 'w1', 60000), 'events') AS claimed;
-- a leased head and the event behind it, together: 4 becomes ready
SELECT pg_temp.idx(a2_cancel('cx-c', '{3,2}')) AS cancelled;
SELECT idx, lane, lane_ready FROM a2_events WHERE session_id = 'cx-c' ORDER BY idx;
SELECT a2_complete('cx-c', 2, 1) ->> 'outcome' AS complete_2;
SELECT pg_temp.idx(a2_claim('cx-c', 'w1', 60000), 'events') AS claimed;

--
-- A dead-lettered event can be cancelled: it unblocks its lane.  It keeps
-- failedAt and its failure history; a2_redrive refuses it.
--
SET a2.now = '2026-06-01 03:00:00+00';
SELECT a2_append('cx-d', '[
  {"id": "cx-d-1", "type": "job", "lane": "q"},
  {"id": "cx-d-2", "type": "job", "lane": "q"}
]') -> 'hasPending';
SELECT pg_temp.idx(a2_claim('cx-d', 'w1', 60000), 'events') AS claimed;
SELECT a2_fail('cx-d', 1, 1, 'boom', 1) ->> 'outcome' AS fail;
-- the dead letter blocks its lane: event 2 is not lane-ready
SELECT a2_claim('cx-d', 'w1', 60000) ->> 'outcome' AS outcome;
SELECT pg_temp.idx(a2_cancel('cx-d', '{1}', 'give up')) AS cancelled;
SELECT * FROM pg_temp.ev('cx-d', 1);
SELECT e ->> 'failureCount' AS failures, e ->> 'lastError' AS last_error
  FROM (SELECT a2_read('cx-d', 0, 1) -> 0 AS e) x;
SELECT a2_redrive('cx-d', 1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_redrive('cx-d');
-- the lane goes on with event 2
SELECT * FROM pg_temp.ev('cx-d', 2);
SELECT pg_temp.idx(a2_claim('cx-d', 'w1', 60000), 'events') AS claimed;

--
-- NULL indexes: every unfinished event, scheduled and leased ones too;
-- finished ones are untouched.
--
SET a2.now = '2026-06-01 04:00:00+00';
SELECT a2_append('cx-e', '[
  {"id": "cx-e-1", "type": "job"},
  {"id": "cx-e-2", "type": "job", "notBefore": "2026-06-02T00:00:00.000Z"},
  {"id": "cx-e-3", "type": "job"},
  {"id": "cx-e-4", "type": "note", "settled": true}
]') -> 'hasPending';
SELECT pg_temp.idx(a2_claim('cx-e', 'w1', 60000), 'events') AS claimed;
SELECT a2_complete('cx-e', 1, 1) ->> 'outcome' AS complete_1;
SELECT pg_temp.idx(a2_cancel('cx-e', NULL, 'shutdown')) AS cancelled;
SELECT e ->> 'index' AS index, e ->> 'cancelledAt' AS cancelled_at, e ->> 'notBefore' AS not_before
  FROM jsonb_array_elements(a2_read('cx-e')) AS e;
--
-- Snapshot pins of a cancelled event are released, as on completion.
--
SELECT a2_append('cx-p', '[{"id": "cx-p-1", "type": "job"}, {"id": "cx-p-2", "type": "job"}]') -> 'hasPending';
INSERT INTO a2_snapshot_history VALUES
  ('cx-p', 'r', 1, '{"at": 1}', 0), ('cx-p', 'r', 2, '{"at": 2}', 0);
INSERT INTO a2_snapshot_pins VALUES ('cx-p', 1, 'r', 1), ('cx-p', 2, 'r', 2);
SELECT pg_temp.idx(a2_cancel('cx-p', '{1}')) AS cancelled;
SELECT event_index, up_to_index FROM a2_snapshot_pins WHERE session_id = 'cx-p';
SELECT up_to_index FROM a2_snapshot_history WHERE session_id = 'cx-p';

--
-- Inspection and metrics show cancelled events apart.  a2_metrics() and
-- a2_claim_next read the whole table: on this file's sessions only, in a
-- transaction that rolls back.
--
SELECT s ->> 'sessionId' AS session, s ->> 'eventCount' AS events, s ->> 'pendingCount' AS pending,
       s ->> 'failedCount' AS failed, s ->> 'cancelledCount' AS cancelled
  FROM jsonb_array_elements(a2_list_sessions('cx-') -> 'sessions') AS s;
BEGIN;
DELETE FROM a2_events WHERE session_id NOT LIKE 'cx-%';
SELECT cancelled_events, dead_letters, eligible_events, leased_events FROM a2_metrics();
-- a2_claim_next never serves a cancelled event: cx-e's scheduled event 2
-- is due now, but cancelled
SET LOCAL a2.now = '2026-06-03 00:00:00+00';
SELECT c ->> 'sessionId' AS session, c -> 'events' -> 0 ->> 'index' AS first_index
  FROM jsonb_array_elements(a2_claim_next('w9', 60000, 100) -> 'claims') AS c ORDER BY 1;
ROLLBACK;

--
-- Bad input: the documented SQLSTATE, and nothing written.
--
SELECT a2_append('cx-f', '[{"id": "cx-f-1", "type": "job"}, {"id": "cx-f-2", "type": "job"}]') -> 'hasPending';
SELECT a2_cancel(NULL);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{1,NULL}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{0}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{-3}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{{1},{2}}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{2,1,2}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', (SELECT array_agg(g) FROM generate_series(1, 10001) g));
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-f', '{1}', repeat('x', 1025));
\echo SQLSTATE :LAST_ERROR_SQLSTATE
-- an index without an event: Z2003, and 1 is not cancelled either
SELECT a2_cancel('cx-f', '{1,7,9}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_cancel('cx-nobody', '{1}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT count(*) AS cancelled_rows FROM a2_events WHERE session_id = 'cx-f' AND cancelled_at IS NOT NULL;
-- the limits themselves are accepted: 1024 bytes of reason, an empty
-- list, an unknown session with no list
SELECT pg_temp.idx(a2_cancel('cx-f', '{1}', repeat('x', 1024))) AS cancelled;
SELECT a2_cancel('cx-f', '{}');
SELECT a2_cancel('cx-nobody');
SELECT count(*) AS cancelled_rows FROM a2_events WHERE session_id = 'cx-f' AND cancelled_at IS NOT NULL;
