-- W4n: W4's cycle with nothing returned, the shape of pgmq's
-- send-read-archive (bench/pgmq_cycle.sql), three transactions on the
-- client's own session: append one event, claim it, complete it.
SELECT a2_append(:prefix::text || :client_id, '[{"type": "job", "payload": {"n": 1}}]');
SELECT c->'events'->0->>'index' AS idx, c->'events'->0->>'attemptCount' AS att
  FROM a2_claim(:prefix::text || :client_id, 'bench', 30000) AS c \gset
SELECT a2_complete(:prefix::text || :client_id, :idx::bigint, :att::integer);
