-- errors.sql: the error contract of SPEC section 5 for a2_append, a2_read,
-- a2_claim, a2_renew, a2_complete and a2_fail.
--
-- Every error check is a throws_ok(sql, 'SQLSTATE', ...) paired with a check
-- that nothing was written: errors_check() runs throws_ok and then compares
-- a fingerprint of every a2 table (row counts plus an md5 of every row) with
-- the one taken just before.  The boundary values that must be accepted
-- (1024 bytes, 10,000 elements, 2.0, ttl_ms 0, JSON null = absent, ...) are
-- checked next to the ones that must be rejected.
BEGIN;
SELECT plan(460);

SET LOCAL a2.now = '2026-01-01 00:00:00+00';

-- Fingerprint of everything a2 stores.
CREATE FUNCTION errors_fp() RETURNS text LANGUAGE sql AS $f$
	SELECT format('events=%s snapshots=%s history=%s pins=%s presence=%s tombstones=%s md5=%s',
		(SELECT count(*) FROM a2_events),
		(SELECT count(*) FROM a2_snapshots),
		(SELECT count(*) FROM a2_snapshot_history),
		(SELECT count(*) FROM a2_snapshot_pins),
		(SELECT count(*) FROM a2_presence),
		(SELECT count(*) FROM a2_presence_tombstones),
		md5(concat_ws(E'\f',
			(SELECT string_agg(t::text, E'\n' ORDER BY t.session_id, t.idx) FROM a2_events t),
			(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshots t),
			(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_history t),
			(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_pins t),
			(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_presence t),
			(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_presence_tombstones t))))
$f$;

-- throws_ok plus "nothing was written": two tests per call.
CREATE FUNCTION errors_check(query text, sqlstate text, descr text)
RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	before text := errors_fp();
BEGIN
	RETURN NEXT throws_ok(query, sqlstate::char(5), NULL, descr);
	RETURN NEXT is(errors_fp(), before, descr || ': nothing written');
END
$f$;

-- A row of a2_events as jsonb, for checks on stored columns.
CREATE FUNCTION errors_row(s text, i bigint) RETURNS jsonb LANGUAGE sql AS $f$
	SELECT to_jsonb(e) FROM a2_events e WHERE e.session_id = s AND e.idx = i
$f$;

------------------------------------------------------------------------
-- Setup.  Session errors-s (event ids err-e1, ...):
--   1 err-e1    claimed attempt 1, completed; returned err-e1c1
--   2 err-e2    lane L, claimed attempt 1 by h, live lease
--   3 err-e3    claimed attempt 1, dead-lettered
--   4 err-e1c1  child of {1, 1}, unclaimed
-- Session errors-other holds id err-o1.
------------------------------------------------------------------------
SELECT is(jsonb_path_query_array(
		a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"id":"err-e2","type":"t","lane":"L"},{"id":"err-e3","type":"t"}]'),
		'$.events[*].index'),
	'[1,2,3]', 'setup: append e1, e2, e3');
SELECT is(jsonb_path_query_array(a2_claim('errors-s', 'h', 60000), '$.events[*].index'),
	'[1,2,3]', 'setup: claim all three');
SELECT is(a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"child"}]')->'events'->0->'index',
	'4', 'setup: complete e1 returning e1c1');
SELECT is(a2_fail('errors-s', 3, 1, 'boom', 1)->>'outcome', 'dead_lettered', 'setup: dead-letter e3');
SELECT is(a2_append('errors-other', '[{"id":"err-o1","type":"t"}]')->'events'->0->'index',
	'1', 'setup: o1 in another session');

