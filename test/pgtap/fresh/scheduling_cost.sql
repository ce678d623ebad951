-- scheduling_cost.sql: a2_claim_next costs the same however much work is
-- scheduled for later (SPEC 7.1; River #785 is the failure this guards).
--
-- a2_claim_next reads a2_events_default_available from its oldest entry and stops
-- at now; scheduled work is keyed by its due time, at the index's far end.
-- The same call (3 sessions claimed) fetches the same number of rows, with
-- no sequential scan, with no scheduled event, with 100,000 and with
-- 1,000,000 events due tomorrow, and its buffers grow only with index
-- depth (flat within 1.2x from 100,000 to 1,000,000), on a table that
-- holds 1,000,000 finished events either way
-- (pg_stat_xact_user_tables and EXPLAIN's buffer counts of the call, after
-- ANALYZE, as claim_next.sql does; each measured call follows a warm-up
-- call, so planning is not counted).  A fresh database: no dead index
-- entries of other tests' rows in the walk.
BEGIN;
SELECT plan(5);

-- Keep autovacuum off the table for this transaction (the lock the ALTER
-- holds until the end does): an auto-analyze of the uncommitted rows would
-- change the statistics between the two measurements, and with them the
-- plans (it did: 76 buffers in one run, 124 in another).
ALTER TABLE a2_events SET (autovacuum_enabled = off);
-- ANALYZE samples 300 x this many rows: more than the table holds, so it
-- reads every row and the statistics -- hence the plans and the buffers
-- they touch -- are the same in every run (a sample of 30,000 rows gave
-- plans touching 76, 80 or 124 buffers for the same call).
SET LOCAL default_statistics_target = 10000;

SELECT set_config('a2.now', '2026-10-02 00:00:00+00', true);
SELECT count(a2_append(format('cn-%s', i), '[{"type":"job"}]')) FROM generate_series(1, 100) i;
-- 1,000,000 finished events, so that both measurements plan and descend
-- indexes as on a table with history: only the scheduled work differs
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready, processed_at)
SELECT format('done-%s', s), i, 'old', 'null', format('done-%s-%s', s, i), 1790812800000, false, 1790812800000
  FROM generate_series(1, 100000) s, generate_series(1, 10) i;
ANALYZE a2_events;

CREATE FUNCTION pg_temp.cost_of_claim_next() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	s0 bigint;
	f0 bigint;
	s1 bigint;
	f1 bigint;
	r jsonb;
BEGIN
	-- warm: the first call after ANALYZE plans every statement again
	PERFORM a2_claim_next('cost', 60000, 3);
	SELECT seq_scan, idx_tup_fetch INTO s0, f0 FROM pg_stat_xact_user_tables
	 WHERE relid = 'a2_events'::regclass;
	r := a2_claim_next('cost', 60000, 3);
	SELECT seq_scan, idx_tup_fetch INTO s1, f1 FROM pg_stat_xact_user_tables
	 WHERE relid = 'a2_events'::regclass;
	RETURN format('claimed %s, seq scans %s, rows fetched %s',
				  jsonb_array_length(r -> 'claims'), s1 - s0, f1 - f0);
END
$$;
-- buffers (shared hit + read) of one call, the same way
CREATE FUNCTION pg_temp.buffers_of_claim_next() RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
	plan json;
BEGIN
	EXECUTE 'EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT a2_claim_next(''cost'', 60000, 3)' INTO plan;
	RETURN (plan -> 0 -> 'Plan' ->> 'Shared Hit Blocks')::bigint
		 + (plan -> 0 -> 'Plan' ->> 'Shared Read Blocks')::bigint;
END
$$;
CREATE TEMP TABLE costs (label text, cost text, buffers bigint) ON COMMIT DROP;
INSERT INTO costs SELECT 'none scheduled', pg_temp.cost_of_claim_next(), pg_temp.buffers_of_claim_next();

-- Scheduled events, all due tomorrow, written directly (the rows a2_append
-- would write, without the calls): first 100,000 in 10,000 sessions, then
-- 900,000 more.
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready, not_before)
SELECT format('later-%s', s), i, 'job', 'null', format('later-%s-%s', s, i),
	   1790899200000, true, 1790985600000 + s
  FROM generate_series(1, 10000) s, generate_series(1, 10) i;
ANALYZE a2_events;
INSERT INTO costs SELECT '100,000 scheduled', pg_temp.cost_of_claim_next(), pg_temp.buffers_of_claim_next();
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready, not_before)
SELECT format('later-%s', s), i, 'job', 'null', format('later-%s-%s', s, i),
	   1790899200000, true, 1790985600000 + s
  FROM generate_series(10001, 100000) s, generate_series(1, 10) i;
ANALYZE a2_events;
SELECT is((SELECT scheduled_events FROM a2_metrics()), 1000000::bigint, '1,000,000 events are scheduled');
INSERT INTO costs SELECT 'a million scheduled', pg_temp.cost_of_claim_next(), pg_temp.buffers_of_claim_next();

-- 7 rows: the walk's and the claims' (a claim updates the rows it locked
-- directly, docs/internals.md "Direct writes", instead of fetching them
-- again by primary key: 10 with a2.direct_writes off).
SELECT is((SELECT cost FROM costs WHERE label = 'none scheduled'), 'claimed 3, seq scans 0, rows fetched 7',
	'claim_next with nothing scheduled: ' || (SELECT cost FROM costs WHERE label = 'none scheduled'));
SELECT is((SELECT cost FROM costs WHERE label = 'a million scheduled'),
		  (SELECT cost FROM costs WHERE label = 'none scheduled'),
	'claim_next fetches the same rows with 1,000,000 events scheduled for later: '
	|| (SELECT cost FROM costs WHERE label = 'a million scheduled'));
-- Buffers: a walk over scheduled work would touch thousands.  What does
-- grow is the depth of the btrees each statement descends (and the claim's
-- UPDATE inserts into): the partial indexes of unprocessed events go from
-- one level with 100 entries to three with 100,000 -- and stay at three
-- up to 1,000,000, where the cost must then be flat.
SELECT cmp_ok((SELECT buffers FROM costs WHERE label = 'a million scheduled')::numeric,
	'<=', 1.2 * (SELECT buffers FROM costs WHERE label = '100,000 scheduled'),
	format('buffers per call: %s with nothing scheduled, %s with 100,000, %s with 1,000,000 (at most 1.2x from 100,000 to 1,000,000)',
		   (SELECT buffers FROM costs WHERE label = 'none scheduled'),
		   (SELECT buffers FROM costs WHERE label = '100,000 scheduled'),
		   (SELECT buffers FROM costs WHERE label = 'a million scheduled')));
SELECT is(a2_claim_next('cost', 60000, 1) ->> 'retryAt', '2026-10-02T00:01:00.000Z',
	'its retryAt is still the nearest lease expiry, not a scheduled event');

SELECT * FROM finish();
ROLLBACK;
