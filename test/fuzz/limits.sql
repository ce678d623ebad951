-- test/fuzz/limits.sql: the documented size limits are enforced with
-- errors, never by truncation (SPEC 5 "Sizes"): names of 1024 bytes are
-- accepted and stored intact, 1025 bytes are refused (bytes, not
-- characters); batches and lists of 10,000 elements are accepted and
-- processed whole, 10,001 are refused and nothing is written.
-- Needs setup.sql (schema a2_fuzz).  Fails with psql exit status 3.

\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET a2.now = '2026-04-01 00:00:00+00';

CREATE TABLE a2_fuzz.checks (
	n		serial PRIMARY KEY,
	label	text NOT NULL,
	passed	boolean NOT NULL,
	detail	text
);

-- Run `sql` (one statement returning one value) and record whether it
-- ended as `want` ('ok' or a SQLSTATE); a failed call must not have
-- written a row.
CREATE FUNCTION a2_fuzz.expect(label text, sql text, want text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	tables oid[] := a2_fuzz.a2_tables();
	w0 bigint := a2_fuzz.writes(tables);
	res text;
	got text := 'ok';
	msg text;
BEGIN
	BEGIN
		EXECUTE sql INTO res;
	EXCEPTION WHEN OTHERS OR query_canceled THEN
		GET STACKED DIAGNOSTICS got = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
	END;
	IF got <> want THEN
		INSERT INTO a2_fuzz.checks (label, passed, detail)
			VALUES (label, false, format('wanted %s, got %s %s', want, got, coalesce(left(msg, 200), '')));
	ELSIF got <> 'ok' AND a2_fuzz.writes(tables) <> w0 THEN
		INSERT INTO a2_fuzz.checks (label, passed, detail)
			VALUES (label, false, format('raised %s after writing %s row(s)', got, a2_fuzz.writes(tables) - w0));
	ELSE
		INSERT INTO a2_fuzz.checks (label, passed) VALUES (label, true);
	END IF;
END $$;

CREATE FUNCTION a2_fuzz.check(label text, cond boolean, detail text DEFAULT NULL) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO a2_fuzz.checks (label, passed, detail) VALUES (label, coalesce(cond, false), detail);
$$;

-- results are recorded in a2_fuzz.checks; keep the calls quiet
\o /dev/null

-- ---------------------------------------------------------------- names

-- session_id
SELECT a2_fuzz.expect('append: session_id of 1024 ASCII bytes', $$SELECT a2_append(repeat('s', 1024), '[{"type":"t"}]')$$, 'ok');
SELECT a2_fuzz.check('  stored intact', (SELECT session_id FROM a2_events WHERE session_id LIKE 'sss%') = repeat('s', 1024));
SELECT a2_fuzz.check('  read back intact', a2_read(repeat('s', 1024))->0->>'sessionId' = repeat('s', 1024));
SELECT a2_fuzz.expect('append: session_id of 1024 bytes in 256 emoji', $$SELECT a2_append(repeat(U&'\+01F600', 256), '[{"type":"t"}]')$$, 'ok');
SELECT a2_fuzz.check('  stored intact', a2_read(repeat(U&'\+01F600', 256))->0->>'sessionId' = repeat(U&'\+01F600', 256)
					 AND EXISTS (SELECT 1 FROM a2_events WHERE session_id = repeat(U&'\+01F600', 256)));
SELECT a2_fuzz.expect('append: session_id of 1025 ASCII bytes', $$SELECT a2_append(repeat('s', 1025), '[{"type":"t"}]')$$, '22023');
SELECT a2_fuzz.expect('append: session_id of 1025 bytes (256 emoji + a)', $$SELECT a2_append(repeat(U&'\+01F600', 256) || 'a', '[{"type":"t"}]')$$, '22023');
SELECT a2_fuzz.expect('append: session_id of 1024 characters but 1025 bytes', $$SELECT a2_append(repeat('a', 1023) || U&'\00E9', '[{"type":"t"}]')$$, '22023');
SELECT a2_fuzz.check('  nothing stored under a too-long session id',
					 NOT EXISTS (SELECT 1 FROM a2_events WHERE octet_length(session_id) > 1024));
SELECT a2_fuzz.expect('read: session_id of 1025 bytes', $$SELECT a2_read(repeat('s', 1025))$$, '22023');
SELECT a2_fuzz.expect('claim: session_id of 1025 bytes', $$SELECT a2_claim(repeat('s', 1025), 'w', 1000)$$, '22023');
SELECT a2_fuzz.expect('renew: session_id of 1025 bytes', $$SELECT a2_renew(repeat('s', 1025), 'w', '[]', 1000)$$, '22023');
SELECT a2_fuzz.expect('complete: session_id of 1025 bytes', $$SELECT a2_complete(repeat('s', 1025), 1, 1)$$, '22023');
SELECT a2_fuzz.expect('fail: session_id of 1025 bytes', $$SELECT a2_fail(repeat('s', 1025), 1, 1, 'e', 3)$$, '22023');
SELECT a2_fuzz.expect('read_state: session_id of 1025 bytes', $$SELECT a2_read_state(repeat('s', 1025), 'r')$$, '22023');
SELECT a2_fuzz.expect('put_snapshots: session_id of 1025 bytes', $$SELECT a2_put_snapshots(repeat('s', 1025), 'r', '[{"index":1,"state":1}]')::text$$, '22023');
SELECT a2_fuzz.expect('read_states: sessionId of 1024 bytes', $$SELECT a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', repeat('s', 1024))), 'r')$$, 'ok');
SELECT a2_fuzz.check('  its events come back', jsonb_array_length(a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', repeat('s', 1024))), 'r')->0->'events') = 1);
SELECT a2_fuzz.expect('read_states: sessionId of 1025 bytes', $$SELECT a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', repeat('s', 1025))), 'r')$$, '22023');

-- event ids and lanes
SELECT a2_fuzz.expect('append: id and lane of 1024 bytes', $$SELECT a2_append('lim:ids', jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1024), 'lane', repeat('l', 1024))))$$, 'ok');
SELECT a2_fuzz.check('  id and lane read back intact',
					 (SELECT e->>'id' = repeat('i', 1024) AND e->>'lane' = repeat('l', 1024)
						FROM (SELECT a2_read('lim:ids')->0 AS e) s));
SELECT a2_fuzz.check('  id and lane stored intact',
					 EXISTS (SELECT 1 FROM a2_events WHERE session_id = 'lim:ids' AND event_id = repeat('i', 1024) AND lane = repeat('l', 1024)));
SELECT a2_fuzz.expect('append: id of 1025 bytes', $$SELECT a2_append('lim:ids', jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1025))))$$, '22023');
SELECT a2_fuzz.expect('append: id of 1025 bytes (1024 characters)', $$SELECT a2_append('lim:ids', jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1023) || U&'\00E9')))$$, '22023');
SELECT a2_fuzz.expect('append: lane of 1025 bytes', $$SELECT a2_append('lim:ids', jsonb_build_array(jsonb_build_object('type', 't', 'lane', repeat('l', 1025))))$$, '22023');
SELECT a2_fuzz.check('  still one event in lim:ids', (SELECT count(*) FROM a2_events WHERE session_id = 'lim:ids') = 1);