------------------------------------------------------------------------
-- NULL for a required argument: 22004
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_append(NULL, '[]')$$, '22004', 'append: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', NULL)$$, '22004', 'append: NULL events');
SELECT * FROM errors_check($$SELECT a2_read(NULL)$$, '22004', 'read: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_claim(NULL, 'h', 1000)$$, '22004', 'claim: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', NULL, 1000)$$, '22004', 'claim: NULL holder');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', NULL)$$, '22004', 'claim: NULL ttl_ms');
SELECT * FROM errors_check($$SELECT a2_renew(NULL, 'h', '[]', 1000)$$, '22004', 'renew: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', NULL, '[{"index":2,"attempt":1}]', 1000)$$, '22004', 'renew: NULL holder');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', NULL, 1000)$$, '22004', 'renew: NULL claims');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1}]', NULL)$$, '22004', 'renew: NULL ttl_ms');
SELECT * FROM errors_check($$SELECT a2_complete(NULL, 2, 1)$$, '22004', 'complete: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', NULL, 1)$$, '22004', 'complete: NULL event_index');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, NULL)$$, '22004', 'complete: NULL attempt');
SELECT * FROM errors_check($$SELECT a2_fail(NULL, 2, 1, 'x', 3)$$, '22004', 'fail: NULL session_id');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', NULL, 1, 'x', 3)$$, '22004', 'fail: NULL event_index');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, NULL, 'x', 3)$$, '22004', 'fail: NULL attempt');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, 1, 'x', NULL)$$, '22004', 'fail: NULL max_failures');
-- every argument NULL: still an error, never a NULL result
SELECT * FROM errors_check($$SELECT a2_claim(NULL, NULL, NULL, NULL, NULL)$$, '22004', 'claim: all arguments NULL');
SELECT * FROM errors_check($$SELECT a2_renew(NULL, NULL, NULL, NULL, NULL)$$, '22004', 'renew: all arguments NULL');
SELECT * FROM errors_check($$SELECT a2_complete(NULL, NULL, NULL, NULL)$$, '22004', 'complete: all arguments NULL');
SELECT * FROM errors_check($$SELECT a2_fail(NULL, NULL, NULL, NULL, NULL)$$, '22004', 'fail: all arguments NULL');
SELECT * FROM errors_check($$SELECT a2_read(NULL, NULL, NULL, NULL)$$, '22004', 'read: all arguments NULL');

------------------------------------------------------------------------
-- Names: empty, and more than 1024 bytes: 22023
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_append('', '[{"type":"t"}]')$$, '22023', 'append: empty session_id');
SELECT * FROM errors_check($$SELECT a2_append('', '[]')$$, '22023', 'append: empty session_id, empty batch');
SELECT * FROM errors_check($$SELECT a2_read('')$$, '22023', 'read: empty session_id');
SELECT * FROM errors_check($$SELECT a2_claim('', 'h', 1000)$$, '22023', 'claim: empty session_id');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', '', 1000)$$, '22023', 'claim: empty holder');
SELECT * FROM errors_check($$SELECT a2_renew('', 'h', '[]', 1000)$$, '22023', 'renew: empty session_id');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', '', '[{"index":2,"attempt":1}]', 1000)$$, '22023', 'renew: empty holder');
SELECT * FROM errors_check($$SELECT a2_complete('', 2, 1)$$, '22023', 'complete: empty session_id');
SELECT * FROM errors_check($$SELECT a2_fail('', 2, 1, 'x', 3)$$, '22023', 'fail: empty session_id');

SELECT * FROM errors_check($$SELECT a2_append(repeat('s', 1025), '[{"type":"t"}]')$$, '22023', 'append: session_id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_append(repeat('é', 512) || 's', '[{"type":"t"}]')$$, '22023', 'append: session_id of 1025 bytes in 513 characters');
SELECT * FROM errors_check($$SELECT a2_read(repeat('s', 1025))$$, '22023', 'read: session_id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_claim(repeat('s', 1025), 'h', 1000)$$, '22023', 'claim: session_id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', repeat('h', 1025), 1000)$$, '22023', 'claim: holder of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_renew(repeat('s', 1025), 'h', '[]', 1000)$$, '22023', 'renew: session_id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', repeat('h', 1025), '[{"index":2,"attempt":1}]', 1000)$$, '22023', 'renew: holder of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_complete(repeat('s', 1025), 2, 1)$$, '22023', 'complete: session_id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_fail(repeat('s', 1025), 2, 1, 'x', 3)$$, '22023', 'fail: session_id of 1025 bytes');

------------------------------------------------------------------------
-- a2_append: shape (22023)
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '{}')$$, '22023', 'append: events is an object');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '"x"')$$, '22023', 'append: events is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '1')$$, '22023', 'append: events is a number');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', 'null')$$, '22023', 'append: events is JSON null');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '{"type":"t"}')$$, '22023', 'append: events is a single event object');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[1]')$$, '22023', 'append: element is a number');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '["t"]')$$, '22023', 'append: element is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[[]]')$$, '22023', 'append: element is an array');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[null]')$$, '22023', 'append: element is JSON null');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t"},2]')$$, '22023', 'append: second element is a number');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{}]')$$, '22023', 'append: missing type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"payload":1}]')$$, '22023', 'append: missing type, payload given');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":1}]')$$, '22023', 'append: numeric type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":null}]')$$, '22023', 'append: JSON null type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":["t"]}]')$$, '22023', 'append: array type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":true}]')$$, '22023', 'append: boolean type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","id":1}]')$$, '22023', 'append: numeric id');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","id":true}]')$$, '22023', 'append: boolean id');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","id":{}}]')$$, '22023', 'append: object id');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","id":""}]')$$, '22023', 'append: empty id');
SELECT * FROM errors_check(format($$SELECT a2_append('errors-s', %L)$$,
	jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1025)))),
	'22023', 'append: id of 1025 bytes');
