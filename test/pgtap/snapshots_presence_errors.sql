--
-- Error contract of a2_put_snapshots, a2_read_state, a2_read_states,
-- a2_presence_set and a2_presence_read (SPEC section 5): every bad input
-- raises its SQLSTATE, and nothing is written -- each error test is paired
-- with a check that every a2 table holds exactly the rows it held before
-- (row counts and contents).  The last part checks the boundary values that
-- must be accepted (2.0 as an integer, 1024-byte names, 10,000 elements).
--
-- Run: pg_prove -d DB test/pgtap/snapshots_presence_errors.sql
-- (DB has CREATE EXTENSION pgtap; CREATE EXTENSION a2;)
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
SELECT plan(215);

SET LOCAL a2.now = '2026-04-01 00:00:00+00';

-- Baseline rows in every table the functions could write to.
SELECT lives_ok($$SELECT a2_append('tap-err', '[{"type": "t"}, {"type": "t"}]')$$,
	'setup: two events');
SELECT lives_ok($$SELECT a2_put_snapshots('tap-err', 'r',
	'[{"index": 1, "state": "one", "pinEventIndexes": [2]}, {"index": 2, "state": "two"}]')$$,
	'setup: a head, a history row and a pin');
SELECT lives_ok($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 1, "g": null}',
	'2026-04-01 00:00:00+00', 1, 600000)$$,
	'setup: a presence value and a tombstone');
SELECT is((SELECT count(*)::int FROM a2_snapshot_pins WHERE session_id = 'tap-err'), 1,
	'setup: the pin exists');

-- Row counts and a digest of the contents of every a2 table.
CREATE FUNCTION tap_a2_rows() RETURNS text LANGUAGE sql AS $$
	SELECT concat_ws(' ',
		'events', (SELECT count(*) FROM a2_events),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_events t)),
		'snapshots', (SELECT count(*) FROM a2_snapshots),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_snapshots t)),
		'history', (SELECT count(*) FROM a2_snapshot_history),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_snapshot_history t)),
		'pins', (SELECT count(*) FROM a2_snapshot_pins),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_snapshot_pins t)),
		'presence', (SELECT count(*) FROM a2_presence),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_presence t)),
		'tombstones', (SELECT count(*) FROM a2_presence_tombstones),
		md5((SELECT coalesce(string_agg(t::text, ',' ORDER BY t::text), '') FROM a2_presence_tombstones t)))
$$;
CREATE TEMP TABLE tap_baseline AS SELECT tap_a2_rows() AS fp;

-- throws_ok with the SQLSTATE, then "nothing written".
CREATE FUNCTION tap_rejects(sql text, sqlstate text, description text)
RETURNS SETOF text LANGUAGE plpgsql AS $$
BEGIN
	RETURN NEXT throws_ok(sql, sqlstate::char(5), NULL, description);
	RETURN NEXT is(tap_a2_rows(), (SELECT fp FROM tap_baseline),
				   description || ': nothing written');
END
$$;