-- holders
SELECT a2_fuzz.expect('claim: holder of 1025 bytes', $$SELECT a2_claim('lim:ids', repeat('h', 1025), 1000)$$, '22023');
SELECT a2_fuzz.check('  nothing claimed', (SELECT attempt_count FROM a2_events WHERE session_id = 'lim:ids') = 0);
SELECT a2_fuzz.expect('claim: holder of 1024 bytes', $$SELECT a2_claim('lim:ids', repeat('h', 1024), 60000)$$, 'ok');
SELECT a2_fuzz.check('  holder stored intact', (SELECT claim_holder FROM a2_events WHERE session_id = 'lim:ids') = repeat('h', 1024));
SELECT a2_fuzz.expect('renew: holder of 1025 bytes', $$SELECT a2_renew('lim:ids', repeat('h', 1025), '[{"index":1,"attempt":1}]', 1000)$$, '22023');
SELECT a2_fuzz.check('  renew by the 1024-byte holder works',
					 a2_renew('lim:ids', repeat('h', 1024), '[{"index":1,"attempt":1}]', 1000) = '{"renewed":[1],"superseded":[]}');

-- returned event ids of a completion
SELECT a2_fuzz.expect('complete: returned id of 1025 bytes', $$SELECT a2_complete('lim:ids', 1, 1, jsonb_build_array(jsonb_build_object('type', 'c', 'id', repeat('c', 1025))))$$, '22023');
SELECT a2_fuzz.check('  parent still unprocessed', (SELECT processed_at IS NULL FROM a2_events WHERE session_id = 'lim:ids' AND idx = 1));
SELECT a2_fuzz.expect('complete: returned id of 1024 bytes', $$SELECT a2_complete('lim:ids', 1, 1, jsonb_build_array(jsonb_build_object('type', 'c', 'id', repeat('c', 1024))))$$, 'ok');
SELECT a2_fuzz.check('  child id stored intact', a2_read('lim:ids', 1)->0->>'id' = repeat('c', 1024));