SELECT * FROM errors_check(format($$SELECT a2_append('errors-s', %L)$$,
	jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('é', 512) || 'i'))),
	'22023', 'append: id of 1025 bytes in 513 characters');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","lane":1}]')$$, '22023', 'append: numeric lane');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","lane":false}]')$$, '22023', 'append: boolean lane');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","lane":["L"]}]')$$, '22023', 'append: array lane');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","lane":""}]')$$, '22023', 'append: empty lane');
SELECT * FROM errors_check(format($$SELECT a2_append('errors-s', %L)$$,
	jsonb_build_array(jsonb_build_object('type', 't', 'lane', repeat('l', 1025)))),
	'22023', 'append: lane of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","settled":"true"}]')$$, '22023', 'append: settled is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","settled":1}]')$$, '22023', 'append: settled is a number');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","settled":{}}]')$$, '22023', 'append: settled is an object');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":1}]')$$, '22023', 'append: cause is a number');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":"2:1"}]')$$, '22023', 'append: cause is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":[2,1]}]')$$, '22023', 'append: cause is an array');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":true}]')$$, '22023', 'append: cause is a boolean');

------------------------------------------------------------------------
-- a2_append: numbers (22023).  Parent 2 is live at attempt 1, so only the
-- rule under test can fail.
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"attempt":1}}]')$$, '22023', 'append: cause.index missing');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":null,"attempt":1}}]')$$, '22023', 'append: cause.index JSON null');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":0,"attempt":1}}]')$$, '22023', 'append: cause.index 0');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":-1,"attempt":1}}]')$$, '22023', 'append: cause.index -1');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2.5,"attempt":1}}]')$$, '22023', 'append: cause.index 2.5');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":"2","attempt":1}}]')$$, '22023', 'append: cause.index is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":1e30,"attempt":1}}]')$$, '22023', 'append: cause.index 1e30');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":9223372036854775808,"attempt":1}}]')$$, '22023', 'append: cause.index 2^63');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":-1e30,"attempt":1}}]')$$, '22023', 'append: cause.index -1e30');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2}}]')$$, '22023', 'append: cause.attempt missing');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":null}}]')$$, '22023', 'append: cause.attempt JSON null');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":0}}]')$$, '22023', 'append: cause.attempt 0');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1.5}}]')$$, '22023', 'append: cause.attempt 1.5');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":"1"}}]')$$, '22023', 'append: cause.attempt is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1e30}}]')$$, '22023', 'append: cause.attempt 1e30');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":0}}]')$$, '22023', 'append: batchSize 0');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":-3}}]')$$, '22023', 'append: batchSize -3');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":2.5}}]')$$, '22023', 'append: batchSize 2.5');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":"2"}}]')$$, '22023', 'append: batchSize is a string');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":1e30}}]')$$, '22023', 'append: batchSize 1e30');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchSize":true}}]')$$, '22023', 'append: batchSize is a boolean');

------------------------------------------------------------------------
-- a2_append: sizes, and validation before replay detection
------------------------------------------------------------------------
SELECT * FROM errors_check(format($$SELECT a2_append('errors-s', %L)$$,
	(SELECT jsonb_agg(jsonb_build_object('type', 't')) FROM generate_series(1, 10001))),
	'22023', 'append: 10,001 events');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"id":"err-e2","type":"t","lane":"L","settled":"no"}]')$$,
	'22023', 'append: a replay with one malformed element is rejected as malformed');

