--
-- claim: a2_claim(session_id, holder, ttl_ms, expires_at, exclude_indexes)
-- (SPEC sections 3, 4 "claim")
--
\set VERBOSITY terse
SET a2.now = '2026-03-01 00:00:00+00';

-- cl(result): the claimed events of a claim result as rows
CREATE FUNCTION pg_temp.cl(j jsonb)
RETURNS TABLE (index bigint, attempt_count int, first_claimed_at text,
			   last_claimed_at text, claim_holder text, claim_expires_at text)
LANGUAGE sql AS $$
  SELECT * FROM jsonb_to_recordset(j -> 'events')
    AS e("index" bigint, "attemptCount" int, "firstClaimedAt" text,
         "lastClaimedAt" text, "claimHolder" text, "claimExpiresAt" text)
$$;

-- the lease columns as stored, for one session
CREATE FUNCTION pg_temp.leases(s text)
RETURNS TABLE (idx bigint, lane text, lane_ready boolean, processed boolean,
			   dead boolean, attempt_count int, claim_holder text,
			   claim_expires_at text)
LANGUAGE sql AS $$
  SELECT e.idx, e.lane, e.lane_ready, e.processed_at IS NOT NULL,
         e.failed_at IS NOT NULL, e.attempt_count, e.claim_holder,
         to_char(to_timestamp(e.claim_expires_at / 1000.0) AT TIME ZONE 'UTC',
                 'HH24:MI:SS.MS')
    FROM a2_events e WHERE e.session_id = s ORDER BY e.idx
$$;

-- nothing in the session: settled
SELECT a2_claim('claim-a', 'w1', 30000);

-- 1 and 4 have no lane, 2 heads lane x, 3 waits behind 2, 5 is settled
SELECT a2_append('claim-a', '[
  {"id": "claim-a-1", "type": "t"},
  {"id": "claim-a-2", "type": "t", "lane": "x"},
  {"id": "claim-a-3", "type": "t", "lane": "x"},
  {"id": "claim-a-4", "type": "t"},
  {"id": "claim-a-5", "type": "t", "settled": true}
]') -> 'hasPending' AS has_pending;
-- an event of another session is never claimed by this one
SELECT a2_append('claim-other', '[{"id": "claim-other-1", "type": "t"}]') -> 'hasPending' AS has_pending;

--
-- one call claims every eligible event, returned by index: attempt + 1,
-- first and last claimed now, lease to the holder until now + ttl_ms
--
SELECT a2_claim('claim-a', 'w1', 30000) AS r \gset
SELECT :'r'::jsonb ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.cl(:'r');
-- claimed events are full StoredEvents
SELECT string_agg(k, ', ' ORDER BY k) AS keys
  FROM jsonb_object_keys(:'r'::jsonb -> 'events' -> 0) k;
SELECT * FROM pg_temp.leases('claim-a');
SELECT * FROM pg_temp.leases('claim-other');

--
-- nothing eligible while leases are live: busy, retry at the earliest
-- live lease expiry
--
SELECT a2_claim('claim-a', 'w2', 30000);

SET a2.now = '2026-03-01 00:00:10+00';
SELECT a2_append('claim-a', '[{"id": "claim-a-6", "type": "t"}]') -> 'hasPending' AS has_pending;
-- only the new event is eligible; the leased ones are skipped
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w2', 30000));
SELECT a2_claim('claim-a', 'w3', 30000);

--
-- exclude_indexes skips events, but their live leases still count for
-- retryAt: with the leases of 1, 2 and 4 (00:00:30) excluded, the retry
-- is still 00:00:30, not 6's 00:00:40
--
SELECT a2_claim('claim-a', 'w3', 30000, exclude_indexes => '{1,2,4}');
SELECT a2_append('claim-a', '[{"id": "claim-a-7", "type": "t"}]') -> 'hasPending' AS has_pending;
-- 7 is eligible but excluded: busy
SELECT a2_claim('claim-a', 'w3', 30000, exclude_indexes => '{7}');
-- NULL means no exclusions
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w3', 30000, NULL, NULL));