--
-- a2_put_snapshots(session_id, reducer_name, snapshots)
--
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots(NULL, 'r', '[]')$$,
	'22004', 'put_snapshots: NULL session_id');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', NULL, '[]')$$,
	'22004', 'put_snapshots: NULL reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', NULL)$$,
	'22004', 'put_snapshots: NULL snapshots');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('', 'r', '[{"index": 5, "state": 1}]')$$,
	'22023', 'put_snapshots: empty session_id');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots(repeat('s', 1025), 'r', '[{"index": 5, "state": 1}]')$$,
	'22023', 'put_snapshots: 1025-byte session_id');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots(repeat('é', 513), 'r', '[{"index": 5, "state": 1}]')$$,
	'22023', 'put_snapshots: session_id of 513 characters but 1026 bytes');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', '', '[{"index": 5, "state": 1}]')$$,
	'22023', 'put_snapshots: empty reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', repeat('r', 1025), '[{"index": 5, "state": 1}]')$$,
	'22023', 'put_snapshots: 1025-byte reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '{"index": 5, "state": 1}')$$,
	'22023', 'put_snapshots: snapshots is an object');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '5')$$,
	'22023', 'put_snapshots: snapshots is a number');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '"[]"')$$,
	'22023', 'put_snapshots: snapshots is a string');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', 'null')$$,
	'22023', 'put_snapshots: snapshots is JSON null');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[5]')$$,
	'22023', 'put_snapshots: element is a number');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[null]')$$,
	'22023', 'put_snapshots: element is null');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[[{"index": 5, "state": 1}]]')$$,
	'22023', 'put_snapshots: element is an array');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"state": 1}]')$$,
	'22023', 'put_snapshots: index missing');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": null, "state": 1}]')$$,
	'22023', 'put_snapshots: index null (required, not optional)');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": "5", "state": 1}]')$$,
	'22023', 'put_snapshots: index is a string');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": true, "state": 1}]')$$,
	'22023', 'put_snapshots: index is a boolean');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": -1, "state": 1}]')$$,
	'22023', 'put_snapshots: negative index');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 2.5, "state": 1}]')$$,
	'22023', 'put_snapshots: fractional index 2.5');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 9223372036854775808, "state": 1}]')$$,
	'22023', 'put_snapshots: index beyond bigint');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 1e20, "state": 1}]')$$,
	'22023', 'put_snapshots: index 1e20');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": "1"}]')$$,
	'22023', 'put_snapshots: pinEventIndexes is a string');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": 1}]')$$,
	'22023', 'put_snapshots: pinEventIndexes is a number');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": {"0": 1}}]')$$,
	'22023', 'put_snapshots: pinEventIndexes is an object');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": [0]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains 0');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": [-1]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains -1');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": [1.5]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains 1.5');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": ["1"]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains a string');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": [null]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains null');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 5, "state": 1, "pinEventIndexes": [9223372036854775808]}]')$$,
	'22023', 'put_snapshots: pinEventIndexes contains a value beyond bigint');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r',
	'[{"index": 5, "state": "ok", "pinEventIndexes": [1]}, {"index": -1, "state": 1}]')$$,
	'22023', 'put_snapshots: a bad second write rejects the valid first one too');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r',
	'[{"index": 5, "state": "ok", "pinEventIndexes": [1]}, {"index": 6, "state": 1, "pinEventIndexes": [1, 0]}]')$$,
	'22023', 'put_snapshots: a bad pin in the second write rejects the first one too');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r',
	(SELECT jsonb_build_array(jsonb_build_object('index', 5, 'state', 1,
		'pinEventIndexes', jsonb_agg(1))) FROM generate_series(1, 10001)))$$,
	'22023', 'put_snapshots: 10,001 pinEventIndexes');
SELECT * FROM tap_rejects($$SELECT a2_put_snapshots('tap-err', 'r',
	(SELECT jsonb_agg(jsonb_build_object('index', i, 'state', i)) FROM generate_series(1, 10001) i))$$,
	'22023', 'put_snapshots: 10,001 snapshots');

--
-- a2_read_state(session_id, reducer_name, through_index, snapshot_through_index)
--
SELECT * FROM tap_rejects($$SELECT a2_read_state(NULL, 'r')$$,
	'22004', 'read_state: NULL session_id');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', NULL)$$,
	'22004', 'read_state: NULL reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_state('', 'r')$$,
	'22023', 'read_state: empty session_id');
SELECT * FROM tap_rejects($$SELECT a2_read_state(repeat('s', 1025), 'r')$$,
	'22023', 'read_state: 1025-byte session_id');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', '')$$,
	'22023', 'read_state: empty reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', repeat('r', 1025))$$,
	'22023', 'read_state: 1025-byte reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', 'r', -1)$$,
	'22023', 'read_state: negative through_index');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', 'r', NULL, -1)$$,
	'22023', 'read_state: negative snapshot_through_index');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', 'r', 3, -1)$$,
	'22023', 'read_state: negative snapshot_through_index with a valid through_index');
SELECT * FROM tap_rejects($$SELECT a2_read_state('tap-err', 'r', -9223372036854775808)$$,
	'22023', 'read_state: through_index at bigint minimum');

--
-- a2_read_states(requests, reducer_name)
--
SELECT * FROM tap_rejects($$SELECT a2_read_states(NULL, 'r')$$,
	'22004', 'read_states: NULL requests');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[]', NULL)$$,
	'22004', 'read_states: NULL reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err"}]', '')$$,
	'22023', 'read_states: empty reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err"}]', repeat('r', 1025))$$,
	'22023', 'read_states: 1025-byte reducer_name');
SELECT * FROM tap_rejects($$SELECT a2_read_states('{"sessionId": "tap-err"}', 'r')$$,
	'22023', 'read_states: requests is an object');
SELECT * FROM tap_rejects($$SELECT a2_read_states('"tap-err"', 'r')$$,
	'22023', 'read_states: requests is a string');
SELECT * FROM tap_rejects($$SELECT a2_read_states('null', 'r')$$,
	'22023', 'read_states: requests is JSON null');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[1]', 'r')$$,
	'22023', 'read_states: request is a number');