------------------------------------------------------------------------
-- a2_append: Z2001, Z2002, Z2003
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-n1","type":"t"},{"id":"err-n1","type":"t"}]')$$, 'Z2001', 'append: duplicate ids in the batch');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"id":"err-e1","type":"t"}]')$$, 'Z2001', 'append: a stored id twice in the batch');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-o1","type":"t"}]')$$, 'Z2001', 'append: id stored in another session');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"id":"err-o1","type":"t"}]')$$, 'Z2001', 'append: one id here, one in another session');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"id":"err-fresh-1","type":"t"}]')$$, 'Z2001', 'append: stored and fresh ids mixed');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t"},{"type":"t"}]')$$, 'Z2001', 'append: stored id mixed with an id-less event');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"other"}]')$$, 'Z2001', 'append: replay with a different type');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1","type":"t","payload":1}]')$$, 'Z2001', 'append: replay with a different payload');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e2","type":"t"}]')$$, 'Z2001', 'append: replay without the stored lane');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e2","type":"t","lane":"M"}]')$$, 'Z2001', 'append: replay with a different lane');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1c1","type":"child"}]')$$, 'Z2001', 'append: replay without the stored cause');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"id":"err-e1c1","type":"child","cause":{"index":1,"attempt":1,"batchSize":1}}]')$$, 'Z2001', 'append: replay with a different cause');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":2,"attempt":2}}]')$$, 'Z2002', 'append: cause attempt ahead of the parent');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":4,"attempt":1}}]')$$, 'Z2002', 'append: cause attempt on a never-claimed parent');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":3,"attempt":1}}]')$$, 'Z2002', 'append: cause on a dead-lettered parent');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t"},{"type":"t","cause":{"index":2,"attempt":1}},{"type":"t","cause":{"index":2,"attempt":3}}]')$$, 'Z2002', 'append: one stale cause fails the whole batch');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":99,"attempt":1}}]')$$, 'Z2003', 'append: cause names a missing parent');
SELECT * FROM errors_check($$SELECT a2_append('errors-other', '[{"type":"t","cause":{"index":2,"attempt":1}}]')$$, 'Z2003', 'append: cause names an index of another session');
SELECT * FROM errors_check($$SELECT a2_append('errors-s', '[{"type":"t","cause":{"index":9223372036854775807,"attempt":1}}]')$$, 'Z2003', 'append: cause.index 2^63-1 is a valid number (the parent is missing)');

------------------------------------------------------------------------
-- a2_read
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_read('errors-s', -1)$$, '22023', 'read: after_index -1');
SELECT * FROM errors_check($$SELECT a2_read('errors-s', NULL, -1)$$, '22023', 'read: through_index -1');
SELECT * FROM errors_check($$SELECT a2_read('errors-s', NULL, NULL, 0)$$, '22023', 'read: max_events 0');
SELECT * FROM errors_check($$SELECT a2_read('errors-s', NULL, NULL, -1)$$, '22023', 'read: max_events -1');

------------------------------------------------------------------------
-- a2_claim
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', -1)$$, '22023', 'claim: ttl_ms -1');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', -1, '2026-01-01 00:01:00+00')$$, '22023', 'claim: ttl_ms -1 with expires_at');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 9223372036854775807)$$, '22023', 'claim: now + ttl_ms overflows');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 9223372036854775807 - 1767225599999)$$, '22023', 'claim: now + ttl_ms overflows by one');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, 'infinity')$$, '22023', 'claim: expires_at infinity');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, '-infinity')$$, '22023', 'claim: expires_at -infinity');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, NULL, '{0}')$$, '22023', 'claim: exclude_indexes {0}');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, NULL, '{4,-1}')$$, '22023', 'claim: exclude_indexes with -1');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, NULL, '{4,NULL}')$$, '22004', 'claim: exclude_indexes with a NULL element');
SELECT * FROM errors_check($$SELECT a2_claim('errors-s', 'h', 1000, NULL, (SELECT array_agg(i) FROM generate_series(1::bigint, 10001) i))$$,
	'22023', 'claim: 10,001 exclude_indexes');

------------------------------------------------------------------------
-- a2_renew
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '{}', 1000)$$, '22023', 'renew: claims is an object');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '"x"', 1000)$$, '22023', 'renew: claims is a string');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', 'null', 1000)$$, '22023', 'renew: claims is JSON null');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[2]', 1000)$$, '22023', 'renew: element is a number');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[null]', 1000)$$, '22023', 'renew: element is JSON null');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"attempt":1}]', 1000)$$, '22023', 'renew: index missing');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":null,"attempt":1}]', 1000)$$, '22023', 'renew: index JSON null');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":0,"attempt":1}]', 1000)$$, '22023', 'renew: index 0');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2.5,"attempt":1}]', 1000)$$, '22023', 'renew: index 2.5');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":"2","attempt":1}]', 1000)$$, '22023', 'renew: index is a string');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":1e30,"attempt":1}]', 1000)$$, '22023', 'renew: index 1e30');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2}]', 1000)$$, '22023', 'renew: attempt missing');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":0}]', 1000)$$, '22023', 'renew: attempt 0');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1.5}]', 1000)$$, '22023', 'renew: attempt 1.5');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1e30}]', 1000)$$, '22023', 'renew: attempt 1e30');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1},{"index":-2,"attempt":1}]', 1000)$$, '22023', 'renew: second claim has index -2');
SELECT * FROM errors_check(format($$SELECT a2_renew('errors-s', 'h', %L, 1000)$$,
	(SELECT jsonb_agg(jsonb_build_object('index', i, 'attempt', 1)) FROM generate_series(1, 10001) i)),
	'22023', 'renew: 10,001 claims');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1}]', -1)$$, '22023', 'renew: ttl_ms -1');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1}]', 9223372036854775807)$$, '22023', 'renew: now + ttl_ms overflows');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1}]', 1000, 'infinity')$$, '22023', 'renew: expires_at infinity');
