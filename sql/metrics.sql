--
-- metrics: a2_metrics()  (issue 10)
--
-- a2_metrics() reads the whole table, so this file works inside one
-- transaction on a table emptied of the other files' rows, and rolls back.
--
\set VERBOSITY terse
BEGIN;
SET LOCAL timezone = 'UTC';
DELETE FROM a2_events;

-- an empty store: zeros, no oldest eligible event
SET LOCAL a2.now = '2026-08-01 00:00:00+00';
SELECT sessions_with_eligible_work, eligible_events, leased_events,
       expired_leases, dead_letters, lane_waiting_events,
       oldest_eligible_created_at, oldest_eligible_age_ms, measured_at
  FROM a2_metrics();
-- 0.4.0: no paused queue, no key at a limit, no queue with unprocessed events
SELECT paused_queues, keys_at_limit, queues FROM a2_metrics();

-- typed columns, for a scraper
SELECT a.name, a.type::regtype AS type
  FROM pg_proc p,
       unnest(p.proargnames, p.proallargtypes, p.proargmodes) AS a(name, type, mode)
 WHERE p.oid = 'a2_metrics()'::regprocedure AND a.mode = 'o';
SELECT p.proretset, p.prosecdef, p.provolatile
  FROM pg_proc p WHERE p.oid = 'a2_metrics()'::regprocedure;

