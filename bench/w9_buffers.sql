-- Buffers one a2_claim_next call touches (EXPLAIN BUFFERS counts the
-- statements the function runs through SPI too), next to one B9 claim, in
-- a W9 database; rolled back.  Deterministic where TPS on a shared machine
-- is not:  psql -X -f bench/w9_buffers.sql a2w9_<n>
\pset footer off
BEGIN;
SELECT count(*) AS pending_sessions FROM a2_events WHERE processed_at IS NULL;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim_next('probe', 30000);
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim_next('probe', 30000);
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim_next('probe', 30000, 10);
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)
WITH now_ms AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t),
c AS (
	SELECT e.session_id, e.idx FROM b9_events e, now_ms
	 WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL
	   AND COALESCE(e.claim_expires_at, e.created_at) <= now_ms.t
	 ORDER BY COALESCE(e.claim_expires_at, e.created_at)
	 LIMIT 1 FOR UPDATE OF e SKIP LOCKED)
UPDATE b9_events e SET attempt_count = e.attempt_count + 1,
	   first_claimed_at = COALESCE(e.first_claimed_at, now_ms.t), last_claimed_at = now_ms.t,
	   claim_holder = 'b9', claim_expires_at = now_ms.t + 30000
  FROM c, now_ms
 WHERE e.session_id = c.session_id AND e.idx = c.idx;
ROLLBACK;