SELECT * FROM errors_check($$SELECT a2_renew('errors-s', 'h', '[{"index":2,"attempt":1}]', 1000, '-infinity')$$, '22023', 'renew: expires_at -infinity');

CREATE TEMP TABLE errors_rows_before AS
	SELECT i, errors_row('errors-s', i) AS r FROM generate_series(1, 4) i;

------------------------------------------------------------------------
-- a2_complete (event 2 is live at attempt 1: only the rule under test
-- can fail, and the stored row must stay as it is)
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 0, 1)$$, '22023', 'complete: event_index 0');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', -2, 1)$$, '22023', 'complete: event_index -2');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 0)$$, '22023', 'complete: attempt 0');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, -1)$$, '22023', 'complete: attempt -1');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '{}')$$, '22023', 'complete: events is an object');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '"x"')$$, '22023', 'complete: events is a string');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, 'null')$$, '22023', 'complete: events is JSON null');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[1]')$$, '22023', 'complete: element is a number');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[null]')$$, '22023', 'complete: element is JSON null');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"type":"t"}]')$$, '22023', 'complete: returned event without an id');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":null,"type":"t"}]')$$, '22023', 'complete: returned event with a JSON null id');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":7,"type":"t"}]')$$, '22023', 'complete: numeric id');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"","type":"t"}]')$$, '22023', 'complete: empty id');
SELECT * FROM errors_check(format($$SELECT a2_complete('errors-s', 2, 1, %L)$$,
	jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1025)))),
	'22023', 'complete: id of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1"}]')$$, '22023', 'complete: missing type');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":1}]')$$, '22023', 'complete: numeric type');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t","cause":{"index":2,"attempt":1}}]')$$, '22023', 'complete: cause is not accepted');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t","cause":"x"}]')$$, '22023', 'complete: malformed cause');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t","lane":1}]')$$, '22023', 'complete: numeric lane');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t","lane":""}]')$$, '22023', 'complete: empty lane');
SELECT * FROM errors_check(format($$SELECT a2_complete('errors-s', 2, 1, %L)$$,
	jsonb_build_array(jsonb_build_object('type', 't', 'id', 'r1', 'lane', repeat('l', 1025)))),
	'22023', 'complete: lane of 1025 bytes');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t","settled":"yes"}]')$$, '22023', 'complete: settled is a string');
SELECT * FROM errors_check(format($$SELECT a2_complete('errors-s', 2, 1, %L)$$,
	(SELECT jsonb_agg(jsonb_build_object('id', 'err-r' || i, 'type', 't')) FROM generate_series(1, 10001) i)),
	'22023', 'complete: 10,001 returned events');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 99, 1)$$, 'Z2003', 'complete: no event at index 99');
SELECT * FROM errors_check($$SELECT a2_complete('errors-nosuch', 1, 1)$$, 'Z2003', 'complete: no such session');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-d1","type":"t"},{"id":"err-d1","type":"t"}]')$$, 'Z2001', 'complete: duplicate returned ids');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-r1","type":"t"},{"id":"err-o1","type":"t"}]')$$, 'Z2001', 'complete: returned id exists in another session');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-e3","type":"t"}]')$$, 'Z2001', 'complete: returned id exists in this session');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 2, 1, '[{"id":"err-e2","type":"t"}]')$$, 'Z2001', 'complete: returned id is the completed event''s own');
-- event 1 was completed by attempt 1 returning e1c1: a retry must repeat it
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1)$$, 'Z2001', 'complete retry: no events instead of e1c1');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-zz","type":"child"}]')$$, 'Z2001', 'complete retry: another id');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"child"},{"id":"err-e1c2","type":"child"}]')$$, 'Z2001', 'complete retry: one event more');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"other"}]')$$, 'Z2001', 'complete retry: another type');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"child","payload":{"a":1}}]')$$, 'Z2001', 'complete retry: another payload');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"child","lane":"L"}]')$$, 'Z2001', 'complete retry: another lane');
SELECT * FROM errors_check($$SELECT a2_complete('errors-s', 1, 1, '[{"id":"err-e1c1","type":"child"},{"id":"err-e1c1","type":"child"}]')$$, 'Z2001', 'complete retry: duplicate ids');

