-- Helpers for bench/memory.sh (in its own database, after schema.sql).

-- Make p_calls a2 calls on session p_session, in the caller's transaction,
-- cycling through: append one event, claim it, put two snapshots (one
-- pinned by the event), complete it returning one settled event,
-- read_state, and an append that fails validation (caught, so the error
-- path and its subtransaction run too).  Returns the number of calls made.
CREATE FUNCTION bench_mem_calls(p_session text, p_calls int)
RETURNS int
LANGUAGE plpgsql
AS $$
DECLARE
	n int := 0;
	c jsonb;
	idx bigint;
	att int;
BEGIN
	WHILE n < p_calls LOOP
		PERFORM a2_append(p_session, '[{"type": "job", "payload": {"n": 1}}]');
		n := n + 1;
		EXIT WHEN n >= p_calls;
		c := a2_claim(p_session, 'mem', 30000);
		n := n + 1;
		idx := (c->'events'->0->>'index')::bigint;
		att := (c->'events'->0->>'attemptCount')::int;
		EXIT WHEN n >= p_calls;
		PERFORM a2_put_snapshots(p_session, 'mem',
			jsonb_build_array(
				jsonb_build_object('index', idx - 1, 'state', '{"count": 1}'::jsonb,
								   'pinEventIndexes', jsonb_build_array(idx)),
				jsonb_build_object('index', idx, 'state', '{"count": 2}'::jsonb)));
		n := n + 1;
		EXIT WHEN n >= p_calls;
		PERFORM a2_complete(p_session, idx, att,
			jsonb_build_array(jsonb_build_object(
				'id', p_session || '/' || idx || '/done', 'type', 'done', 'settled', true)));
		n := n + 1;
		EXIT WHEN n >= p_calls;
		PERFORM a2_read_state(p_session, 'mem');
		n := n + 1;
		EXIT WHEN n >= p_calls;
		BEGIN
			PERFORM a2_append(p_session, '[{"type": 1}]');
			RAISE EXCEPTION 'a2_append accepted a non-string type';
		EXCEPTION WHEN invalid_parameter_value THEN
			NULL;
		END;
		n := n + 1;
	END LOOP;
	RETURN n;
END
$$;

-- Run p_sql p_reps times, each in a subtransaction that is rolled back
-- afterwards (so every repetition sees the same data); returns the
-- duration of each run in milliseconds.
CREATE FUNCTION bench_time_ms(p_sql text, p_reps int)
RETURNS SETOF double precision
LANGUAGE plpgsql
AS $$
DECLARE
	t0 timestamptz;
	ms double precision;
BEGIN
	FOR r IN 1 .. p_reps LOOP
		BEGIN
			t0 := clock_timestamp();
			EXECUTE p_sql;
			ms := extract(epoch FROM clock_timestamp() - t0) * 1000;
			RAISE EXCEPTION USING ERRCODE = 'P0099', MESSAGE = 'roll back';
		EXCEPTION WHEN SQLSTATE 'P0099' THEN
			RETURN NEXT ms;
		END;
	END LOOP;
END
$$;

-- Median of bench_time_ms.
CREATE FUNCTION bench_median_ms(p_sql text, p_reps int)
RETURNS numeric
LANGUAGE sql
AS $$
	SELECT round(percentile_cont(0.5) WITHIN GROUP (ORDER BY t)::numeric, 2)
	  FROM bench_time_ms(p_sql, p_reps) t
$$;

-- A batch of p_n events without ids, as a2_append takes it.
CREATE FUNCTION bench_batch(p_n int)
RETURNS jsonb
LANGUAGE sql
AS $$
	SELECT jsonb_agg(jsonb_build_object('type', 'job', 'payload', jsonb_build_object('n', i)))
	  FROM generate_series(1, p_n) i
$$;

-- Memory contexts of this backend, for before/after comparisons.
CREATE TABLE bench_mem (label text, name text, ident text, level int, total_bytes bigint);
