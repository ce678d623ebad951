-- bench/bytes.sh: helpers in each a2bytes_<n> database (after
-- CREATE EXTENSION a2 and setup/schema.sql).  Nothing here is part of the
-- extension.

-- The history: p_events finished events in sessions of 100
-- (h0000000, h0000001, ...; ascending, so the primary key fills in order),
-- as a2 0.2 stored them: random (version 4) ids, processed, one attempt.
-- Written into a2_events and bench_events with the unique event_id indexes
-- dropped and rebuilt afterwards (bench_sync_indexes), which is far faster
-- than ten million random inserts into a unique index.
CREATE FUNCTION bench_history(p_events bigint) RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
	base bigint := bench_now_ms() - p_events - 86400000;
	r record;
BEGIN
	DROP INDEX IF EXISTS a2_events_event_id;
	INSERT INTO a2_events
		(session_id, idx, event_type, payload, event_id, created_at, lane_ready,
		 processed_at, processed_by_attempt, returned_event_ids,
		 first_claimed_at, last_claimed_at, attempt_count)
	SELECT 'h' || lpad((g / 100)::text, 7, '0'), g % 100 + 1, 'old', '{"n": 1}',
		   gen_random_uuid()::text, base + g, false,
		   base + g + 1, 1, '[]', base + g, base + g, 1
	  FROM generate_series(0, p_events - 1) g;
	CREATE UNIQUE INDEX a2_events_event_id ON a2_events (event_id);
	FOR r IN SELECT indexrelid::regclass AS idx FROM pg_index
			  WHERE indrelid = 'bench_events'::regclass AND NOT indisprimary LOOP
		EXECUTE format('DROP INDEX %s', r.idx);
	END LOOP;
	INSERT INTO bench_events SELECT * FROM a2_events;
END
$$;

-- Make bench_events' indexes those of a2_events (same definitions, names
-- a2_events_* -> bench_events_*): drop what a2_events does not have,
-- create what bench_events lacks.  The raw baselines then pay for exactly
-- the indexes a2 pays for, before and after a change of them.  The columns
-- an ALTER EXTENSION a2 UPDATE added to a2_events are added first (the
-- new indexes name them).
CREATE FUNCTION bench_sync_indexes() RETURNS SETOF text
LANGUAGE plpgsql
AS $$
DECLARE
	r record;
	norm constant text := '^CREATE (UNIQUE )?INDEX \S+ ON \S+ ';
BEGIN
	FOR r IN
		SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod) AS type
		  FROM pg_attribute a
		 WHERE a.attrelid = 'a2_events'::regclass AND a.attnum > 0 AND NOT a.attisdropped
		   AND NOT EXISTS (SELECT FROM pg_attribute b
							WHERE b.attrelid = 'bench_events'::regclass
							  AND b.attname = a.attname AND NOT b.attisdropped)
		 ORDER BY a.attnum
	LOOP
		EXECUTE format('ALTER TABLE bench_events ADD COLUMN %I %s', r.attname, r.type);
		RETURN NEXT 'added column ' || r.attname;
	END LOOP;
	FOR r IN
		SELECT i.indexrelid::regclass AS idx, c.conname,
			   regexp_replace(pg_get_indexdef(i.indexrelid), norm, 'CREATE \1INDEX ON t ') AS body
		  FROM pg_index i LEFT JOIN pg_constraint c ON c.conindid = i.indexrelid
		 WHERE i.indrelid = 'bench_events'::regclass
	LOOP
		IF r.body NOT IN (SELECT regexp_replace(pg_get_indexdef(indexrelid), norm, 'CREATE \1INDEX ON t ')
							FROM pg_index WHERE indrelid = 'a2_events'::regclass) THEN
			IF r.conname IS NOT NULL THEN
				EXECUTE format('ALTER TABLE bench_events DROP CONSTRAINT %I', r.conname);
			ELSE
				EXECUTE format('DROP INDEX %s', r.idx);
			END IF;
			RETURN NEXT 'dropped ' || r.idx::text;
		END IF;
	END LOOP;
	FOR r IN
		SELECT pg_get_indexdef(i.indexrelid) AS def
		  FROM pg_index i
		 WHERE i.indrelid = 'a2_events'::regclass
		   AND regexp_replace(pg_get_indexdef(i.indexrelid), norm, 'CREATE \1INDEX ON t ')
			   NOT IN (SELECT regexp_replace(pg_get_indexdef(indexrelid), norm, 'CREATE \1INDEX ON t ')
						 FROM pg_index WHERE indrelid = 'bench_events'::regclass)
	LOOP
		EXECUTE regexp_replace(r.def, 'INDEX a2_events(\S*) ON (\S+\.)?a2_events ',
							   'INDEX bench_events\1 ON \2bench_events ');
		RETURN NEXT r.def;
	END LOOP;
END
$$;

-- Rows to operate on, written straight into a2_events or bench_events (not
-- measured): p_count sessions p_prefix || i (i = 0 .. p_count - 1), one
-- event each at index 1, as a2_append stores {"type": "job", "payload":
-- {"n": 1}}.  p_state: 'new' (claimable), 'leased' (claimed by attempt 1,
-- lease for an hour), 'old' (claimable, created at 2020-09-13 + i ms, so
-- older than anything else claimable: the a2_claim_next / B9 pools).
CREATE FUNCTION bench_rows(p_table regclass, p_prefix text, p_count int, p_state text)
RETURNS void
LANGUAGE plpgsql
AS $$
DECLARE
	now_ms bigint := bench_now_ms();
BEGIN
	EXECUTE format($f$
		INSERT INTO %s
			(session_id, idx, event_type, payload, event_id, created_at, lane_ready,
			 attempt_count, first_claimed_at, last_claimed_at, claim_holder, claim_expires_at)
		SELECT $1 || i, 1, 'job', '{"n": 1}', bench_uuid7(),
			   CASE WHEN $3 = 'old' THEN 1600000000000 + i ELSE $2 END, true,
			   CASE WHEN $3 = 'leased' THEN 1 ELSE 0 END,
			   CASE WHEN $3 = 'leased' THEN $2 END, CASE WHEN $3 = 'leased' THEN $2 END,
			   CASE WHEN $3 = 'leased' THEN 'bench' END,
			   CASE WHEN $3 = 'leased' THEN $2 + 3600000 END
		  FROM generate_series(0, $4 - 1) i$f$, p_table)
	USING p_prefix, now_ms, p_state, p_count;
END
$$;

-- After a run: every unprocessed event processed, so that the next run
-- starts from the history alone (plus what earlier runs settled).
CREATE FUNCTION bench_bytes_settle() RETURNS void
LANGUAGE sql
AS $$
	UPDATE a2_events SET processed_at = created_at, lane_ready = false,
		   claim_holder = NULL, claim_expires_at = NULL
	 WHERE processed_at IS NULL;
	UPDATE bench_events SET processed_at = created_at, lane_ready = false,
		   claim_holder = NULL, claim_expires_at = NULL
	 WHERE processed_at IS NULL;
$$;
