-- B2, the ceiling for W4: the minimal plain SQL of one work cycle on
-- bench_events, three transactions: insert the event; lease it with one
-- UPDATE ... RETURNING (the claim's eligibility test); insert the settled
-- child and mark the parent processed in one statement.
INSERT INTO bench_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
VALUES (:prefix::text || :client_id, nextval('bench_idx'), 'job', '{"n": 1}',
		bench_uuid7(), (extract(epoch FROM clock_timestamp()) * 1000)::bigint, true);
UPDATE bench_events e
   SET attempt_count = e.attempt_count + 1,
	   first_claimed_at = COALESCE(e.first_claimed_at, n.ms), last_claimed_at = n.ms,
	   claim_holder = 'bench', claim_expires_at = n.ms + 30000
  FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms) n
 WHERE e.session_id = :prefix::text || :client_id
   AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.lane_ready
   AND (e.claim_expires_at IS NULL OR e.claim_expires_at <= n.ms)
RETURNING e.idx, e.attempt_count AS att \gset
WITH n AS (
	SELECT :prefix::text || :client_id AS s, (extract(epoch FROM clock_timestamp()) * 1000)::bigint AS ms
), child AS (
	INSERT INTO bench_events (session_id, idx, event_type, payload, event_id, created_at,
							  cause, lane_ready, processed_at)
	SELECT n.s, nextval('bench_idx'), 'done', '{"n": 2}', n.s || '/' || :idx || '/done', n.ms,
		   jsonb_build_object('index', :idx::bigint, 'attempt', :att::integer), true, n.ms
	  FROM n
	RETURNING event_id, created_at
)
UPDATE bench_events e
   SET processed_at = child.created_at, processed_by_attempt = :att::integer,
	   returned_event_ids = jsonb_build_array(child.event_id), lane_ready = false,
	   claim_holder = NULL, claim_expires_at = NULL
  FROM child
 WHERE e.session_id = :prefix::text || :client_id AND e.idx = :idx::bigint;