-- reducer names
SELECT a2_fuzz.expect('put_snapshots: reducer_name of 1024 bytes', $$SELECT a2_put_snapshots('lim:ids', repeat('r', 1024), '[{"index":1,"state":"one"}]')::text$$, 'ok');
SELECT a2_fuzz.check('  reducer name stored intact', (SELECT reducer_name FROM a2_snapshots WHERE session_id = 'lim:ids') = repeat('r', 1024));
SELECT a2_fuzz.check('  read_state finds it', a2_read_state('lim:ids', repeat('r', 1024))->'snapshot' = '{"index":1,"state":"one"}');
SELECT a2_fuzz.expect('put_snapshots: reducer_name of 1025 bytes', $$SELECT a2_put_snapshots('lim:ids', repeat('r', 1025), '[{"index":1,"state":"one"}]')::text$$, '22023');
SELECT a2_fuzz.expect('read_state: reducer_name of 1025 bytes', $$SELECT a2_read_state('lim:ids', repeat('r', 1025))$$, '22023');
SELECT a2_fuzz.expect('read_states: reducer_name of 1025 bytes', $$SELECT a2_read_states('[]', repeat('r', 1025))$$, '22023');

-- presence names
SELECT a2_fuzz.expect('presence_set: ns, participant and field of 1024 bytes',
	$$SELECT a2_presence_set(repeat('n', 1024), repeat('p', 1024), jsonb_build_object(repeat('f', 1024), 1), '2026-04-01 00:00:00+00', 1, 60000)::text$$, 'ok');
SELECT a2_fuzz.check('  presence_read returns them intact',
					 a2_presence_read(repeat('n', 1024))->0 @> jsonb_build_object('participant', repeat('p', 1024), 'field', repeat('f', 1024), 'value', 1));
SELECT a2_fuzz.expect('presence_set: ns of 1025 bytes', $$SELECT a2_presence_set(repeat('n', 1025), 'p', '{"f":1}', '2026-04-01 00:00:00+00', 1, 60000)::text$$, '22023');
SELECT a2_fuzz.expect('presence_set: participant of 1025 bytes', $$SELECT a2_presence_set('lim:ns', repeat('p', 1025), '{"f":1}', '2026-04-01 00:00:00+00', 1, 60000)::text$$, '22023');
SELECT a2_fuzz.expect('presence_set: field of 1025 bytes', $$SELECT a2_presence_set('lim:ns', 'p', jsonb_build_object(repeat('f', 1025), 1), '2026-04-01 00:00:00+00', 1, 60000)::text$$, '22023');
SELECT a2_fuzz.expect('presence_set: field of 1025 bytes next to a good one', $$SELECT a2_presence_set('lim:ns', 'p', jsonb_build_object('ok', 1, repeat('f', 1025), 1), '2026-04-01 00:00:00+00', 1, 60000)::text$$, '22023');
SELECT a2_fuzz.check('  nothing written for lim:ns', NOT EXISTS (SELECT 1 FROM a2_presence WHERE ns = 'lim:ns'));
SELECT a2_fuzz.expect('presence_read: ns of 1025 bytes', $$SELECT a2_presence_read(repeat('n', 1025))$$, '22023');

