-- scheduling.sql: SPEC 7.1's retryAt in every case, and the flat cost of
-- a2_claim_next however much work is scheduled for later.
--
-- retryAt: busy is returned when the session has an unfinished, lane-ready
-- event that is leased or not yet due; retryAt is the earliest of its live
-- lease expiries and future not_before values; settled only when there is
-- no such event.  Each case below builds one session and checks the exact
-- answer.
--
-- The cost of a2_claim_next with scheduled work: fresh/scheduling_cost.sql.
BEGIN;
SELECT plan(11);

DELETE FROM a2_events;
SELECT set_config('a2.now', '2026-10-01 00:00:00+00', true);

CREATE FUNCTION pg_temp.answer(r jsonb) RETURNS text LANGUAGE sql AS $$
	SELECT CASE r ->> 'outcome' WHEN 'busy' THEN 'busy ' || (r ->> 'retryAt')
		   WHEN 'claimed' THEN 'claimed ' || jsonb_path_query_array(r, '$.events[*].index')::text
		   ELSE r ->> 'outcome' END
$$;

-- (a) only a live lease: its expiry
SELECT a2_append('ra-a', '[{"type":"x"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-a', 'w', 60000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-a', 'w', 1000)), 'busy 2026-10-01T00:01:00.000Z',
	'only leased: retryAt is the lease expiry');

-- (b) only scheduled: the due time
SELECT a2_append('ra-b', '[{"type":"x","notBefore":"2026-10-01T00:05:00Z"},{"type":"y","notBefore":"2026-10-01T00:03:00Z"}]') IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-b', 'w', 1000)), 'busy 2026-10-01T00:03:00.000Z',
	'only scheduled: retryAt is the earliest due time');

-- (c) both: the earlier of the two
SELECT a2_append('ra-c', '[{"type":"x"},{"type":"y","notBefore":"2026-10-01T00:00:30Z"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-c', 'w', 60000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-c', 'w', 1000)), 'busy 2026-10-01T00:00:30.000Z',
	'leased and scheduled: the due time when it is earlier');
SELECT a2_append('ra-c2', '[{"type":"x"},{"type":"y","notBefore":"2026-10-01T00:09:00Z"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-c2', 'w', 60000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-c2', 'w', 1000)), 'busy 2026-10-01T00:01:00.000Z',
	'leased and scheduled: the lease expiry when it is earlier');

-- (d) one event both leased and not yet due (a clock set back): claimable
-- only when both have passed, the later of the two
SELECT a2_append('ra-d', '[{"type":"x"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-d', 'w', 60000) IS NOT NULL \g /dev/null
UPDATE a2_events SET not_before = 1790812920000 WHERE session_id = 'ra-d';  -- 2026-10-01 00:02
SELECT is(pg_temp.answer(a2_claim('ra-d', 'w', 1000)), 'busy 2026-10-01T00:02:00.000Z',
	'leased and not yet due: the later of lease expiry and due time');

-- (e) a scheduled event behind a leased lane head is not lane-ready: only
-- the head's lease counts
SELECT a2_append('ra-e', '[{"type":"x","lane":"L"},{"type":"y","lane":"L","notBefore":"2026-10-01T00:00:10Z"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-e', 'w', 60000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-e', 'w', 1000)), 'busy 2026-10-01T00:01:00.000Z',
	'a scheduled event waiting behind its lane does not count');

-- (f) a dead-lettered event that was backing off: settled
SELECT a2_append('ra-f', '[{"type":"x"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-f', 'w', 60000) IS NOT NULL \g /dev/null
SELECT a2_fail('ra-f', 1, 1, 'e', 1, 600000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-f', 'w', 1000)), 'settled', 'dead letters never make a session busy');

-- (g) processed scheduled work: settled
SELECT a2_append('ra-g', '[{"type":"x","notBefore":"2026-09-01T00:00:00Z","settled":true}]') IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-g', 'w', 1000)), 'settled', 'a settled event with a due time is finished');

-- (h) due exactly now: claimed, not busy
SELECT a2_append('ra-h', '[{"type":"x","notBefore":"2026-10-01T00:00:00Z"}]') IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-h', 'w', 3600000)), 'claimed [1]', 'due exactly now: claimed');

-- (i) a backed-off failure: busy until the backoff ends
SELECT a2_append('ra-i', '[{"type":"x"}]') IS NOT NULL \g /dev/null
SELECT a2_claim('ra-i', 'w', 60000) IS NOT NULL \g /dev/null
SELECT a2_fail('ra-i', 1, 1, 'e', 5, 45000) IS NOT NULL \g /dev/null
SELECT is(pg_temp.answer(a2_claim('ra-i', 'w', 1000)), 'busy 2026-10-01T00:00:45.000Z',
	'backoff: busy until now + retry_after_ms');

-- (j) claim_next's retryAt: the earliest over every session: it leases
-- what is eligible for an hour, so here ra-c's due time 00:00:30 comes
-- before ra-i's backoff (00:00:45) and every lease
SELECT is(a2_claim_next('w', 3600000, 100) ->> 'retryAt', '2026-10-01T00:00:30.000Z',
	'claim_next: retryAt is the earliest lease expiry or due time of all sessions');

SELECT * FROM finish();
ROLLBACK;
