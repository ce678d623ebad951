-- W6 data: two medium sessions of :w6events processed events; w6-snap1 has
-- a head snapshot 100 events before its end, w6-full1 none (a full-log
-- read).  Loaded into the main database and, alone, into the W6 database.
SELECT bench_prefill('w6-snap', 1, 1, :w6events) + bench_prefill('w6-full', 1, 1, :w6events) AS w6_rows \gset
\echo W6: :w6_rows prefilled events in 2 medium sessions
INSERT INTO a2_snapshots (session_id, reducer_name, up_to_index, state, updated_at)
VALUES ('w6-snap1', 'bench6', :w6events - 100,
		jsonb_build_object('count', :w6events - 100, 'sum', 12345, 'tags', '["a", "b", "c"]'::jsonb),
		(extract(epoch FROM clock_timestamp()) * 1000)::bigint);