------------------------------------------------------------------------
-- a2_fail
------------------------------------------------------------------------
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 0, 1, 'x', 3)$$, '22023', 'fail: event_index 0');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, 0, 'x', 3)$$, '22023', 'fail: attempt 0');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, -1, 'x', 3)$$, '22023', 'fail: attempt -1');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, 1, 'x', 0)$$, '22023', 'fail: max_failures 0');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 2, 1, 'x', -5)$$, '22023', 'fail: max_failures -5');
SELECT * FROM errors_check($$SELECT a2_fail('errors-s', 99, 1, 'x', 3)$$, 'Z2003', 'fail: no event at index 99');
SELECT * FROM errors_check($$SELECT a2_fail('errors-nosuch', 1, 1, 'x', 3)$$, 'Z2003', 'fail: no such session');
SELECT is((SELECT jsonb_agg(errors_row('errors-s', i) ORDER BY i) FROM generate_series(1, 4) i),
	(SELECT jsonb_agg(r ORDER BY i) FROM errors_rows_before),
	'complete and fail errors: the stored rows 1-4 are unchanged');

------------------------------------------------------------------------
-- XX001: stored rows whose cause violates the contract
------------------------------------------------------------------------
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, cause, lane_ready)
VALUES ('errors-corrupt', 1, 't', 'null', 'err-bad-1', 0, '{"index":0,"attempt":1}', true),
	   ('errors-corrupt', 2, 't', 'null', 'err-bad-2', 0, '{"index":1}', true),
	   ('errors-corrupt', 3, 't', 'null', 'err-bad-3', 0, '"1:1"', true),
	   ('errors-corrupt', 4, 't', 'null', 'err-bad-4', 0, '{"index":1,"attempt":1,"batchSize":0}', true),
	   ('errors-corrupt', 5, 't', 'null', 'err-bad-5', 0, '{"index":1.5,"attempt":1}', true),
	   ('errors-corrupt', 6, 't', 'null', 'err-bad-6', 0, '{"index":1,"attempt":1e30}', true),
	   ('errors-corrupt', 7, 't', 'null', 'err-bad-7', 0, '[1,1]', true);
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 0, 1)$$, 'XX001', 'read: stored cause with index 0');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 1, 2)$$, 'XX001', 'read: stored cause without attempt');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 2, 3)$$, 'XX001', 'read: stored cause is a string');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 3, 4)$$, 'XX001', 'read: stored cause with batchSize 0');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 4, 5)$$, 'XX001', 'read: stored cause with index 1.5');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 5, 6)$$, 'XX001', 'read: stored cause with attempt 1e30');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt', 6, 7)$$, 'XX001', 'read: stored cause is an array');
SELECT * FROM errors_check($$SELECT a2_read('errors-corrupt')$$, 'XX001', 'read: whole corrupt session');
SELECT * FROM errors_check($$SELECT a2_claim('errors-corrupt', 'h', 1000)$$, 'XX001', 'claim: corrupt rows are not leased');
DELETE FROM a2_events WHERE session_id = 'errors-corrupt';

------------------------------------------------------------------------
-- Accepted boundaries
------------------------------------------------------------------------
-- names of exactly 1024 bytes
SELECT is(a2_append(repeat('s', 1024),
		jsonb_build_array(jsonb_build_object('id', repeat('i', 1024), 'type', 't', 'lane', repeat('l', 1024))))
		#>> '{events,0,index}',
	'1', 'append: session_id, id and lane of 1024 bytes accepted');
SELECT is((SELECT lane FROM a2_events WHERE session_id = repeat('s', 1024) AND idx = 1),
	repeat('l', 1024), 'append: the 1024-byte lane is stored whole');
SELECT is(a2_append(repeat('é', 512),
		jsonb_build_array(jsonb_build_object('id', repeat('é', 512), 'type', 't', 'lane', repeat('é', 512))))
		#>> '{events,0,id}',
	repeat('é', 512), 'append: 1024-byte names in 512 two-byte characters accepted');
