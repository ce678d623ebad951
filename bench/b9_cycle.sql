-- B9: the same loop the pgmq way, on b9_events, a table of a2_events'
-- shape with all of its indexes (CREATE TABLE ... (LIKE a2_events
-- INCLUDING ALL)): one FOR UPDATE SKIP LOCKED ... LIMIT 1 statement takes
-- the oldest available row and leases it, then one transaction marks it
-- processed (fenced by attempt) and inserts the follow-up event.  No
-- per-session rule, no JSON, no lanes: the floor a2_claim_next is
-- compared with.  Its claim is the copy of a2_events_default_available's
-- shape (key COALESCE(claim_expires_at, GREATEST(not_before, created_at)),
-- default queue, no priority), so it reads that index; from the 0.3.0
-- index change until 2026-12-04 it named the older key and read the
-- table instead (about 1,400 buffers per claim at 1,000 sessions).
WITH now_ms AS (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS t),
c AS (
	SELECT e.session_id, e.idx FROM b9_events e, now_ms
	 WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL
	   AND e.queue IS NULL AND e.priority IS NULL
	   AND COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)) <= now_ms.t
	 ORDER BY COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at))
	 LIMIT 1 FOR UPDATE OF e SKIP LOCKED)
UPDATE b9_events e SET attempt_count = e.attempt_count + 1,
	   first_claimed_at = COALESCE(e.first_claimed_at, now_ms.t), last_claimed_at = now_ms.t,
	   claim_holder = 'b9', claim_expires_at = now_ms.t + 30000
  FROM c, now_ms
 WHERE e.session_id = c.session_id AND e.idx = c.idx
RETURNING e.session_id AS sid, e.idx AS idx, e.attempt_count AS att \gset
BEGIN;
UPDATE b9_events e SET processed_at = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
	   processed_by_attempt = :att::integer,
	   returned_event_ids = jsonb_build_array(:sid::text || '/' || (:idx::bigint + 1)),
	   lane_ready = false, claim_holder = NULL, claim_expires_at = NULL
 WHERE e.session_id = :sid::text AND e.idx = :idx::bigint AND e.attempt_count = :att::integer
   AND e.processed_at IS NULL;
INSERT INTO b9_events (session_id, idx, event_type, payload, event_id, created_at, cause, lane_ready)
VALUES (:sid::text, :idx::bigint + 1, 'job', '{"n": 1}', :sid::text || '/' || (:idx::bigint + 1),
		(extract(epoch FROM clock_timestamp()) * 1000)::bigint,
		jsonb_build_object('index', :idx::bigint, 'attempt', :att::integer), true);
COMMIT;
