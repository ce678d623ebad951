-- W4 (and W5 cycle): one full work cycle in three transactions (each
-- statement autocommits) on the client's own session: append one event,
-- claim it, complete it returning one settled event.
SELECT a2_append(:prefix::text || :client_id, '[{"type": "job", "payload": {"n": 1}}]');
SELECT c->'events'->0->>'index' AS idx, c->'events'->0->>'attemptCount' AS att
  FROM a2_claim(:prefix::text || :client_id, 'bench', 30000) AS c \gset
SELECT a2_complete(:prefix::text || :client_id, :idx::bigint, :att::integer,
	jsonb_build_array(jsonb_build_object(
		'id', :prefix::text || :client_id || '/' || :idx || '/done',
		'type', 'done', 'payload', '{"n": 2}'::jsonb, 'settled', true)));
