--
-- claim_next: a2_claim_next(holder, ttl_ms, max_sessions = 1, expires_at = NULL)
-- claims the eligible work of the sessions whose work became available
-- first (lease expiry, else creation time), by a2_claim's rule.
--
-- a2_claim_next looks at every session, so this file runs in one
-- transaction that starts from an empty a2_events and rolls back at the
-- end, leaving the other files' rows alone.
--
\set VERBOSITY terse

-- claims(result): "session:index@attempt ..." per claimed session, then
-- the retryAt
CREATE FUNCTION pg_temp.claims(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE((SELECT string_agg(c ->> 'sessionId' || ':' ||
                          (SELECT string_agg((e ->> 'index') || '@' || (e ->> 'attemptCount'), ',' ORDER BY eo)
                             FROM jsonb_array_elements(c -> 'events') WITH ORDINALITY AS y(e, eo)),
                          ' ' ORDER BY co)
                    FROM jsonb_array_elements(j -> 'claims') WITH ORDINALITY AS x(c, co)), '-')
         || ' retry ' || COALESCE(j ->> 'retryAt', 'null')
$$;

BEGIN;
DELETE FROM a2_events;

-- Nothing anywhere: no claims, nothing leased.
SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SELECT a2_claim_next('w1', 60000);

--
-- The log.  Creation times are one second apart, so cn-a's work is the
-- oldest:
--   cn-a  1 (no lane), 2 and 3 in lane L (3 waits behind 2)
--   cn-b  1
--   cn-c  1 settled, 2 dead-lettered below
--   cn-d  1, leased by a2_claim for 10 s
--
SELECT a2_append('cn-a', '[{"id": "cn-a-1", "type": "job"},
                           {"id": "cn-a-2", "type": "job", "lane": "L"},
                           {"id": "cn-a-3", "type": "job", "lane": "L"}]') -> 'hasPending' AS pending;
SET LOCAL a2.now = '2026-03-01 00:00:01+00';
SELECT a2_append('cn-b', '[{"id": "cn-b-1", "type": "job"}]') -> 'hasPending' AS pending;
SET LOCAL a2.now = '2026-03-01 00:00:02+00';
SELECT a2_append('cn-c', '[{"id": "cn-c-1", "type": "note", "settled": true},
                           {"id": "cn-c-2", "type": "job"}]') -> 'hasPending' AS pending;
SELECT a2_claim('cn-c', 'w0', 60000) -> 'outcome' AS claim;
SELECT a2_fail('cn-c', 2, 1, 'poison', 1) ->> 'outcome' AS fail;
SET LOCAL a2.now = '2026-03-01 00:00:03+00';
SELECT a2_append('cn-d', '[{"id": "cn-d-1", "type": "job"}]') -> 'hasPending' AS pending;
SELECT a2_claim('cn-d', 'w0', 10000) ->> 'outcome' AS claim;

--
-- 1. Oldest first, one session per call by default.  cn-a comes first and
-- gives both of its lane-ready events (3 is behind 2 in lane L); the
-- retryAt is the earliest live lease, cn-d's (00:00:13).
--
SET LOCAL a2.now = '2026-03-01 00:00:10+00';
SELECT pg_temp.claims(a2_claim_next('w1', 60000));
-- Each claimed event got exactly what a2_claim gives it.
SELECT idx, attempt_count, claim_holder,
       to_timestamp(first_claimed_at / 1000.0) AT TIME ZONE 'UTC' AS first_claimed,
       to_timestamp(claim_expires_at / 1000.0) AT TIME ZONE 'UTC' AS expires
  FROM a2_events WHERE session_id = 'cn-a' ORDER BY idx;

--
-- 2. max_sessions: cn-b is next; cn-c's only unprocessed event is
-- dead-lettered and cn-d's is leased, so nothing else is eligible.  The
-- result's keys, and each claimed event is the StoredEvent a2_read
-- returns after the claim.
--
CREATE TEMP TABLE cn_result AS SELECT a2_claim_next('w1', 60000, 10) AS j;
SELECT pg_temp.claims(j),
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(j) k) AS keys,
       (SELECT array_agg(k ORDER BY k) FROM jsonb_object_keys(j -> 'claims' -> 0) k) AS claim_keys,
       j -> 'claims' -> 0 -> 'events' = a2_read('cn-b') AS same_as_read
  FROM cn_result;
