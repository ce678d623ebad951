-- a2 quickstart: a worked example of the whole protocol, end to end.
-- Run by scripts/demo.sh against a fresh database with CREATE EXTENSION a2.
\set ON_ERROR_STOP 1
\pset footer off
SET client_min_messages = warning;

-- The store clock is pinned so the output is the same on every run;
-- leave a2.now empty in production (the wall clock).
SET a2.now = '2026-01-01T09:00:00.000Z';

\echo
\echo '== 1. Append events to two sessions (index assignment is dense per session)'
SELECT e->>'index' AS index, e->>'id' AS id, e->>'type' AS type,
       coalesce(e->>'lane', '-') AS lane, e->>'createdAt' AS created_at
  FROM jsonb_array_elements(a2_append('order-42', '[
         {"id": "o42-placed",  "type": "order.placed",  "payload": {"sku": "tea", "qty": 2}, "lane": "payments"},
         {"id": "o42-gift",    "type": "gift.note",     "payload": {"text": "happy birthday"}},
         {"id": "o42-charge2", "type": "order.changed", "payload": {"qty": 3}, "lane": "payments"}
       ]')->'events') AS e;

SELECT e->>'index' AS index, e->>'id' AS id, e->>'type' AS type
  FROM jsonb_array_elements(a2_append('order-43', '[
         {"id": "o43-placed", "type": "order.placed", "payload": {"sku": "coffee", "qty": 1}}
       ]')->'events') AS e;

\echo
\echo '== 2. Idempotent replay: the same batch again returns the stored events and writes nothing'
SELECT a2_append('order-43', '[{"id": "o43-placed", "type": "order.placed", "payload": {"sku": "coffee", "qty": 1}}]')
         #>> '{events,0,index}' AS replayed_index,
       (SELECT count(*) FROM a2_events WHERE session_id = 'order-43') AS rows_in_session;

\echo
\echo '== 3. A worker claims everything eligible (event 3 waits behind event 1 in lane "payments")'
SELECT r->>'outcome' AS outcome,
       (SELECT string_agg(e->>'index' || ':' || (e->>'attemptCount'), ', ')
          FROM jsonb_array_elements(r->'events') e) AS "index:attempt",
       r#>>'{events,0,claimExpiresAt}' AS lease_expires
  FROM a2_claim('order-42', 'worker-1', 30000) AS r;

\echo
\echo '== 4. A second worker finds nothing to do until the first lease expires'
SELECT a2_claim('order-42', 'worker-2', 30000) AS second_claim;

\echo
\echo '== 5. worker-1 renews its leases for another minute'
SELECT a2_renew('order-42', 'worker-1', '[{"index": 1, "attempt": 1}, {"index": 2, "attempt": 1}]', 60000) AS renew;

\echo
\echo '== 6. A reducer checkpoint is written, pinned by in-flight event 1'
\o /dev/null
SELECT a2_put_snapshots('order-42', 'order-total', '[
         {"index": 1, "state": {"total": 2}, "pinEventIndexes": [1]},
         {"index": 2, "state": {"total": 2, "gift": true}}
       ]');
\o
SELECT up_to_index, state, 'head' AS kind FROM a2_snapshots WHERE session_id = 'order-42'
UNION ALL
SELECT up_to_index, state, 'history, pinned by event ' || (SELECT string_agg(event_index::text, ',') FROM a2_snapshot_pins p
                                                            WHERE p.session_id = h.session_id AND p.up_to_index = h.up_to_index)
  FROM a2_snapshot_history h WHERE session_id = 'order-42'
ORDER BY 1;

\echo
\echo '== 7. Reading state under a bound selects the pinned checkpoint plus the tail after it'
SELECT r->'headIndex' AS head_index, r->'snapshot' AS snapshot,
       (SELECT string_agg(e->>'index', ',') FROM jsonb_array_elements(r->'events') e) AS tail
  FROM a2_read_state('order-42', 'order-total', 3, 1) AS r;

\echo
\echo '== 8. The handler for event 1 writes its own row and completes in ONE transaction'
CREATE TABLE shipments (order_id text PRIMARY KEY, sku text, qty int);
BEGIN;
INSERT INTO shipments VALUES ('order-42', 'tea', 2);
SELECT r->>'outcome' AS outcome,
       (SELECT string_agg(e->>'index' || ' ' || (e->>'type') || ' cause=' || (e->>'cause'), '; ')
          FROM jsonb_array_elements(r->'events') e) AS returned_events
  FROM a2_complete('order-42', 1, 1, '[{"id": "o42-paid", "type": "payment.captured", "payload": {"amount": 7.5}, "settled": true}]') AS r;
COMMIT;
SELECT * FROM shipments;

\echo
\echo '   completion released the pin, collected the history row, and promoted event 3 in lane "payments":'
SELECT (SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'order-42') AS history_rows,
       (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'order-42') AS pins,
       (SELECT lane_ready FROM a2_events WHERE session_id = 'order-42' AND idx = 3) AS event_3_ready;

\echo
\echo '== 9. Completing the same attempt again is an idempotent retry'
SELECT a2_complete('order-42', 1, 1, '[{"id": "o42-paid", "type": "payment.captured", "payload": {"amount": 7.5}, "settled": true}]')
         #>> '{events,0,index}' AS same_child_index;

\echo
\echo '== 10. Event 3 fails twice and is dead-lettered (max_failures = 2); its lane stays blocked'
SELECT a2_claim('order-42', 'worker-1', 30000)->>'outcome' AS claim;
SELECT a2_fail('order-42', 3, 1, 'card declined', 2) AS first_failure;
SELECT a2_claim('order-42', 'worker-1', 30000) #>> '{events,0,attemptCount}' AS reclaimed_attempt;
SELECT a2_fail('order-42', 3, 2, 'card declined again', 2) AS second_failure;

\echo
\echo '== 11. The stale attempt 1 of event 3 can no longer append caused events'
\set VERBOSITY terse
\set ON_ERROR_STOP 0
SELECT a2_append('order-42', '[{"type": "late", "cause": {"index": 3, "attempt": 1}}]');
\echo '   refused as expected, SQLSTATE' :LAST_ERROR_SQLSTATE '(SUPERSEDED_ATTEMPT); nothing was written'
\set ON_ERROR_STOP 1

\echo
\echo '== 12. Event 2 completes; a lease that expired unclaimed can still complete (fenced by attempt)'
SET a2.now = '2026-01-01T10:00:00.000Z';
SELECT a2_complete('order-42', 2, 1)->>'outcome' AS event_2;
SELECT a2_claim('order-42', 'worker-1', 30000) AS nothing_left;

\echo
\echo '== 13. The whole log of order-42'
SELECT e->>'index' AS index, e->>'type' AS type, coalesce(e->>'lane', '-') AS lane,
       e->>'attemptCount' AS attempts, e->>'failureCount' AS failures,
       CASE WHEN e->>'processedAt' IS NOT NULL THEN 'processed'
            WHEN e->>'failedAt' IS NOT NULL THEN 'dead-lettered: ' || (e->>'lastError')
            ELSE 'pending' END AS status
  FROM jsonb_array_elements(a2_read('order-42')) AS e;

\echo
\echo '== 14. Presence: last writer wins per field, with a TTL on the store clock'
\o /dev/null
SELECT a2_presence_set('room-1', 'alice', '{"cursor": 10, "typing": true}', '2026-01-01T10:00:00Z', 1, 5000);
SELECT a2_presence_set('room-1', 'alice', '{"cursor": 3}', '2026-01-01T09:59:00Z', 2, 5000);  -- older: loses
SELECT a2_presence_set('room-1', 'alice', '{"typing": null}', '2026-01-01T10:00:01Z', 3, 5000); -- deletes
\o
SELECT p->>'participant' AS participant, p->>'field' AS field, p->'value' AS value, p->>'expiresAt' AS expires_at
  FROM jsonb_array_elements(a2_presence_read('room-1')) AS p;

\echo
\echo '== 15. A misspelled key is refused, not stored as null (SQLSTATE 22023)'
\set ON_ERROR_STOP 0
SELECT a2_append('order-44', '[{"type": "order.placed", "paylaod": {"sku": "jam"}}]');
\echo '   refused as expected, SQLSTATE' :LAST_ERROR_SQLSTATE '(the hint lists the accepted keys); nothing was written'
\set ON_ERROR_STOP 1

\echo
\echo '== 16. The card problem is fixed: redrive the dead letter (new failure budget, last error kept)'
SELECT r->>'outcome' AS outcome, r#>>'{event,index}' AS index,
       r#>>'{event,failureCount}' AS failures, r#>>'{event,lastError}' AS last_error,
       r#>>'{event,attemptCount}' AS attempts_so_far
  FROM a2_redrive('order-42', 3) AS r;

\echo
\echo '== 17. A fleet worker: a2_claim_next finds the sessions with work by itself, oldest first'
-- More work in other sessions, appended later than order-42's event 3.
\o /dev/null
SET a2.now = '2026-01-01T10:00:05.000Z';
SELECT a2_append('order-44', '[{"id": "o44-placed", "type": "order.placed", "payload": {"sku": "jam"}}]');
SELECT a2_append('order-45', '[{"id": "o45-placed", "type": "order.placed", "payload": {"sku": "honey"}, "lane": "payments"},
                               {"id": "o45-changed", "type": "order.changed", "payload": {"qty": 2}, "lane": "payments"}]');
CREATE TABLE fleet_log (n serial, session_id text, index bigint, type text, attempt int);

-- The worker loop: claim up to max_sessions sessions, handle each claimed
-- event and complete it in the same transaction as the handler's own
-- write, commit, repeat until nothing is claimable; then retryAt says how
-- long an idle worker may sleep (or LISTEN a2_events).
CREATE PROCEDURE fleet_worker(holder text, max_sessions int) LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
	c jsonb;
	e jsonb;
BEGIN
	LOOP
		j := a2_claim_next(holder, 30000, max_sessions);
		EXIT WHEN jsonb_array_length(j->'claims') = 0;
		FOR c IN SELECT * FROM jsonb_array_elements(j->'claims') LOOP
			FOR e IN SELECT * FROM jsonb_array_elements(c->'events') LOOP
				INSERT INTO fleet_log (session_id, index, type, attempt)
				VALUES (c->>'sessionId', (e->>'index')::bigint, e->>'type', (e->>'attemptCount')::int);
				PERFORM a2_complete(c->>'sessionId', (e->>'index')::bigint, (e->>'attemptCount')::int);
			END LOOP;
		END LOOP;
		COMMIT;
	END LOOP;
	RAISE NOTICE 'fleet_worker %: idle, retryAt %', holder, coalesce(j->>'retryAt', 'null (nothing leased)');
END $$;
SET client_min_messages = notice;
\o
CALL fleet_worker('fleet-1', 1);
\o /dev/null
SET client_min_messages = warning;
\o
\echo '   served oldest available first: the redriven event 3 of order-42 and order-43 (both from 09:00),'
\echo '   then order-44 and order-45 (10:00:05); order-45 event 2 waited in its lane for event 1'
SELECT n, session_id, index, type, attempt FROM fleet_log ORDER BY n;

\echo
\echo '== 18. Scheduling: a delayed event is not claimed before its notBefore'
\o /dev/null
SET a2.now = '2026-01-01T11:00:00.000Z';
\o
SELECT e->>'index' AS index, e->>'type' AS type, e->>'notBefore' AS not_before
  FROM jsonb_array_elements(a2_append('order-46', '[
    {"id": "o46-placed", "type": "order.placed", "payload": {"sku": "bread"}},
    {"id": "o46-remind", "type": "payment.remind", "notBefore": "2026-01-01T12:00:00Z"}
  ]')->'events') e;
SELECT r->>'outcome' AS outcome, jsonb_path_query_array(r, '$.events[*].index') AS claimed
  FROM a2_claim('order-46', 'worker-1', 30000) r;
SELECT a2_complete('order-46', 1, 1)->>'outcome' AS event_1;
\echo '   the reminder is not due yet: busy, and retryAt says when'
SELECT r->>'outcome' AS outcome, r->>'retryAt' AS retry_at FROM a2_claim('order-46', 'worker-1', 30000) r;
\o /dev/null
SET a2.now = '2026-01-01T12:00:00.000Z';
\o
\echo '   at 12:00 it is claimed'
SELECT r->>'outcome' AS outcome, jsonb_path_query_array(r, '$.events[*].index') AS claimed
  FROM a2_claim('order-46', 'worker-1', 30000) r;

\echo
\echo '== 19. Backoff: a failed attempt retries after retry_after_ms, not in a tight loop'
SELECT a2_fail('order-46', 2, 1, 'mail server down', 5, 60000) AS fail;
SELECT r->>'outcome' AS outcome, r->>'retryAt' AS retry_at FROM a2_claim('order-46', 'worker-1', 30000) r;
\o /dev/null
SET a2.now = '2026-01-01T12:01:00.000Z';
\o
SELECT r->>'outcome' AS outcome, jsonb_path_query_array(r, '$.events[*].attemptCount') AS attempt
  FROM a2_claim('order-46', 'worker-1', 30000) r;

\echo
\echo '== 20. A durable timer: the handler completes and returns an event due in an hour'
SELECT r->>'outcome' AS outcome, r->'events'->0->>'type' AS returned, r->'events'->0->>'notBefore' AS due
  FROM a2_complete('order-46', 2, 2,
         '[{"id": "o46-recheck", "type": "payment.recheck", "notBefore": "2026-01-01T13:01:00Z"}]') r;
SELECT scheduled_events, earliest_due_at AT TIME ZONE 'UTC' AS earliest_due_utc FROM a2_metrics();
\o /dev/null
SET a2.now = '2026-01-01T13:01:00.000Z';
\o
SELECT r->>'outcome' AS outcome, r->'events'->0->>'type' AS type
  FROM a2_claim('order-46', 'worker-1', 30000) r;

\echo
\echo '== 21. A recurring schedule: an hourly report, each tick appended exactly once'
\echo '   (all in one transaction here, so the server''s own scheduler, on the wall clock, never sees it)'
BEGIN;
\o /dev/null
SET a2.now = '2026-01-01T13:30:00.000Z';
\o
SELECT a2_schedule('hourly-report', '0 * * * *', 'reports', '{"type": "report.hourly"}')
         AT TIME ZONE 'UTC' AS next_tick_utc;
\o /dev/null
SET a2.now = '2026-01-01T14:00:00.000Z';
\o
\echo '   14:00: the fire pass (the background scheduler runs it at every tick) appends the tick'
SELECT name, tick_at AT TIME ZONE 'UTC' AS tick_utc, session_id, event_index, event_id
  FROM a2_fire_schedules();
\echo '   the same pass again: nothing, a tick fires once (its event id is derived from name and tick)'
SELECT count(*) AS fired_again FROM a2_fire_schedules();
\o /dev/null
SET a2.now = '2026-01-01T17:10:00.000Z';
\o
\echo '   17:10 after an outage since 14:00: the default policy ("latest") fires only the last missed tick'
SELECT name, tick_at AT TIME ZONE 'UTC' AS tick_utc, event_index FROM a2_fire_schedules();
SELECT name, next_tick_at AT TIME ZONE 'UTC' AS next_tick_utc, last_tick_at AT TIME ZONE 'UTC' AS last_tick_utc,
       fired_count
  FROM a2_list_schedules();
SELECT e->>'index' AS index, e->>'id' AS id, e->>'createdAt' AS created_at
  FROM jsonb_array_elements(a2_read('reports', 0)) e;
SELECT a2_unschedule('hourly-report') AS unscheduled;
COMMIT;

\echo '== 22. Cancel: the customer withdraws order-47; the worker holding it is superseded, the lane moves on'
\o /dev/null
SET a2.now = '2026-01-01T14:00:00.000Z';
\o
SELECT jsonb_path_query_array(a2_append('order-47', '[
    {"id": "o47-pack", "type": "order.pack", "lane": "warehouse"},
    {"id": "o47-ship", "type": "order.ship", "lane": "warehouse"},
    {"id": "o47-audit", "type": "order.audit", "lane": "warehouse"}
  ]'), '$.events[*].index') AS appended;
SELECT jsonb_path_query_array(a2_claim('order-47', 'worker-1', 30000), '$.events[*].index') AS claimed;
\echo '   cancel packing (leased by worker-1) and shipping, with a reason'
SELECT e->>'index' AS index, e->>'type' AS type, e->>'cancelledAt' AS cancelled_at, e->>'cancelReason' AS reason
  FROM jsonb_array_elements(a2_cancel('order-47', '{1,2}', 'customer withdrew the order')->'cancelled') e;
\echo '   worker-1 finishes packing too late: superseded, nothing written; cancelling again changes nothing'
SELECT a2_complete('order-47', 1, 1)->>'outcome' AS complete, a2_cancel('order-47', '{1,2}') AS again;
\echo '   the lane moved past both: the audit event is claimable'
SELECT jsonb_path_query_array(a2_claim('order-47', 'worker-1', 30000), '$.events[*].index') AS claimed;
SELECT s->>'cancelledCount' AS cancelled, s->>'pendingCount' AS pending
  FROM jsonb_array_elements(a2_list_sessions('order-47')->'sessions') s;
\echo '== 23. Queues, priorities and limits (0.4.0): two worker pools on two queues'
\o /dev/null
SET a2.now = '2026-01-02T09:00:00.000Z';
\o
\echo '   mail work in queue "email", payments in queue "payments" (one urgent),'
\echo '   every payment keyed by its merchant: at most 1 running per merchant,'
\echo '   and the mail provider takes at most 2 sends per second'
SELECT a2_set_concurrency_limit('merchant-7', 1) AS concurrency_limit;
SELECT a2_set_rate_limit('smtp', 2, 1000) AS rate_limit;
SELECT count(*) AS appended FROM (
  SELECT a2_append('order-' || i, jsonb_build_array(
           jsonb_build_object('type', 'mail.send', 'queue', 'email', 'concurrencyKey', 'smtp'),
           jsonb_build_object('type', 'payment.capture', 'queue', 'payments',
                              'priority', CASE WHEN i = 53 THEN 10 ELSE 0 END,
                              'concurrencyKey', 'merchant-7')))
    FROM generate_series(50, 53) i) a;
\echo '   the payments pool: the urgent order-53 first; the merchant limit lets one run'
SELECT jsonb_path_query_array(r, '$.claims[*].sessionId') AS payments_pool,
       jsonb_path_query_array(r, '$.claims[*].events[*].queue') AS queues
  FROM a2_claim_next('payments-worker', 30000, 10, NULL, '{payments}') r;
\echo '   the email pool never sees payments; the rate limit lets two sends start'
SELECT jsonb_path_query_array(r, '$.claims[*].sessionId') AS email_pool, r->>'retryAt' AS retry_at
  FROM a2_claim_next('email-worker', 30000, 10, NULL, '{email}') r;
SELECT queue, paused, available, leased, keys_at_limit FROM a2_list_queues()
 WHERE queue IN ('email', 'payments');
SELECT key, max_leased, leased, rate_max, rate_per_ms, claims_in_window, at_limit FROM a2_list_limits();
\echo '   a second later two more sends may start; the email queue is then paused'
\o /dev/null
SET a2.now = '2026-01-02T09:00:01.000Z';
\o
SELECT jsonb_path_query_array(r, '$.claims[*].sessionId') AS email_pool
  FROM a2_claim_next('email-worker', 30000, 10, NULL, '{email}') r;
SELECT a2_pause_queue('email') AS paused;
\echo '   the payment finishes: the merchant slot frees, the next payment runs'
SELECT a2_complete('order-53', 2, 1, '[]')->>'outcome' AS completed;
SELECT jsonb_path_query_array(r, '$.claims[*].sessionId') AS payments_pool
  FROM a2_claim_next('payments-worker', 30000, 10, NULL, '{payments}') r;
SELECT a2_resume_queue('email') - 'queue' AS resumed;
\echo '== 24. Durable waits: "continue when payment.confirmed arrives, or in an hour"'
\o /dev/null
SET a2.now = '2026-01-03T14:00:00.000Z';
\o
\echo '   order-61 waits for its payment; order-62 waits for one that never comes'
SELECT e->>'sessionId' AS session, e->>'index' AS index, e->>'type' AS type, e->'waitFor' AS wait_for
  FROM (SELECT a2_append('order-61', '[{"id": "o61-ship", "type": "order.ship", "waitFor": {"types": ["payment.confirmed", "payment.failed"], "timeoutMs": 3600000}}]')
        UNION ALL
        SELECT a2_append('order-62', '[{"id": "o62-ship", "type": "order.ship", "waitFor": {"types": ["payment.confirmed", "payment.failed"], "timeoutMs": 3600000}}]')) a(r),
       jsonb_array_elements(a.r->'events') e;
\echo '   nothing to claim yet: busy until the timeout'
SELECT r->>'outcome' AS outcome, r->>'retryAt' AS retry_at FROM a2_claim('order-61', 'worker-1', 30000) r;
\o /dev/null
SET a2.now = '2026-01-03T14:20:00.000Z';
\o
\echo '   at 14:20 the payment of order-61 arrives: the same transaction ends its wait'
SELECT e->>'index' AS index, e->>'type' AS type
  FROM jsonb_array_elements(a2_append('order-61', '[{"id": "o61-paid", "type": "payment.confirmed", "payload": {"amount": 12}}]')->'events') e;
SELECT e->>'index' AS index, e->>'type' AS type, e->'waitResult' AS wait_result
  FROM jsonb_array_elements(a2_claim('order-61', 'worker-1', 30000)->'events') e;
\echo '   order-62 is still waiting at 14:59:59.999'
\o /dev/null
SET a2.now = '2026-01-03T14:59:59.999Z';
\o
SELECT r->>'outcome' AS outcome, r->>'retryAt' AS retry_at FROM a2_claim('order-62', 'worker-1', 30000) r;
\o /dev/null
SET a2.now = '2026-01-03T15:00:00.000Z';
\o
\echo '   at 15:00 its wait times out, and the claim says so'
SELECT e->>'index' AS index, e->>'type' AS type, e->'waitResult' AS wait_result
  FROM jsonb_array_elements(a2_claim('order-62', 'worker-1', 30000)->'events') e;
\echo '   a handler can return a waiting event too: "continue when the courier confirms"'
SELECT r->>'outcome' AS outcome, r->'events'->0->>'type' AS returned, r->'events'->0->'waitFor' AS wait_for
  FROM a2_complete('order-61', 1, 1,
         '[{"id": "o61-handover", "type": "order.handover", "waitFor": {"types": ["courier.confirmed"]}}]') r;
