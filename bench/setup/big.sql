-- W5 data (and the large session W6 reads), in the main benchmark database.
-- psql variables: big (events per large session), clients (the largest
-- client count: one large session per pgbench client).

-- W5: one large session per pgbench client (client ids 0 .. :clients - 1),
-- w5big-0 .. w5big-<:clients - 1>, each with :big processed events.  The
-- W5 runs append to them and settle them again between runs
-- (bench_settle).
SELECT bench_prefill('w5big-', 0, :clients - 1, :big) AS w5_rows \gset
\echo W5: :w5_rows prefilled events in :clients large sessions

-- W6 on a large session reads w5big-0 through index :big (whatever the W5
-- runs appended after it), from a head snapshot 100 events before that.
INSERT INTO a2_snapshots (session_id, reducer_name, up_to_index, state, updated_at)
VALUES ('w5big-0', 'bench6', :big - 100,
		jsonb_build_object('count', :big - 100, 'sum', 12345, 'tags', '["a", "b", "c"]'::jsonb),
		(extract(epoch FROM clock_timestamp()) * 1000)::bigint);

-- A backlog: one more session holding :big / 10 unprocessed, claimable
-- events that no workload touches.  Any live queue has unprocessed events
-- somewhere, and the planner statistics (ANALYZE) should see them, as
-- they would in production: an estimate of "no unprocessed events at all"
-- would hide plans whose cost depends on that estimate.
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
SELECT 'w5backlog', i, 'job', jsonb_build_object('i', i),
	   'w5backlog-' || lpad(i::text, 12, '0'),
	   (extract(epoch FROM clock_timestamp()) * 1000)::bigint, true
  FROM generate_series(1, :big / 10) i;