SELECT is(jsonb_array_length(a2_read(repeat('s', 1024))), 1, 'read: session_id of 1024 bytes accepted');
SELECT is(a2_claim(repeat('s', 1024), repeat('h', 1024), 60000) #>> '{events,0,claimHolder}',
	repeat('h', 1024), 'claim: session_id and holder of 1024 bytes accepted');
SELECT is(a2_renew(repeat('s', 1024), repeat('h', 1024), '[{"index":1,"attempt":1}]', 60000),
	'{"renewed":[1],"superseded":[]}', 'renew: session_id and holder of 1024 bytes accepted');
SELECT is(a2_complete(repeat('s', 1024), 1, 1,
		jsonb_build_array(jsonb_build_object('id', repeat('r', 1024), 'type', 't', 'lane', repeat('m', 1024))))
		#>> '{events,0,index}',
	'2', 'complete: session_id, returned id and lane of 1024 bytes accepted');
SELECT is(a2_fail(repeat('s', 1024), 1, 1, 'x', 3),
	'{"outcome":"superseded","failureCount":0}', 'fail: session_id of 1024 bytes accepted');

-- 2.0 counts as 2; JSON null in optional fields means absent
SELECT is(a2_append('errors-s', '[{"id":"err-two","type":"t","cause":{"index":2.0,"attempt":1.0,"batchSize":2.0}}]') #> '{events,0,cause}',
	'{"index":2,"attempt":1,"batchSize":2}', 'append: cause numbers 2.0 and 1.0 accepted as integers');
SELECT is((errors_row('errors-s', 5))->'cause',
	'{"index":2,"attempt":1,"batchSize":2}', 'append: the stored cause holds the integers');
SELECT is(a2_append('errors-s', '[{"id":"err-nb","type":"t","cause":{"index":2,"attempt":1,"batchSize":null}}]') #> '{events,0,cause}',
	'{"index":2,"attempt":1}', 'append: batchSize JSON null means absent');
SELECT is((errors_row('errors-s', 6))->'cause',
	'{"index":2,"attempt":1}', 'append: the stored cause has no batchSize');
SELECT ok(a2_append('errors-null', '[{"id":null,"type":"t","lane":null,"cause":null,"settled":null}]') #>> '{events,0,id}'
		~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$',
	'append: id JSON null means absent (an id is generated)');
SELECT is((SELECT jsonb_build_object('lane', lane, 'cause', cause, 'processed_at', processed_at, 'lane_ready', lane_ready)
		FROM a2_events WHERE session_id = 'errors-null'),
	'{"lane":null,"cause":null,"processed_at":null,"lane_ready":true}',
	'append: lane, cause and settled JSON null mean absent');
SELECT is(a2_renew('errors-s', 'h', '[{"index":2.0,"attempt":1.0}]', 1000),
	'{"renewed":[2],"superseded":[]}', 'renew: index 2.0 and attempt 1.0 accepted');
SELECT is(a2_complete('errors-s', 2, 1, '[{"id":"err-c-null","type":"t","cause":null,"lane":null,"settled":null}]') #> '{events,0,cause}',
	'{"index":2,"attempt":1}', 'complete: cause, lane and settled JSON null mean absent');
SELECT is((errors_row('errors-s', 7))->>'processed_at', NULL, 'complete: settled JSON null leaves the child unprocessed');

