-- W2: a2_append of one event per transaction, every client into the one
-- shared session :prefix (appends serialize on the session lock).
SELECT a2_append(:prefix::text, '[{"type": "bench", "payload": {"n": 1}}]');
