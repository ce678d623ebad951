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
ROLLBACK;
