-- W1 (and W5 append): a2_append of one event per transaction into the
-- client's own session :prefix<client_id>.
SELECT a2_append(:prefix::text || :client_id, '[{"type": "bench", "payload": {"n": 1}}]');