SELECT * FROM tap_rejects($$SELECT a2_read_states('["tap-err"]', 'r')$$,
	'22023', 'read_states: request is a bare session id string');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[null]', 'r')$$,
	'22023', 'read_states: request is null');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{}]', 'r')$$,
	'22023', 'read_states: request without sessionId');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"throughIndex": 1}]', 'r')$$,
	'22023', 'read_states: request with bounds but without sessionId');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": null}]', 'r')$$,
	'22023', 'read_states: sessionId null (required)');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": 5}]', 'r')$$,
	'22023', 'read_states: sessionId is a number');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": ""}]', 'r')$$,
	'22023', 'read_states: empty sessionId');
SELECT * FROM tap_rejects($$SELECT a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', repeat('s', 1025))), 'r')$$,
	'22023', 'read_states: 1025-byte sessionId');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err", "throughIndex": -1}]', 'r')$$,
	'22023', 'read_states: negative throughIndex');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err", "snapshotThroughIndex": -1}]', 'r')$$,
	'22023', 'read_states: negative snapshotThroughIndex');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err", "throughIndex": 1.5}]', 'r')$$,
	'22023', 'read_states: fractional throughIndex');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err", "throughIndex": "3"}]', 'r')$$,
	'22023', 'read_states: throughIndex is a string');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err", "snapshotThroughIndex": 9223372036854775808}]', 'r')$$,
	'22023', 'read_states: snapshotThroughIndex beyond bigint');
SELECT * FROM tap_rejects($$SELECT a2_read_states('[{"sessionId": "tap-err"}, {"sessionId": "tap-err", "throughIndex": -1}]', 'r')$$,
	'22023', 'read_states: a bad second request fails the call');
SELECT * FROM tap_rejects($$SELECT a2_read_states(
	(SELECT jsonb_agg(jsonb_build_object('sessionId', 'tap-err')) FROM generate_series(1, 10001)), 'r')$$,
	'22023', 'read_states: 10,001 requests');

--
-- a2_presence_set(ns, participant, values, at, seen, ttl_ms)
--
SELECT * FROM tap_rejects($$SELECT a2_presence_set(NULL, 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22004', 'presence_set: NULL ns');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', NULL, '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22004', 'presence_set: NULL participant');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', NULL, '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22004', 'presence_set: NULL values');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', NULL, 2, 1000)$$,
	'22004', 'presence_set: NULL at');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', '2026-04-01 00:00:01+00', NULL, 1000)$$,
	'22004', 'presence_set: NULL seen');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, NULL)$$,
	'22004', 'presence_set: NULL ttl_ms');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('', 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: empty ns');
SELECT * FROM tap_rejects($$SELECT a2_presence_set(repeat('n', 1025), 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: 1025-byte ns');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', '', '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: empty participant');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', repeat('p', 1025), '{"f": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: 1025-byte participant');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '[{"f": 2}]', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: values is an array');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '"f"', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: values is a string');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '2', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: values is a number');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', 'null', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: values is JSON null');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"": 2}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: empty field name');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', jsonb_build_object(repeat('f', 1025), 2), '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: 1025-byte field name');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', jsonb_build_object('f', 2, 'g', 3, repeat('h', 1025), 4), '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: a bad field name rejects the valid fields too');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": null, "": 1}', '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: a bad field name rejects a delete in the same call');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, -1)$$,
	'22023', 'presence_set: negative ttl_ms');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', '2026-04-01 00:00:01+00', 2, 9223372036854775807)$$,
	'22023', 'presence_set: now + ttl_ms overflows');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": null}', '2026-04-01 00:00:01+00', 2, 9223372036854775807)$$,
	'22023', 'presence_set: now + ttl_ms overflows for a delete');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', 'infinity', 2, 1000)$$,
	'22023', 'presence_set: at = infinity');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p', '{"f": 2}', '-infinity', 2, 1000)$$,
	'22023', 'presence_set: at = -infinity');
SELECT * FROM tap_rejects($$SELECT a2_presence_set('tap-ns', 'p',
	(SELECT jsonb_object_agg('f' || i, i) FROM generate_series(1, 10001) i), '2026-04-01 00:00:01+00', 2, 1000)$$,
	'22023', 'presence_set: 10,001 fields in values');

--
-- a2_presence_read(ns)
--
SELECT * FROM tap_rejects($$SELECT a2_presence_read(NULL)$$,
	'22004', 'presence_read: NULL ns');
SELECT * FROM tap_rejects($$SELECT a2_presence_read('')$$,
	'22023', 'presence_read: empty ns');
SELECT * FROM tap_rejects($$SELECT a2_presence_read(repeat('n', 1025))$$,
	'22023', 'presence_read: 1025-byte ns');

