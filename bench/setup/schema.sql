-- Benchmark helpers, created in every benchmark database after
-- CREATE EXTENSION a2.  Nothing here is part of the extension.

-- B1/B2 baseline: a plain table with the columns, defaults, constraints and
-- indexes of a2_events (primary key, unique event_id, the partial indexes).
CREATE TABLE bench_events (LIKE a2_events INCLUDING ALL);

-- A time-ordered (version 7 layout) UUID as text from clock_timestamp():
-- what a2 generates (0.3.0), made in SQL for the raw baselines.
-- Within a millisecond its order is random (no counter), which is all an
-- index needs to keep its inserts together.
CREATE FUNCTION bench_uuid7() RETURNS text
LANGUAGE sql VOLATILE
AS $$
	SELECT overlay(overlay(gen_random_uuid()::text PLACING '7' FROM 15 FOR 1)
				   PLACING regexp_replace(lpad(to_hex((extract(epoch FROM clock_timestamp()) * 1000)::bigint), 12, '0'),
										  '^(.{8})', '\1-')
				   FROM 1 FOR 13)
$$;

CREATE FUNCTION bench_now_ms() RETURNS bigint
LANGUAGE sql VOLATILE
AS $$ SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint $$;

-- Baseline event indexes.  Plain SQL has no dense per-session index to
-- compute; a sequence is the cheapest unique value, i.e. the ceiling.
CREATE SEQUENCE bench_idx;

-- Prefill: p_events valid, processed events in each of the sessions
-- p_prefix || n for n in p_first .. p_last, written straight into
-- a2_events (dense idx from 1, unique event ids, processed_at set, one
-- claim attempt).  With p_eligible_last the last event of each session is
-- left unprocessed, lane-ready and unclaimed instead: claimable.
-- Returns the number of rows written.
--
-- The event ids have the length of a UUID but ascend within a session
-- (23 hex digits of the session's md5, '-', the index in 12 digits): random
-- UUIDs would scatter millions of inserts over an event_id index larger
-- than shared_buffers and make the prefill many times slower.  The
-- benchmarked appends still add random UUIDs to that index.
CREATE FUNCTION bench_prefill(p_prefix text, p_first int, p_last int,
							  p_events bigint, p_eligible_last boolean DEFAULT false)
RETURNS bigint
LANGUAGE sql
AS $$
	WITH ins AS (
		INSERT INTO a2_events
			(session_id, idx, event_type, payload, event_id, created_at,
			 cause, lane, lane_ready, processed_at, processed_by_attempt,
			 returned_event_ids, first_claimed_at, last_claimed_at,
			 attempt_count)
		SELECT p_prefix || s, i, 'prefill', jsonb_build_object('i', i),
			   substr(md5(p_prefix || s), 1, 23) || '-' || lpad(i::text, 12, '0'), t.base + i,
			   NULL, NULL, e.eligible,
			   CASE WHEN e.eligible THEN NULL ELSE t.base + i + 1 END,
			   CASE WHEN e.eligible THEN NULL ELSE 1 END,
			   CASE WHEN e.eligible THEN NULL ELSE '[]'::jsonb END,
			   CASE WHEN e.eligible THEN NULL ELSE t.base + i END,
			   CASE WHEN e.eligible THEN NULL ELSE t.base + i END,
			   CASE WHEN e.eligible THEN 0 ELSE 1 END
		  FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint
					   - p_events - 10 AS base) t,
			   generate_series(p_first, p_last) s,
			   generate_series(1, p_events) i,
			   LATERAL (SELECT p_eligible_last AND i = p_events AS eligible) e
		RETURNING 1
	)
	SELECT count(*) FROM ins
$$;

-- Settle every unprocessed event of the given sessions whose index is above
-- p_above, as an append with settled: true would have (processed_at set, no
-- lease).  Used between runs so that the next workload starts from a known
-- state; never timed.
CREATE FUNCTION bench_settle(p_sessions text[], p_above bigint DEFAULT 0)
RETURNS bigint
LANGUAGE sql
AS $$
	WITH upd AS (
		UPDATE a2_events e
		   SET processed_at = e.created_at, lane_ready = false,
			   claim_holder = NULL, claim_expires_at = NULL
		 WHERE e.session_id = ANY (p_sessions)
		   AND e.processed_at IS NULL
		   AND e.idx > p_above
		RETURNING 1
	)
	SELECT count(*) FROM upd
$$;

-- The same for every session of the database (the W8 databases).
CREATE FUNCTION bench_settle_all(p_above bigint)
RETURNS bigint
LANGUAGE sql
AS $$
	WITH upd AS (
		UPDATE a2_events e
		   SET processed_at = e.created_at, lane_ready = false,
			   claim_holder = NULL, claim_expires_at = NULL
		 WHERE e.processed_at IS NULL
		   AND e.idx > p_above
		RETURNING 1
	)
	SELECT count(*) FROM upd
$$;

-- The sessions of pgbench clients 0 .. p_count - 1: p_prefix || client_id.
CREATE FUNCTION bench_sessions(p_prefix text, p_count int)
RETURNS text[]
LANGUAGE sql IMMUTABLE
AS $$
	SELECT array_agg(p_prefix || n ORDER BY n) FROM generate_series(0, p_count - 1) n
$$;