SELECT pg_temp.claims(a2_claim_next('w2', 60000, 10));

--
-- 3. An expired lease (cn-d's, at 00:00:13) is claimable again: attempt 2.
-- Expiry exactly at now counts as expired, as for a2_claim.
--
SET LOCAL a2.now = '2026-03-01 00:00:13+00';
SELECT pg_temp.claims(a2_claim_next('w2', 5000, 10));

--
-- 4. Lane promotion.  cn-e gets new work at 00:00:14; then completing
-- cn-a 2 makes cn-a 3 lane-ready.  cn-a 3 was created at 00:00:00, so it
-- is older than cn-e's work and comes first.
--
SET LOCAL a2.now = '2026-03-01 00:00:14+00';
SELECT a2_append('cn-e', '[{"id": "cn-e-1", "type": "job"}]') -> 'hasPending' AS pending;
SELECT a2_complete('cn-a', 2, 1) ->> 'outcome' AS complete;
SELECT pg_temp.claims(a2_claim_next('w3', 60000));
SELECT pg_temp.claims(a2_claim_next('w3', 60000));

--
-- 5. A redriven dead letter is claimable at once (attempt 2), and its
-- availability is its creation time, the oldest there is.
--
SELECT a2_append('cn-f', '[{"id": "cn-f-1", "type": "job"}]') -> 'hasPending' AS pending;
SELECT a2_redrive('cn-c', 2) ->> 'outcome' AS redrive;
SELECT pg_temp.claims(a2_claim_next('w3', 60000));
SELECT pg_temp.claims(a2_claim_next('w3', 60000));

--
-- 6. expires_at replaces now + ttl_ms; retryAt includes the leases the
-- call just took (the earliest one is cn-g's own).
--
SELECT a2_append('cn-g', '[{"id": "cn-g-1", "type": "job"}]') -> 'hasPending' AS pending;
SELECT pg_temp.claims(a2_claim_next('w4', 0, 1, '2026-03-01 00:00:15+00'));

--
-- 7. Nothing leased: retryAt is null.  Complete everything that is held.
--
SELECT session_id, idx, a2_complete(session_id, idx, attempt_count) ->> 'outcome' AS complete
  FROM a2_events WHERE claim_holder IS NOT NULL ORDER BY session_id, idx;
SELECT a2_claim_next('w5', 60000, 100);

--
-- 8. Each step of the walk is an index probe of a2_events_default_available
-- bounded by now (the session lock is then tried; the probe locks no row):
-- the same statement as claim_next.c's, planned generically as the C code
-- plans it.  An unleased event is available once due (SPEC 7.1).  Since
-- 0.4.0 the index holds the default queue's priority-0 work (queue and
-- priority NULL; sql/queues.sql walks the other queues).
--
SET LOCAL plan_cache_mode = force_generic_plan;
PREPARE walk(bigint, bigint, text) AS
  SELECT e.session_id, COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at))
    FROM a2_events e
   WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL
     AND e.queue IS NULL AND e.priority IS NULL
     AND COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)) <= $1
     AND (COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)), e.session_id) > ($2, $3)
   ORDER BY COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)), e.session_id
   LIMIT 1;
EXPLAIN (COSTS OFF) EXECUTE walk(0, 0, '');
DEALLOCATE walk;
ROLLBACK;

--
-- 9. Bad arguments (SQLSTATEs of SPEC section 5); nothing is claimed.
--
SELECT a2_claim_next(NULL, 60000);
SELECT a2_claim_next('', 60000);
SELECT a2_claim_next('w', NULL);
SELECT a2_claim_next('w', -1);
SELECT a2_claim_next('w', 60000, NULL);
SELECT a2_claim_next('w', 60000, 0);
SELECT a2_claim_next('w', 60000, 10001);
SELECT a2_claim_next('w', 60000, 1, 'infinity');
SELECT a2_claim_next('w', 9223372036854775807);
