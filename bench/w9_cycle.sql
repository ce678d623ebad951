-- W9: a fleet worker loop.  a2_claim_next finds and leases the oldest
-- available session (whichever it is), then a2_complete finishes the
-- claimed event returning one unsettled follow-up event, so every session
-- keeps exactly one pending event and the number of sessions with work
-- stays constant.  Two transactions (each statement autocommits).
SELECT c->>'sessionId' AS sid, c->'events'->0->>'index' AS idx,
	   c->'events'->0->>'attemptCount' AS att
  FROM a2_claim_next('w9', 30000) r, jsonb_array_elements(r->'claims') c \gset
SELECT a2_complete(:sid::text, :idx::bigint, :att::integer,
	jsonb_build_array(jsonb_build_object(
		'id', :sid::text || '/' || (:idx::bigint + 1), 'type', 'job', 'payload', '{"n": 1}'::jsonb)));