-- ------------------------------------------------------------ big values

SELECT a2_fuzz.expect('append: 5 MB payload and 1 MB type',
	$$SELECT a2_append('lim:huge', jsonb_build_array(jsonb_build_object('type', repeat('T', 1000000), 'payload', jsonb_build_object('blob', repeat('x', 5000000)))))$$, 'ok');
SELECT a2_fuzz.check('  payload and type read back intact',
					 (SELECT md5(e->'payload'->>'blob') = md5(repeat('x', 5000000)) AND e->>'type' = repeat('T', 1000000)
						FROM (SELECT a2_read('lim:huge')->0 AS e) s));

-- ------------------------------------------------------------ list sizes

-- Statistics that do not know the big session yet, as right after a bulk
-- append in production (autovacuum has not caught up): plans must stay
-- linear in the batch size anyway.
ALTER TABLE a2_events SET (autovacuum_enabled = off);
ANALYZE a2_events;

-- append: 10,000 events accepted whole, 10,001 refused
SELECT a2_fuzz.expect('append: 10,001 events', $$SELECT a2_append('lim:big', (SELECT jsonb_agg(jsonb_build_object('type', 't', 'id', 'lim:big:' || g)) FROM generate_series(1, 10001) g))$$, '22023');
SELECT a2_fuzz.check('  nothing appended', NOT EXISTS (SELECT 1 FROM a2_events WHERE session_id = 'lim:big'));
SELECT a2_fuzz.check('  10,000 events appended in one call',
	jsonb_array_length(a2_append('lim:big', (SELECT jsonb_agg(jsonb_build_object('type', 't', 'id', 'lim:big:' || g)) FROM generate_series(1, 10000) g))->'events') = 10000);
SELECT a2_fuzz.check('  stored as indexes 1..10000 in batch order',
	(SELECT count(*) = 10000 AND min(idx) = 1 AND max(idx) = 10000 AND bool_and(event_id = 'lim:big:' || idx)
	   FROM a2_events WHERE session_id = 'lim:big'));
SELECT a2_fuzz.expect('append: 10,001 events to a session that has 10,000', $$SELECT a2_append('lim:big', (SELECT jsonb_agg(jsonb_build_object('type', 't')) FROM generate_series(1, 10001) g))$$, '22023');
SELECT a2_fuzz.check('  still 10,000', (SELECT count(*) FROM a2_events WHERE session_id = 'lim:big') = 10000);

-- claim takes all 10,000; renew 10,000 claims, refuse 10,001.  The
-- timeout only guards against a hang: speed is measured in bench/, never
-- asserted here (a 3 s limit failed on a 2-core machine at load 17).
SET statement_timeout = '120s';
SELECT a2_fuzz.expect('claim: all 10,000 eligible events at once',
	$$SELECT jsonb_array_length(a2_claim('lim:big', 'w', 600000)->'events')$$, 'ok');
SELECT a2_fuzz.check('  10,000 claimed', (SELECT count(*) FROM a2_events WHERE session_id = 'lim:big' AND claim_holder = 'w' AND attempt_count = 1) = 10000);
SELECT a2_fuzz.expect('renew: 10,000 claims',
	$$SELECT a2_renew('lim:big', 'w', (SELECT jsonb_agg(jsonb_build_object('index', g, 'attempt', 1)) FROM generate_series(1, 10000) g), 900000)$$, 'ok');
