-- claim_next_redrive_errors.sql: the error contract (SPEC section 5) of
-- a2_claim_next and a2_redrive, and of unknown keys in every object kind.
--
-- Each error check is throws_ok(sql, SQLSTATE) plus "nothing was
-- written" (a fingerprint of a2_events and the snapshot tables taken
-- before and after); the boundary values that must be accepted are
-- checked next to the ones that must be refused.
BEGIN;
SELECT plan(90);

SET LOCAL a2.now = '2026-01-01 00:00:00+00';

CREATE FUNCTION cnr_fp() RETURNS text LANGUAGE sql AS $f$
	SELECT md5(concat_ws(E'\f',
		(SELECT string_agg(t::text, E'\n' ORDER BY t.session_id, t.idx) FROM a2_events t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshots t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_history t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_pins t)))
$f$;

CREATE FUNCTION cnr_check(query text, sqlstate text, descr text)
RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	before text := cnr_fp();
BEGIN
	RETURN NEXT throws_ok(query, sqlstate::char(5), NULL, descr);
	RETURN NEXT is(cnr_fp(), before, descr || ': nothing written');
END
$f$;

-- Setup.  cnr-s: 1 processed (settled), 2 pending, 3 dead-lettered,
-- 4 failed once (not dead); pending work in cnr-s makes a successful
-- a2_claim_next visible in the fingerprint.
SELECT is(jsonb_path_query_array(a2_append('cnr-s',
	'[{"type":"t","settled":true},{"type":"t"},{"type":"t"},{"type":"t"}]'), '$.events[*].index'),
	'[1,2,3,4]', 'setup: append four events');
SELECT is(jsonb_path_query_array(a2_claim('cnr-s', 'h', 60000, NULL, ARRAY[2]::bigint[]), '$.events[*].index'),
	'[3,4]', 'setup: claim 3 and 4');
SELECT is(a2_fail('cnr-s', 3, 1, 'boom', 1)->>'outcome', 'dead_lettered', 'setup: dead-letter 3');
SELECT is(a2_fail('cnr-s', 4, 1, 'boom', 5)->>'outcome', 'failed', 'setup: fail 4 once');

------------------------------------------------------------------------
-- a2_claim_next
------------------------------------------------------------------------
SELECT * FROM cnr_check($$SELECT a2_claim_next(NULL, 1000)$$, '22004', 'claim_next: NULL holder');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', NULL)$$, '22004', 'claim_next: NULL ttl_ms');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, NULL)$$, '22004', 'claim_next: NULL max_sessions');
SELECT * FROM cnr_check($$SELECT a2_claim_next(NULL, NULL, NULL, NULL)$$, '22004', 'claim_next: all arguments NULL');
SELECT * FROM cnr_check($$SELECT a2_claim_next('', 1000)$$, '22023', 'claim_next: empty holder');
SELECT * FROM cnr_check($$SELECT a2_claim_next(repeat('h', 1025), 1000)$$, '22023', 'claim_next: holder of 1025 bytes');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', -1)$$, '22023', 'claim_next: ttl_ms -1');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 9223372036854775807)$$, '22023', 'claim_next: now + ttl_ms overflows');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, 0)$$, '22023', 'claim_next: max_sessions 0');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, -5)$$, '22023', 'claim_next: max_sessions -5');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, 10001)$$, '22023', 'claim_next: max_sessions 10001');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, 1, 'infinity')$$, '22023', 'claim_next: expires_at infinity');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, 1, '-infinity')$$, '22023', 'claim_next: expires_at -infinity');
SELECT * FROM cnr_check($$SELECT a2_claim_next('h', 1000, 1, '276000-01-01')$$, '22023', 'claim_next: expires_at beyond the Date range');

-- accepted boundaries (each of these claims, so the last ones find the work taken)
SELECT is(a2_claim_next('h', 0, 10000, NULL)->'claims'->0->>'sessionId', 'cnr-s',
	'claim_next: ttl_ms 0 and max_sessions 10000 are accepted');
SELECT is(a2_claim_next(repeat('h', 1024), 0)->'claims'->0->>'sessionId', 'cnr-s',
	'claim_next: a holder of 1024 bytes is accepted (the ttl-0 lease expired at once)');
SELECT is(a2_claim_next('h', 1000, 1, '2026-01-01 00:00:05+00')->'claims'->0->'events'->0->>'claimExpiresAt',
	'2026-01-01T00:00:05.000Z', 'claim_next: expires_at replaces now + ttl_ms');
SELECT is(a2_claim_next('h', 1000)->'retryAt', '"2026-01-01T00:00:05.000Z"',
	'claim_next: nothing left, retryAt is the live lease');