--
-- The boundaries just inside the limits are accepted.
--
SELECT lives_ok($$SELECT a2_put_snapshots('tap-err', 'r', '[{"index": 3.0, "state": "three", "pinEventIndexes": [2.0]}]')$$,
	'put_snapshots: index 3.0 and pin 2.0 count as integers');
SELECT isnt(tap_a2_rows(), (SELECT fp FROM tap_baseline),
	'the "nothing written" check does see a write');
SELECT results_eq($$SELECT up_to_index FROM a2_snapshots WHERE session_id = 'tap-err' AND reducer_name = 'r'$$,
	$$VALUES (3::bigint)$$, 'put_snapshots: 3.0 became head 3');
SELECT results_eq($$SELECT event_index, up_to_index FROM a2_snapshot_pins WHERE session_id = 'tap-err' ORDER BY 2$$,
	$$VALUES (2::bigint, 1::bigint), (2, 3)$$, 'put_snapshots: pin 2.0 recorded as event 2');
SELECT lives_ok($$SELECT a2_put_snapshots('tap-ok', 'r', '[{"index": 1, "state": 1, "pinEventIndexes": null}]')$$,
	'put_snapshots: pinEventIndexes null means absent');
SELECT lives_ok($$SELECT a2_put_snapshots(repeat('é', 512), repeat('r', 1024), '[{"index": 1, "state": 1}]')$$,
	'put_snapshots: 1024-byte session_id (512 two-byte characters) and reducer_name');
SELECT is((SELECT count(*)::int FROM a2_snapshots WHERE session_id = repeat('é', 512)), 1,
	'put_snapshots: the 1024-byte session got its head');
SELECT lives_ok($$SELECT a2_put_snapshots('tap-big', 'r',
	(SELECT jsonb_agg(jsonb_build_object('index', i, 'state', i)) FROM generate_series(1, 10000) i))$$,
	'put_snapshots: 10,000 snapshots');
SELECT results_eq($$SELECT up_to_index FROM a2_snapshots WHERE session_id = 'tap-big'$$,
	$$VALUES (10000::bigint)$$, 'put_snapshots: the greatest of 10,000 is the head');
SELECT lives_ok($$SELECT a2_put_snapshots('tap-big', 'r',
	(SELECT jsonb_build_array(jsonb_build_object('index', 1, 'state', 1,
		'pinEventIndexes', jsonb_agg(i))) FROM generate_series(1, 10000) i))$$,
	'put_snapshots: 10,000 pinEventIndexes');
SELECT is(a2_read_state('tap-err', 'r', 0, 0), '{"headIndex": 3, "snapshot": null, "events": []}'::jsonb,
	'read_state: bounds 0 accepted');
SELECT is(a2_read_states('[{"sessionId": "tap-err", "throughIndex": 2.0, "snapshotThroughIndex": 1.0}]', 'r'),
	jsonb_build_array(a2_read_state('tap-err', 'r', 2, 1)),
	'read_states: 2.0 and 1.0 count as integers');
SELECT is(a2_read_states('[{"sessionId": "tap-err", "throughIndex": null, "snapshotThroughIndex": null}]', 'r'),
	jsonb_build_array(a2_read_state('tap-err', 'r')),
	'read_states: null bounds mean absent');
SELECT is(jsonb_array_length(a2_read_states(
	(SELECT jsonb_agg(jsonb_build_object('sessionId', 'tap-err')) FROM generate_series(1, 10000)), 'r')),
	10000, 'read_states: 10,000 requests, 10,000 results');
SELECT is(a2_read_state(repeat('s', 1024), repeat('r', 1024)), '{"headIndex": null, "snapshot": null, "events": []}'::jsonb,
	'read_state: 1024-byte session_id and reducer_name');
SELECT lives_ok($$SELECT a2_presence_set(repeat('n', 1024), repeat('p', 1024),
	jsonb_build_object(repeat('f', 1024), 1), '2026-04-01 00:00:01+00', 2, 0)$$,
	'presence_set: 1024-byte ns, participant and field; ttl_ms 0');
SELECT lives_ok($$SELECT a2_presence_set('tap-big', 'p',
	(SELECT jsonb_object_agg('f' || i, i) FROM generate_series(1, 10000) i), '2026-04-01 00:00:01+00', 2, 1000)$$,
	'presence_set: 10,000 fields');
SELECT is(jsonb_array_length(a2_presence_read('tap-big')), 10000,
	'presence_read: the 10,000 fields are live');
SELECT is(a2_presence_read(repeat('n', 1024)), '[]'::jsonb,
	'presence_read: 1024-byte ns (its ttl 0 row is already expired)');

SELECT * FROM finish();
ROLLBACK;
