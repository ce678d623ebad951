-- B1, the ceiling for W1: one plain single-row INSERT per transaction into
-- bench_events (same columns and indexes as a2_events), the client's own
-- session, a time-ordered (version 7) UUID event id as a2 generates.
INSERT INTO bench_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
VALUES (:prefix::text || :client_id, nextval('bench_idx'), 'bench', '{"n": 1}',
		bench_uuid7(), (extract(epoch FROM clock_timestamp()) * 1000)::bigint, true);