RESET statement_timeout;
SELECT a2_fuzz.check('  10,000 renewed', jsonb_array_length(a2_renew('lim:big', 'w', (SELECT jsonb_agg(jsonb_build_object('index', g, 'attempt', 1)) FROM generate_series(1, 10000) g), 900000)->'renewed') = 10000);
SELECT a2_fuzz.expect('renew: 10,001 claims', $$SELECT a2_renew('lim:big', 'w', (SELECT jsonb_agg(jsonb_build_object('index', g, 'attempt', 1)) FROM generate_series(1, 10001) g), 1)$$, '22023');
SELECT a2_fuzz.check('  leases unchanged', (SELECT count(*) FROM a2_events WHERE session_id = 'lim:big'
											 AND claim_expires_at = extract(epoch FROM '2026-04-01 00:00:00+00'::timestamptz)::bigint * 1000 + 900000) = 10000);

-- exclude_indexes
SELECT a2_fuzz.check('setup: two events in lim:excl', jsonb_array_length(a2_append('lim:excl', '[{"type":"a"},{"type":"b"}]')->'events') = 2);
SELECT a2_fuzz.expect('claim: 10,001 exclude_indexes', $$SELECT a2_claim('lim:excl', 'w', 1000, NULL, (SELECT array_agg(g) FROM generate_series(1::bigint, 10001) g))$$, '22023');
SELECT a2_fuzz.check('  nothing claimed', (SELECT sum(attempt_count) FROM a2_events WHERE session_id = 'lim:excl') = 0);
SELECT a2_fuzz.check('claim: 10,000 exclude_indexes honoured',
	a2_claim('lim:excl', 'w', 1000, NULL, (SELECT array_agg(g) FROM generate_series(1::bigint, 10000) g)) = '{"outcome":"settled"}');
SELECT a2_fuzz.check('claim: 9,999 exclusions leave index 1',
	jsonb_path_query_array(a2_claim('lim:excl', 'w', 1000, NULL, (SELECT array_agg(g) FROM generate_series(2::bigint, 10000) g)), '$.events[*].index') = '[1]');

-- complete with 10,000 returned events; 10,001 refused
SELECT a2_fuzz.expect('complete: 10,001 returned events', $$SELECT a2_complete('lim:big', 1, 1, (SELECT jsonb_agg(jsonb_build_object('type', 'c', 'id', 'lim:bigc:' || g)) FROM generate_series(1, 10001) g))$$, '22023');
SELECT a2_fuzz.check('  parent unprocessed, no children', (SELECT count(*) FROM a2_events WHERE session_id = 'lim:big') = 10000
					 AND (SELECT processed_at IS NULL FROM a2_events WHERE session_id = 'lim:big' AND idx = 1));
SELECT a2_fuzz.check('complete: 10,000 returned events',
	jsonb_array_length(a2_complete('lim:big', 1, 1, (SELECT jsonb_agg(jsonb_build_object('type', 'c', 'id', 'lim:bigc:' || g)) FROM generate_series(1, 10000) g))->'events') = 10000);
SELECT a2_fuzz.check('  children stored at 10001..20000 with the cause',
	(SELECT count(*) = 10000 AND min(idx) = 10001 AND max(idx) = 20000 AND bool_and(cause = '{"index":1,"attempt":1}')
	   FROM a2_events WHERE session_id = 'lim:big' AND idx > 10000));

-- pinEventIndexes
SELECT a2_fuzz.expect('put_snapshots: 10,001 pinEventIndexes', $$SELECT a2_put_snapshots('lim:big', 'pins', jsonb_build_array(jsonb_build_object('index', 5, 'state', 1, 'pinEventIndexes', (SELECT jsonb_agg(g) FROM generate_series(1, 10001) g))))::text$$, '22023');
SELECT a2_fuzz.check('  no snapshot, no pin', NOT EXISTS (SELECT 1 FROM a2_snapshots WHERE session_id = 'lim:big')
					 AND NOT EXISTS (SELECT 1 FROM a2_snapshot_pins WHERE session_id = 'lim:big'));
SELECT a2_fuzz.expect('put_snapshots: 10,000 pinEventIndexes', $$SELECT a2_put_snapshots('lim:big', 'pins', jsonb_build_array(jsonb_build_object('index', 5, 'state', 1, 'pinEventIndexes', (SELECT jsonb_agg(g) FROM generate_series(1, 10000) g))))::text$$, 'ok');
SELECT a2_fuzz.check('  pins for the 9,999 unfinished events (event 1 is processed)',
	(SELECT count(*) = 9999 AND min(event_index) = 2 FROM a2_snapshot_pins WHERE session_id = 'lim:big' AND reducer_name = 'pins'));

