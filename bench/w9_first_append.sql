-- W9: the first append of a new session (one event), the case that reads
-- a2_retired_sessions for a dropped session's high-water mark.  A random
-- session id per transaction (collisions are rare and harmless).
\set n random(1, 2000000000)
SELECT a2_append('first-' || :client_id || '-' || :n, '[{"type": "job", "payload": {"n": 1}}]');