--
-- a lease is live while claim_expires_at > now: one millisecond before
-- expiry it still blocks, at expiry the event is claimable again; the
-- attempt grows, firstClaimedAt stays, the lease moves to the new holder
--
SET a2.now = '2026-03-01 00:00:29.999+00';
SELECT a2_claim('claim-a', 'w4', 30000);
SET a2.now = '2026-03-01 00:00:30+00';
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w4', 30000));
SELECT * FROM pg_temp.leases('claim-a');

--
-- lane-blocked: 3 is never claimed while 2 is unprocessed, even with
-- every lease expired; completing 2 makes 3 claimable
--
SET a2.now = '2026-03-01 00:10:00+00';
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w5', 30000));
SELECT a2_complete('claim-a', 2, 3) ->> 'outcome' AS outcome;
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w5', 30000));

--
-- processed and dead-lettered events are never claimed
--
SELECT a2_complete('claim-a', 1, 3) ->> 'outcome' AS outcome;
SELECT a2_fail('claim-a', 4, 3, 'broken', 1) ->> 'outcome' AS outcome;
SET a2.now = '2026-03-01 01:00:00+00';
SELECT * FROM pg_temp.cl(a2_claim('claim-a', 'w6', 30000));
SELECT * FROM pg_temp.leases('claim-a');

--
-- settled once nothing is eligible and no lease is live, although the
-- dead-lettered 4 is still unprocessed
--
SELECT a2_complete('claim-a', 3, 2) ->> 'outcome' AS outcome;
SELECT a2_complete('claim-a', 6, 3) ->> 'outcome' AS outcome;
SELECT a2_complete('claim-a', 7, 3) ->> 'outcome' AS outcome;
SELECT a2_claim('claim-a', 'w6', 30000);
SELECT a2_append('claim-a', '[]') -> 'hasPending' AS has_pending;

-- only leases of unprocessed, not dead-lettered, lane-ready events make a
-- claimer busy: give the processed 1, the dead-lettered 4 and a
-- lane-blocked event live leases by hand; the session is still settled
SELECT a2_append('claim-a', '[
  {"id": "claim-a-8", "type": "t", "lane": "y"},
  {"id": "claim-a-9", "type": "t", "lane": "y"}
]') -> 'hasPending' AS has_pending;
UPDATE a2_events SET claim_holder = 'ghost', claim_expires_at = 1772330400000 -- 02:00
 WHERE session_id = 'claim-a' AND idx IN (1, 4, 9);
SELECT a2_claim('claim-a', 'w6', 30000, exclude_indexes => '{8}');
-- the same lease on the lane head does count
UPDATE a2_events SET claim_holder = 'ghost', claim_expires_at = 1772330400000
 WHERE session_id = 'claim-a' AND idx = 8;
SELECT a2_claim('claim-a', 'w6', 30000);
SELECT * FROM pg_temp.leases('claim-a') WHERE claim_holder IS NOT NULL;

-- an event that is eligible but excluded, with no live lease: settled
SELECT a2_claim('claim-other', 'w1', 30000, exclude_indexes => '{1}');

--
-- expires_at replaces now + ttl_ms
--
SELECT a2_append('claim-e', '[{"id": "claim-e-1", "type": "t"}]') -> 'hasPending' AS has_pending;
SELECT * FROM pg_temp.cl(a2_claim('claim-e', 'w1', 1000, '2026-03-01 02:00:00+00'));
SELECT a2_claim('claim-e', 'w2', 1000);
SET a2.now = '2026-03-01 02:00:00+00';
SELECT * FROM pg_temp.cl(a2_claim('claim-e', 'w2', 1000, expires_at => '2026-03-01 03:04:05.678+01'));

-- ttl_ms 0 leases until now, which is already expired: claimable again at once
SET a2.now = '2026-03-01 03:00:00+00';
SELECT * FROM pg_temp.cl(a2_claim('claim-e', 'w3', 0));
SELECT * FROM pg_temp.cl(a2_claim('claim-e', 'w4', 0));

-- bad arguments (22023, 22004)
SELECT a2_claim('claim-e', 'w5', -1);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_claim('claim-e', 'w5', 1000, exclude_indexes => '{0}');
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT a2_claim('claim-e', NULL, 1000);
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SELECT * FROM pg_temp.leases('claim-e');