-- met-lease: two events leased for 60 s (leased, not eligible)
SELECT a2_append('met-lease', '[{"type": "t"}, {"type": "t"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-lease', 'w', 60000) -> 'outcome' AS outcome;
-- met-lane: two events in lane q: the first eligible, the second waits
SET LOCAL a2.now = '2026-08-01 00:00:01+00';
SELECT a2_append('met-lane', '[{"type": "t", "lane": "q"}, {"type": "t", "lane": "q"}]') IS NOT NULL AS ok;
-- met-dead: one dead letter
SELECT a2_append('met-dead', '[{"type": "t"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-dead', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_fail('met-dead', 1, 1, 'boom', 1) -> 'outcome' AS outcome;
-- met-expired: a 1 s lease that runs out (eligible again, not reclaimed)
SET LOCAL a2.now = '2026-08-01 00:00:02+00';
SELECT a2_append('met-expired', '[{"type": "t"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-expired', 'w', 1000) -> 'outcome' AS outcome;
-- met-done: settled and completed events count nowhere
SELECT a2_append('met-done', '[{"type": "t", "settled": true}, {"type": "t"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-done', 'w', 1000) -> 'outcome' AS outcome;
SELECT a2_complete('met-done', 2, 1) -> 'outcome' AS outcome;

-- at +5 s: eligible are met-lane/1 and met-expired/1 (2 sessions), the
-- oldest of them was created at +1 s, so it is 4 s old
SET LOCAL a2.now = '2026-08-01 00:00:05+00';
SELECT sessions_with_eligible_work, eligible_events, leased_events,
       expired_leases, dead_letters, lane_waiting_events,
       oldest_eligible_created_at, oldest_eligible_age_ms, measured_at
  FROM a2_metrics();

-- a claim takes the expired lease back: no expired lease left
SELECT a2_claim('met-expired', 'w2', 60000) -> 'outcome' AS outcome;
SELECT eligible_events, leased_events, expired_leases FROM a2_metrics();

-- at +70 s all three leases have run out: four eligible events, three
-- of them on an expired lease
SET LOCAL a2.now = '2026-08-01 00:01:10+00';
SELECT sessions_with_eligible_work, eligible_events, leased_events, expired_leases
  FROM a2_metrics();

-- the estimates come from the statistics collector: present, not negative
SELECT events_estimate >= 0 AS live_ok, dead_rows_estimate >= 0 AS dead_ok,
       events_inserted_estimate >= 0 AS inserted_ok
  FROM a2_metrics();

-- 0.4.0: the dispatch controls (issue 27 item 7).  Without settings and
-- with every event in the default queue: no paused queue, no key at a
-- limit, one queue, whose counts are the whole store's
DELETE FROM a2_queues;
DELETE FROM a2_limits;
DELETE FROM a2_rate_claims;
SELECT paused_queues, keys_at_limit, queues FROM a2_metrics();

-- work in named queues: email has an eligible event, a scheduled one and
-- a dead letter; sms a leased event whose key smtp is at its concurrency
-- limit of 1; push an event with the key api, which has one claim in its
-- window of 1 per minute (at its rate limit), and a lane-waiting event.
-- Paused: sms (with work) and idle (without)
SET LOCAL a2.now = '2026-08-01 00:02:00+00';
SELECT a2_append('met-q1', '[{"type": "t", "queue": "email"},
                             {"type": "t", "queue": "email", "notBefore": "2026-08-01T01:00:00Z"}]') IS NOT NULL AS ok;
SELECT a2_append('met-q2', '[{"type": "t", "queue": "email"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-q2', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_fail('met-q2', 1, 1, 'boom', 1) -> 'outcome' AS outcome;
SELECT a2_set_concurrency_limit('smtp', 1) IS NOT NULL AS ok;
SELECT a2_append('met-q3', '[{"type": "t", "queue": "sms", "concurrencyKey": "smtp"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-q3', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_set_rate_limit('api', 1, 60000) IS NOT NULL AS ok;
SELECT a2_append('met-q4', '[{"type": "t", "queue": "push", "concurrencyKey": "api", "lane": "x"},
                             {"type": "t", "queue": "push", "lane": "x"}]') IS NOT NULL AS ok;
SELECT a2_claim('met-q4', 'w', 1000) -> 'outcome' AS outcome;
-- a key with a limit it does not reach is not listed
SELECT a2_set_concurrency_limit('roomy', 5) IS NOT NULL AS ok;
SELECT a2_pause_queue('sms') ->> 'paused' AS paused, a2_pause_queue('idle') ->> 'paused' AS paused;
-- at +2 min +5 s the push lease (1 s) has expired: eligible again
SET LOCAL a2.now = '2026-08-01 00:02:05+00';
SELECT paused_queues, keys_at_limit, jsonb_pretty(queues) AS queues FROM a2_metrics();
-- each count of queues sums, over the queues, to its whole-store column
SELECT bool_and(s.eligible = m.eligible_events) AS eligible,
       bool_and(s.leased = m.leased_events) AS leased,
       bool_and(s.scheduled = m.scheduled_events) AS scheduled,
       bool_and(s.lane_waiting = m.lane_waiting_events) AS lane_waiting,
       bool_and(s.dead = m.dead_letters) AS dead_letters
  FROM a2_metrics() m,
       LATERAL (SELECT sum((v ->> 'eligible')::bigint) AS eligible, sum((v ->> 'leased')::bigint) AS leased,
                       sum((v ->> 'scheduled')::bigint) AS scheduled,
                       sum((v ->> 'laneWaiting')::bigint) AS lane_waiting,
                       sum((v ->> 'deadLetters')::bigint) AS dead
                  FROM jsonb_each(m.queues) q(k, v)) s;
-- the same queues as a2_list_queues() (which counts lane-ready, live
-- events: eligible + leased there is available + leased here)
SELECT l.queue, l.paused, l.available, l.leased, l.scheduled, l.keys_at_limit
  FROM a2_list_queues() l ORDER BY l.queue;
-- the api key's window passes; the smtp lease expires: nothing at a limit
SET LOCAL a2.now = '2026-08-01 00:03:30+00';
SELECT keys_at_limit FROM a2_metrics();
-- a queue drops out of queues once its events are finished
SELECT a2_resume_queue('sms') ->> 'paused' AS paused;
SELECT a2_claim('met-q3', 'w', 60000) -> 'outcome' AS outcome;
SELECT a2_complete('met-q3', 1, 2) -> 'outcome' AS outcome;
SELECT paused_queues, queues ? 'sms' AS has_sms, queues ? 'email' AS has_email FROM a2_metrics();

-- every heap page is read once whatever the statistics say: the function
-- turns off the plain index scan (with the sequential scan), which leaves
-- the planner a bitmap scan of a2_events_unprocessed
SELECT unnest(proconfig) AS setting FROM pg_proc WHERE oid = 'a2_metrics()'::regprocedure ORDER BY 1;
ROLLBACK;