-- the numeric lower bounds themselves
SELECT is(a2_read('errors-s', 0, 0), '[]', 'read: after_index 0 and through_index 0 accepted');
SELECT is(jsonb_path_query_array(a2_read('errors-s', NULL, NULL, 1), '$[*].index'), '[1]', 'read: max_events 1 accepted');
SELECT is(a2_claim('errors-ttl0', 'h', 0)->>'outcome', 'settled', 'claim: ttl_ms 0 accepted (empty session)');
SELECT is(a2_append('errors-ttl0', '[{"id":"err-z1","type":"t"}]') #>> '{events,0,index}', '1', 'setup: one event for ttl_ms 0');
SELECT is(a2_claim('errors-ttl0', 'h', 0) #>> '{events,0,claimExpiresAt}', '2026-01-01T00:00:00.000Z',
	'claim: ttl_ms 0 leases until now');
SELECT is(a2_fail('errors-ttl0', 1, 1, 'x', 1) ->> 'outcome', 'dead_lettered', 'fail: max_failures 1 accepted');

-- 10,000 elements are accepted
SELECT is(jsonb_array_length(a2_append('errors-big',
		(SELECT jsonb_agg(jsonb_build_object('type', 't')) FROM generate_series(1, 10000))) -> 'events'),
	10000, 'append: 10,000 events accepted');
SELECT is(a2_claim('errors-big', 'h', 1000, NULL, (SELECT array_agg(i) FROM generate_series(1::bigint, 10000) i)),
	'{"outcome":"settled"}', 'claim: 10,000 exclude_indexes accepted');
SELECT is(jsonb_array_length(a2_claim('errors-big', 'h', 1000, NULL, (SELECT array_agg(i) FROM generate_series(1::bigint, 9999) i)) -> 'events'),
	1, 'claim: 9,999 excluded leaves one');
SELECT is(a2_renew('errors-big', 'h',
		(SELECT jsonb_agg(jsonb_build_object('index', i, 'attempt', 1)) FROM generate_series(1, 10000) i), 1000),
	'{"renewed":[10000],"superseded":[]}', 'renew: 10,000 claims accepted');
SELECT is(a2_complete('errors-big', 10000, 1,
		(SELECT jsonb_agg(jsonb_build_object('id', 'err-big-' || i, 'type', 't')) FROM generate_series(1, 10000) i)) #>> '{events,9999,index}',
	'20000', 'complete: 10,000 returned events accepted');

-- an exact replay returns the stored batch even though its cause is stale
SELECT is(a2_append('errors-order', '[{"id":"err-p","type":"t"}]') #>> '{events,0,index}', '1', 'order: parent appended');
SELECT is(a2_claim('errors-order', 'h', 1000) #>> '{events,0,attemptCount}', '1', 'order: parent claimed (attempt 1)');
SELECT is(a2_append('errors-order', '[{"id":"err-pc","type":"t","cause":{"index":1,"attempt":1}}]') #>> '{events,0,index}', '2', 'order: child appended by attempt 1');
SELECT is(a2_fail('errors-order', 1, 1, 'x', 5) ->> 'outcome', 'failed', 'order: attempt 1 fails');
SELECT is(a2_claim('errors-order', 'h', 1000, NULL, '{2}') #>> '{events,0,attemptCount}', '2', 'order: parent re-claimed (attempt 2)');
SELECT * FROM errors_check($$SELECT a2_append('errors-order', '[{"type":"t","cause":{"index":1,"attempt":1}}]')$$, 'Z2002', 'order: a fresh event of attempt 1 is fenced');
SELECT is(a2_append('errors-order', '[{"id":"err-pc","type":"t","cause":{"index":1,"attempt":1}}]') #>> '{events,0,index}',
	'2', 'order: the exact replay of attempt 1''s child still returns it');

------------------------------------------------------------------------
-- No function silently returns NULL: optional arguments given as NULL
------------------------------------------------------------------------
SELECT isnt(a2_append('errors-nn', '[]'), NULL, 'append: empty batch returns a value');
SELECT is(a2_append('errors-nn', '[]'), '{"events":[],"hasPending":false}', 'append: empty batch on an empty session');
SELECT is(a2_read('errors-s', NULL, NULL, NULL) -> 0 ->> 'id', 'err-e1', 'read: NULL bounds and max_events mean unbounded');
SELECT is(jsonb_array_length(a2_read('errors-s', NULL, NULL, NULL)), 7, 'read: NULL bounds return every event');
SELECT is(a2_append('errors-nn', '[{"id":"err-nn1","type":"t"}]') #>> '{events,0,index}', '1', 'setup: one event for NULL optionals');
SELECT is(a2_claim('errors-nn', 'h', 1000, NULL, NULL) #>> '{events,0,claimExpiresAt}', '2026-01-01T00:00:01.000Z',
	'claim: NULL expires_at and exclude_indexes mean now + ttl_ms and none');
SELECT is(a2_renew('errors-nn', 'h', '[{"index":1,"attempt":1}]', 5000, NULL), '{"renewed":[1],"superseded":[]}',
	'renew: NULL expires_at means now + ttl_ms');
SELECT is((errors_row('errors-nn', 1))->>'claim_expires_at', '1767225605000', 'renew: the lease moved to now + 5000');
SELECT is(a2_fail('errors-nn', 1, 1, NULL, 3), '{"outcome":"failed","failureCount":1}', 'fail: NULL error accepted');
SELECT is((errors_row('errors-nn', 1))->'last_error', 'null', 'fail: NULL error stored as null');
SELECT is(a2_claim('errors-nn', 'h', 1000) #>> '{events,0,attemptCount}', '2', 'setup: re-claim (attempt 2)');
SELECT is(a2_complete('errors-nn', 1, 2, NULL), '{"outcome":"completed","events":[]}', 'complete: NULL events means none');

SELECT * FROM finish();
ROLLBACK;