-- snapshots
SELECT a2_fuzz.expect('put_snapshots: 10,001 snapshots', $$SELECT a2_put_snapshots('lim:big', 'r', (SELECT jsonb_agg(jsonb_build_object('index', g, 'state', g)) FROM generate_series(1, 10001) g))::text$$, '22023');
SELECT a2_fuzz.check('  no head', NOT EXISTS (SELECT 1 FROM a2_snapshots WHERE session_id = 'lim:big' AND reducer_name = 'r'));
SELECT a2_fuzz.expect('put_snapshots: 10,000 snapshots', $$SELECT a2_put_snapshots('lim:big', 'r', (SELECT jsonb_agg(jsonb_build_object('index', g, 'state', g)) FROM generate_series(1, 10000) g))::text$$, 'ok');
SELECT a2_fuzz.check('  the greatest is the head', a2_read_state('lim:big', 'r', 10000)->'snapshot' = '{"index":10000,"state":10000}');

-- read_states
SELECT a2_fuzz.check('read_states: 10,000 requests answered in request order',
	(SELECT jsonb_array_length(r) = 10000
			AND jsonb_path_query_array(r, '$[*].events.size()') = (SELECT jsonb_agg(CASE g WHEN 10000 THEN 2 WHEN 5000 THEN 1 ELSE 0 END ORDER BY g) FROM generate_series(1, 10000) g)
			AND r->9999->'events'->1->>'sessionId' = 'lim:ids' AND r->4999->'events'->0->>'id' = 'lim:big:1'
	   FROM (SELECT a2_read_states((SELECT jsonb_agg(jsonb_build_object('sessionId', CASE g WHEN 10000 THEN 'lim:ids' WHEN 5000 THEN 'lim:big' ELSE 'lim:none:' || g END,
																		'throughIndex', CASE g WHEN 5000 THEN 1 END) ORDER BY g)
									  FROM generate_series(1, 10000) g), 'none') AS r) s));
SELECT a2_fuzz.expect('read_states: 10,001 requests', $$SELECT a2_read_states((SELECT jsonb_agg(jsonb_build_object('sessionId', 'lim:big')) FROM generate_series(1, 10001) g), 'r')$$, '22023');

-- presence values
SELECT a2_fuzz.expect('presence_set: 10,001 fields', $$SELECT a2_presence_set('lim:ns2', 'p', (SELECT jsonb_object_agg('f' || g, g) FROM generate_series(1, 10001) g), '2026-04-01 00:00:00+00', 1, 60000)::text$$, '22023');
SELECT a2_fuzz.check('  nothing written', NOT EXISTS (SELECT 1 FROM a2_presence WHERE ns = 'lim:ns2'));
SELECT a2_fuzz.expect('presence_set: 10,000 fields', $$SELECT a2_presence_set('lim:ns2', 'p', (SELECT jsonb_object_agg('f' || g, g) FROM generate_series(1, 10000) g), '2026-04-01 00:00:00+00', 1, 60000)::text$$, 'ok');
SELECT a2_fuzz.check('  all 10,000 read back', jsonb_array_length(a2_presence_read('lim:ns2')) = 10000);
ALTER TABLE a2_events RESET (autovacuum_enabled);

\o
\pset footer off
\echo '--- limit checks that failed (expected: none)'
SELECT n, label, detail FROM a2_fuzz.checks WHERE NOT passed ORDER BY n;

DO $$
DECLARE
	total bigint;
	failed bigint;
BEGIN
	SELECT count(*), count(*) FILTER (WHERE NOT passed) INTO total, failed FROM a2_fuzz.checks;
	RAISE NOTICE 'limits: % checks, % failed', total, failed;
	IF failed > 0 THEN
		RAISE EXCEPTION 'limits: FAILED';
	END IF;
END $$;
