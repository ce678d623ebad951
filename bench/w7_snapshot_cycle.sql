-- W7: the W4 cycle plus checkpoints: after the claim, a2_put_snapshots
-- writes the state before the event (index - 1, pinned by the event, so it
-- is kept in history while the event is unfinished) and the state after it
-- (index, the new head); the completion then releases the pin and deletes
-- the history row.  Four transactions.
SELECT a2_append(:prefix::text || :client_id, '[{"type": "job", "payload": {"n": 1}}]');
SELECT c->'events'->0->>'index' AS idx, c->'events'->0->>'attemptCount' AS att
  FROM a2_claim(:prefix::text || :client_id, 'bench', 30000) AS c \gset
SELECT a2_put_snapshots(:prefix::text || :client_id, 'bench',
	jsonb_build_array(
		jsonb_build_object('index', :idx::bigint - 1, 'state', '{"count": 1, "sum": 10}'::jsonb,
						   'pinEventIndexes', jsonb_build_array(:idx::bigint)),
		jsonb_build_object('index', :idx::bigint, 'state', '{"count": 2, "sum": 20}'::jsonb)));
SELECT a2_complete(:prefix::text || :client_id, :idx::bigint, :att::integer,
	jsonb_build_array(jsonb_build_object(
		'id', :prefix::text || :client_id || '/' || :idx || '/done',
		'type', 'done', 'payload', '{"n": 2}'::jsonb, 'settled', true)));