------------------------------------------------------------------------
-- a2_redrive
------------------------------------------------------------------------
SELECT * FROM cnr_check($$SELECT a2_redrive(NULL, 3)$$, '22004', 'redrive: NULL session_id');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', NULL)$$, '22004', 'redrive: NULL event_index');
SELECT * FROM cnr_check($$SELECT a2_redrive(NULL::text)$$, '22004', 'redrive session: NULL session_id');
SELECT * FROM cnr_check($$SELECT a2_redrive('', 3)$$, '22023', 'redrive: empty session_id');
SELECT * FROM cnr_check($$SELECT a2_redrive('')$$, '22023', 'redrive session: empty session_id');
SELECT * FROM cnr_check($$SELECT a2_redrive(repeat('s', 1025), 3)$$, '22023', 'redrive: session_id of 1025 bytes');
SELECT * FROM cnr_check($$SELECT a2_redrive(repeat('s', 1025))$$, '22023', 'redrive session: session_id of 1025 bytes');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', 0)$$, '22023', 'redrive: event_index 0');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', -1)$$, '22023', 'redrive: event_index -1');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', 99)$$, 'Z2003', 'redrive: no such index');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-none', 1)$$, 'Z2003', 'redrive: no such session');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', 1)$$, 'Z2004', 'redrive: processed event');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', 2)$$, 'Z2004', 'redrive: pending event');
SELECT * FROM cnr_check($$SELECT a2_redrive('cnr-s', 4)$$, 'Z2004', 'redrive: failed but not dead-lettered');
SELECT throws_ok($$SELECT a2_redrive('cnr-s', 2)$$, 'Z2004',
	'event 2 of session "cnr-s" is not dead-lettered', 'redrive: the message names event and session');

-- the successful path, and its idempotence
SELECT is(a2_redrive('cnr-s', 3)->>'outcome', 'redriven', 'redrive: dead letter redriven');
SELECT is((SELECT (failed_at, failure_count, last_error, claim_holder)::text FROM a2_events
			WHERE session_id = 'cnr-s' AND idx = 3), '(,0,boom,)',
	'redrive: failed_at cleared, failure_count 0, last_error kept, no holder');
SELECT lives_ok($$SELECT a2_redrive('cnr-s', 3)$$, 'redrive: a second redrive is no error');
SELECT is(a2_redrive('cnr-s', 3)->>'outcome', 'already_redriven', 'redrive: second redrive says so');
SELECT is(a2_redrive('cnr-s'), '{"events": []}', 'redrive session: nothing left to redrive');
SELECT is(a2_redrive('cnr-none'), '{"events": []}', 'redrive session: unknown session is empty, not an error');

------------------------------------------------------------------------
-- Unknown keys (22023) in every object kind
------------------------------------------------------------------------
SELECT * FROM cnr_check($$SELECT a2_append('cnr-k', '[{"type":"t","paylaod":1}]')$$, '22023', 'append: misspelled payload');
SELECT * FROM cnr_check($$SELECT a2_append('cnr-k', '[{"type":"t","extra":null}]')$$, '22023', 'append: unknown key with null value');
SELECT * FROM cnr_check($$SELECT a2_append('cnr-k', '[{"type":"t","":1}]')$$, '22023', 'append: empty key');
SELECT * FROM cnr_check($$SELECT a2_append('cnr-k', '[{"type":"t","laneReady":true}]')$$, '22023', 'append: a stored column name is not an input key');
SELECT * FROM cnr_check($$SELECT a2_append('cnr-s', '[{"type":"t","cause":{"index":2,"attempt":1,"batchsize":1}}]')$$, '22023', 'append: unknown key in cause');
SELECT * FROM cnr_check($$SELECT a2_complete('cnr-s', 2, 1, '[{"id":"cnr-c","type":"t","settle":true}]')$$, '22023', 'complete: unknown key');
SELECT * FROM cnr_check($$SELECT a2_renew('cnr-s', 'h', '[{"index":2,"attempt":1,"ttl":5}]', 1000)$$, '22023', 'renew: unknown key in a claims element');
SELECT * FROM cnr_check($$SELECT a2_put_snapshots('cnr-s', 'r', '[{"index":1,"state":{},"pinEventIndex":[2]}]')$$, '22023', 'put_snapshots: unknown key');
SELECT * FROM cnr_check($$SELECT a2_read_states('[{"sessionId":"cnr-s","session":"x"}]', 'r')$$, '22023', 'read_states: unknown key');
SELECT throws_ok($$SELECT a2_append('cnr-k', '[{"type":"t"},{"type":"t","paylaod":1}]')$$, '22023',
	'unknown key "paylaod" in events[1] for session "cnr-k"', 'unknown key: the message names key and element');

SELECT * FROM finish();
ROLLBACK;
