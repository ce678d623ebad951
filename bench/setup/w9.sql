-- W9/B9 database: :sessions sessions with one pending event each (created
-- a millisecond apart, in 2026-01-01), :done finished events in sessions
-- of 100, and b9_events, a copy of a2_events with all its indexes for the
-- pgmq-style baseline.  Rows are inserted directly (what a2_append would
-- store for {"type": "job"}), to set a million sessions up in seconds.
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
SELECT 'w9-' || g, 1, 'job', '{"n": 1}', 'w9-' || g || '/1', 1767225600000 + g, true
  FROM generate_series(1, :sessions) g;
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at,
					   processed_at, lane_ready)
SELECT 'done-' || (g / 100), g % 100 + 1, 'old', '{}', 'done-' || g, 1767225600000,
	   1767225600000, false
  FROM generate_series(0, :done - 1) g;
CREATE TABLE b9_events (LIKE a2_events INCLUDING ALL);
INSERT INTO b9_events SELECT * FROM a2_events;
VACUUM ANALYZE a2_events;
VACUUM ANALYZE b9_events;
