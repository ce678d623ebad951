-- Soak: one claim/complete cycle on a random one of :sessions sessions, in
-- three autocommitted statements (one client per database, so the claim
-- always finds the event just appended).
\set s random(1, :sessions)
SELECT a2_append('soak-' || :s, '[{"type": "job", "payload": {"n": 1}}]');
SELECT c->'events'->0->>'index' AS idx, c->'events'->0->>'attemptCount' AS att
  FROM a2_claim('soak-' || :s, 'soak', 30000) AS c \gset
SELECT a2_complete('soak-' || :s, :idx::bigint, :att::integer,
	jsonb_build_array(jsonb_build_object('id', 'soak-' || :s || '/' || :idx || '/done',
		'type', 'done', 'payload', '{"n": 2}'::jsonb, 'settled', true)));
