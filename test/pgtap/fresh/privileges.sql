-- privileges.sql: SPEC section 6 -- a2 functions are SECURITY INVOKER, so
-- the caller's table privileges and row-level security apply.
--
--  1. A role without table privileges gets insufficient_privilege (42501)
--     from every a2 function.
--  2. A role with the documented worker grants runs the whole protocol:
--       USAGE on the extension's schema;
--       a2_events:              SELECT, INSERT, UPDATE
--       a2_snapshots:           SELECT, INSERT, UPDATE
--       a2_snapshot_history:    SELECT, INSERT, UPDATE, DELETE
--       a2_snapshot_pins:       SELECT, INSERT, DELETE
--       a2_presence:            SELECT, INSERT, UPDATE, DELETE
--       a2_presence_tombstones: SELECT, INSERT, UPDATE, DELETE
--       (a2_grant_worker grants all of this, see grants.sql; it also
--       grants EXECUTE on a2_retired_last_index(text), which from 0.4.0
--       PUBLIC has: the function answers whoever may INSERT into a2_events)
--  3. That set is minimal: without any one of those privileges some
--     operation fails with 42501.
--  4. Row-level security on session_id (ns for presence) confines a tenant:
--     another tenant's sessions do not exist for it (reads return nothing,
--     complete and fail report NOT_FOUND, claim reports settled) and writes
--     to them raise 42501, while its own sessions work.  The roles are not
--     the tables' owner (an owner bypasses RLS unless FORCE is set, a
--     superuser always).
--
-- Creates roles regress_a2_nopriv, regress_a2_worker, regress_tenant_a and
-- regress_tenant_b; the whole file is one transaction and the final
-- ROLLBACK drops them again (also when the file stops half-way).

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;

SELECT plan(89);

CREATE ROLE regress_a2_nopriv;
CREATE ROLE regress_a2_worker;
CREATE ROLE regress_tenant_a;
CREATE ROLE regress_tenant_b;

-- the worker grants, in whatever schema a2 was created in
DO $$
DECLARE
	s text := (SELECT quote_ident(n.nspname) FROM pg_extension e
				 JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'a2');
	r text;
BEGIN
	EXECUTE format('GRANT USAGE ON SCHEMA %s TO regress_a2_nopriv', s);
	FOREACH r IN ARRAY ARRAY['regress_a2_worker', 'regress_tenant_a', 'regress_tenant_b'] LOOP
		EXECUTE format('GRANT USAGE ON SCHEMA %s TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.a2_events TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.a2_snapshots TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_snapshot_history TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, DELETE ON %s.a2_snapshot_pins TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_presence TO %I', s, r);
		EXECUTE format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_presence_tombstones TO %I', s, r);
	END LOOP;
END $$;

SET a2.now = '2026-03-01 00:00:00+00';

-- Every statement runs once as the superuser first, so the backend's
-- cached SPI plans exist before other roles call: privilege checks and
-- row-level security must still apply to the calling role.
DO $$
BEGIN
	PERFORM a2_append('owner:s1', '[{"type":"a"},{"type":"b"}]');
	PERFORM a2_claim('owner:s1', 'w', 60000);
	PERFORM a2_renew('owner:s1', 'w', '[{"index":1,"attempt":1}]', 60000);
	PERFORM a2_put_snapshots('owner:s1', 'r', '[{"index":1,"state":1,"pinEventIndexes":[2]}]');
	PERFORM a2_put_snapshots('owner:s1', 'r', '[{"index":2,"state":2}]');
	PERFORM a2_append('owner:s1', '[{"type":"c","cause":{"index":1,"attempt":1}}]');
	PERFORM a2_complete('owner:s1', 1, 1, '[{"id":"owner:c1","type":"child"}]');
	PERFORM a2_fail('owner:s1', 2, 1, 'boom', 1);
	PERFORM a2_read('owner:s1');
	PERFORM a2_read_state('owner:s1', 'r');
	PERFORM a2_read_states('[{"sessionId":"owner:s1"}]', 'r');
	PERFORM a2_presence_set('owner:ns', 'p', '{"a":1,"b":null}', '2026-03-01 00:00:00+00', 1, 60000);
	PERFORM a2_presence_read('owner:ns');
END $$;

-- ------------------------------------------------------------------
-- 1. No table privileges: 42501 from every function
-- ------------------------------------------------------------------
SET ROLE regress_a2_nopriv;
SELECT throws_ok($$SELECT a2_append('np:s1', '[{"type":"a"}]')$$, '42501', NULL, 'no privileges: a2_append raises 42501');
SELECT throws_ok($$SELECT a2_read('np:s1')$$, '42501', NULL, 'no privileges: a2_read raises 42501');
SELECT throws_ok($$SELECT a2_claim('owner:s1', 'w', 1000)$$, '42501', NULL, 'no privileges: a2_claim raises 42501');
SELECT throws_ok($$SELECT a2_renew('owner:s1', 'w', '[{"index":3,"attempt":1}]', 1000)$$, '42501', NULL, 'no privileges: a2_renew raises 42501');
SELECT throws_ok($$SELECT a2_complete('owner:s1', 3, 1)$$, '42501', NULL, 'no privileges: a2_complete raises 42501');
SELECT throws_ok($$SELECT a2_fail('owner:s1', 3, 1, 'e', 3)$$, '42501', NULL, 'no privileges: a2_fail raises 42501');
SELECT throws_ok($$SELECT a2_read_state('owner:s1', 'r')$$, '42501', NULL, 'no privileges: a2_read_state raises 42501');
SELECT throws_ok($$SELECT a2_read_states('[{"sessionId":"owner:s1"}]', 'r')$$, '42501', NULL, 'no privileges: a2_read_states raises 42501');
SELECT throws_ok($$SELECT a2_put_snapshots('np:s1', 'r', '[{"index":1,"state":1}]')$$, '42501', NULL, 'no privileges: a2_put_snapshots raises 42501');
SELECT throws_ok($$SELECT a2_presence_set('np:ns', 'p', '{"a":1}', '2026-03-01 00:00:00+00', 1, 1000)$$, '42501', NULL, 'no privileges: a2_presence_set raises 42501');
SELECT throws_ok($$SELECT a2_presence_read('owner:ns')$$, '42501', NULL, 'no privileges: a2_presence_read raises 42501');
SELECT throws_ok($$SELECT a2_retired_last_index('owner:s1')$$, '42501', NULL,
				 'no privileges: a2_retired_last_index answers only roles that may insert into a2_events');
RESET ROLE;

SELECT is((SELECT count(*) FROM a2_events WHERE session_id LIKE 'np:%'), 0::bigint,
		  'no privileges: nothing was appended');
SELECT is((SELECT attempt_count FROM a2_events WHERE session_id = 'owner:s1' AND idx = 3), 0,
		  'no privileges: nothing was claimed');

-- ------------------------------------------------------------------
-- 2. The worker grants run the whole protocol
-- ------------------------------------------------------------------
SET ROLE regress_a2_worker;
SELECT is(jsonb_path_query_array(
			a2_append('w:s1', '[{"id":"w:e1","type":"a","lane":"L"},{"id":"w:e2","type":"b","lane":"L"},{"id":"w:e3","type":"c"}]'),
			'$.events[*].index'),
		  '[1, 2, 3]', 'worker: append');
SELECT is(jsonb_path_query_array(
			a2_append('w:s1', '[{"id":"w:e1","type":"a","lane":"L"},{"id":"w:e2","type":"b","lane":"L"},{"id":"w:e3","type":"c"}]'),
			'$.events[*].id'),
		  '["w:e1", "w:e2", "w:e3"]', 'worker: an exact replay returns the stored batch');
SELECT is(jsonb_array_length(a2_read('w:s1')), 3, 'worker: read');
SELECT is(jsonb_path_query_array(a2_claim('w:s1', 'w1', 60000), '$.events[*].index'), '[1, 3]',
		  'worker: claim leases the lane head and the free event');
SELECT is(a2_renew('w:s1', 'w1', '[{"index":1,"attempt":1},{"index":3,"attempt":1}]', 120000),
		  '{"renewed": [1, 3], "superseded": []}', 'worker: renew');
SELECT lives_ok($$SELECT a2_put_snapshots('w:s1', 'r', '[{"index":1,"state":{"n":1},"pinEventIndexes":[3]}]')$$,
				'worker: put_snapshots with a pin');
SELECT lives_ok($$SELECT a2_put_snapshots('w:s1', 'r', '[{"index":2,"state":{"n":2}}]')$$,
				'worker: put_snapshots moves the pinned head to history');
SELECT is(a2_read_state('w:s1', 'r', NULL, 1)->'snapshot', '{"index": 1, "state": {"n": 1}}',
		  'worker: read_state finds the pinned checkpoint in history');
SELECT is(a2_append('w:s1', '[{"id":"w:x1","type":"x","cause":{"index":1,"attempt":1}}]')->'events'->0->>'index', '4',
		  'worker: append fenced by a current attempt');
SELECT is(jsonb_path_query_array(a2_complete('w:s1', 1, 1, '[{"id":"w:c1","type":"child"}]'), '$.events[*].index'), '[5]',
		  'worker: complete with a returned event');
SELECT is(a2_complete('w:s1', 1, 1, '[{"id":"w:c1","type":"child"}]')->>'outcome', 'completed',
		  'worker: complete retried idempotently');
SELECT is(a2_fail('w:s1', 3, 1, 'boom', 1), '{"outcome": "dead_lettered", "failureCount": 1}',
		  'worker: fail dead-letters at max_failures');
SELECT is(a2_read_state('w:s1', 'r', NULL, 1)->'snapshot', 'null',
		  'worker: dead-lettering released the pin and collected the history row');
SELECT is(jsonb_path_query_array(a2_read_states('[{"sessionId":"w:s1","throughIndex":2}]', 'r'), '$[*].headIndex'), '[2]',
		  'worker: read_states');
SELECT lives_ok($$SELECT a2_presence_set('w:ns', 'p1', '{"a":1,"b":2}', '2026-03-01 00:00:00+00', 1, 1000)$$,
				'worker: presence_set');
SELECT lives_ok($$SELECT a2_presence_set('w:ns', 'p1', '{"a":null}', '2026-03-01 00:00:01+00', 2, 1000)$$,
				'worker: presence_set deleting a field leaves a tombstone');
SELECT is(jsonb_path_query_array(a2_presence_read('w:ns'), '$[*].field'), '["b"]', 'worker: presence_read');
SET a2.now = '2026-03-01 00:00:05+00';
SELECT is(a2_presence_read('w:ns'), '[]', 'worker: presence_read sweeps expired rows');
SET a2.now = '2026-03-01 00:00:00+00';
RESET ROLE;
SELECT is((SELECT count(*) FROM a2_presence_tombstones WHERE ns = 'w:ns'), 0::bigint,
		  'worker: the sweep removed the expired tombstone too');

-- ------------------------------------------------------------------
-- 3. Each worker privilege is needed: revoke one, see 42501, grant back
-- ------------------------------------------------------------------
-- state for the calls below: m:s1 has events 1..3, 1 and 2 leased, a
-- head at 1 pinned by event 2; m:ns has a live field
SET ROLE regress_a2_worker;
DO $$
BEGIN
	PERFORM a2_append('m:s1', '[{"type":"a"},{"type":"b"},{"type":"c"}]');
	PERFORM a2_claim('m:s1', 'w', 60000, NULL, '{3}');
	PERFORM a2_put_snapshots('m:s1', 'r', '[{"index":1,"state":1,"pinEventIndexes":[2]}]');
	PERFORM a2_presence_set('m:ns', 'p', '{"a":1}', '2026-03-01 00:00:00+00', 1, 60000);
END $$;
RESET ROLE;

REVOKE SELECT ON a2_events FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_read('m:s1')$$, '42501', NULL, 'minimal: a2_read needs SELECT on a2_events');
RESET ROLE;
GRANT SELECT ON a2_events TO regress_a2_worker;

REVOKE INSERT ON a2_events FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_append('m:s1', '[{"type":"d"}]')$$, '42501', NULL, 'minimal: a2_append needs INSERT on a2_events');
RESET ROLE;
GRANT INSERT ON a2_events TO regress_a2_worker;

-- A dropped session's mark needs nothing beyond INSERT on a2_events, not
-- even EXECUTE granted to the role (PUBLIC has it): the append continues
-- after the mark.  (Up to 0.3.0 the role needed EXECUTE on it.)
SELECT lives_ok($$SELECT a2_append('m:dropped', '[{"type":"a"},{"type":"b"}]')$$, 'minimal: the owner appends to m:dropped');
SELECT is((a2_drop_session('m:dropped', true)->>'lastIndex')::int, 2, 'minimal: m:dropped dropped at index 2');
SET ROLE regress_a2_worker;
SELECT is(has_function_privilege('a2_retired_last_index(text)', 'EXECUTE')
		  AND NOT has_table_privilege('a2_retired_sessions', 'SELECT'), true,
		  'minimal: the worker may call a2_retired_last_index (as PUBLIC) and cannot read a2_retired_sessions');
SELECT is((a2_append('m:dropped', '[{"type":"d"}]')->'events'->0->>'index')::int, 3,
		  'minimal: with INSERT on a2_events alone, an append to a dropped session continues after its mark');
RESET ROLE;

REVOKE UPDATE ON a2_events FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_claim('m:s1', 'w', 60000)$$, '42501', NULL, 'minimal: a2_claim needs UPDATE on a2_events');
RESET ROLE;
GRANT UPDATE ON a2_events TO regress_a2_worker;

REVOKE SELECT ON a2_snapshots FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_read_state('m:s1', 'r')$$, '42501', NULL, 'minimal: a2_read_state needs SELECT on a2_snapshots');
RESET ROLE;
GRANT SELECT ON a2_snapshots TO regress_a2_worker;

REVOKE INSERT ON a2_snapshots FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s2', 'r', '[{"index":1,"state":1}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs INSERT on a2_snapshots');
RESET ROLE;
GRANT INSERT ON a2_snapshots TO regress_a2_worker;

REVOKE UPDATE ON a2_snapshots FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":2,"state":2}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs UPDATE on a2_snapshots');
RESET ROLE;
GRANT UPDATE ON a2_snapshots TO regress_a2_worker;

REVOKE SELECT ON a2_snapshot_history FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_read_state('m:s1', 'r')$$, '42501', NULL, 'minimal: a2_read_state needs SELECT on a2_snapshot_history');
RESET ROLE;
GRANT SELECT ON a2_snapshot_history TO regress_a2_worker;

REVOKE INSERT ON a2_snapshot_history FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":2,"state":2}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs INSERT on a2_snapshot_history');
RESET ROLE;
GRANT INSERT ON a2_snapshot_history TO regress_a2_worker;

REVOKE UPDATE ON a2_snapshot_history FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":2,"state":2}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs UPDATE on a2_snapshot_history');
RESET ROLE;
GRANT UPDATE ON a2_snapshot_history TO regress_a2_worker;

REVOKE DELETE ON a2_snapshot_history FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s2', 'r', '[{"index":1,"state":1}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs DELETE on a2_snapshot_history');
RESET ROLE;
GRANT DELETE ON a2_snapshot_history TO regress_a2_worker;

REVOKE SELECT ON a2_snapshot_pins FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":2,"state":2}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs SELECT on a2_snapshot_pins');
RESET ROLE;
GRANT SELECT ON a2_snapshot_pins TO regress_a2_worker;

REVOKE INSERT ON a2_snapshot_pins FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":1,"state":1,"pinEventIndexes":[3]}]')$$, '42501', NULL, 'minimal: a2_put_snapshots needs INSERT on a2_snapshot_pins');
RESET ROLE;
GRANT INSERT ON a2_snapshot_pins TO regress_a2_worker;

REVOKE DELETE ON a2_snapshot_pins FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_complete('m:s1', 1, 1)$$, '42501', NULL, 'minimal: a2_complete needs DELETE on a2_snapshot_pins');
RESET ROLE;
GRANT DELETE ON a2_snapshot_pins TO regress_a2_worker;

REVOKE SELECT ON a2_presence FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_read('m:ns')$$, '42501', NULL, 'minimal: a2_presence_read needs SELECT on a2_presence');
RESET ROLE;
GRANT SELECT ON a2_presence TO regress_a2_worker;

REVOKE INSERT ON a2_presence FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"b":1}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs INSERT on a2_presence');
RESET ROLE;
GRANT INSERT ON a2_presence TO regress_a2_worker;

REVOKE UPDATE ON a2_presence FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"a":2}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs UPDATE on a2_presence');
RESET ROLE;
GRANT UPDATE ON a2_presence TO regress_a2_worker;

REVOKE DELETE ON a2_presence FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"a":null}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs DELETE on a2_presence');
RESET ROLE;
GRANT DELETE ON a2_presence TO regress_a2_worker;

REVOKE SELECT ON a2_presence_tombstones FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"a":3}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs SELECT on a2_presence_tombstones');
RESET ROLE;
GRANT SELECT ON a2_presence_tombstones TO regress_a2_worker;

REVOKE INSERT ON a2_presence_tombstones FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"z":null}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs INSERT on a2_presence_tombstones');
RESET ROLE;
GRANT INSERT ON a2_presence_tombstones TO regress_a2_worker;

REVOKE UPDATE ON a2_presence_tombstones FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"z":null}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs UPDATE on a2_presence_tombstones');
RESET ROLE;
GRANT UPDATE ON a2_presence_tombstones TO regress_a2_worker;

REVOKE DELETE ON a2_presence_tombstones FROM regress_a2_worker;
SET ROLE regress_a2_worker;
SELECT throws_ok($$SELECT a2_presence_set('m:ns', 'p', '{"a":4}', '2026-03-01 00:00:00+00', 1, 60000)$$, '42501', NULL, 'minimal: a2_presence_set needs DELETE on a2_presence_tombstones');
RESET ROLE;
GRANT DELETE ON a2_presence_tombstones TO regress_a2_worker;

-- ... and with all of them back, those calls work
SET ROLE regress_a2_worker;
SELECT lives_ok($$SELECT a2_put_snapshots('m:s1', 'r', '[{"index":2,"state":2}]'),
					   a2_complete('m:s1', 1, 1),
					   a2_presence_set('m:ns', 'p', '{"a":null,"b":1}', '2026-03-01 00:00:00+00', 1, 60000),
					   a2_presence_read('m:ns')$$,
				'minimal: with every grant back the same calls succeed');
RESET ROLE;

-- ------------------------------------------------------------------
-- 4. Row-level security confines a tenant to its own sessions
-- ------------------------------------------------------------------
DO $$
DECLARE
	t text;
	col text;
BEGIN
	FOREACH t IN ARRAY ARRAY['a2_events', 'a2_snapshots', 'a2_snapshot_history', 'a2_snapshot_pins',
							 'a2_presence', 'a2_presence_tombstones'] LOOP
		col := CASE WHEN t LIKE 'a2_presence%' THEN 'ns' ELSE 'session_id' END;
		EXECUTE format('ALTER TABLE %I ENABLE ROW LEVEL SECURITY', t);
		EXECUTE format($f$CREATE POLICY regress_tenant_a ON %I TO regress_tenant_a
							USING (%I LIKE 'tenant-a:%%') WITH CHECK (%I LIKE 'tenant-a:%%')$f$, t, col, col);
		EXECUTE format($f$CREATE POLICY regress_tenant_b ON %I TO regress_tenant_b
							USING (%I LIKE 'tenant-b:%%') WITH CHECK (%I LIKE 'tenant-b:%%')$f$, t, col, col);
	END LOOP;
END $$;

-- tenant B's session: two events, both leased by B, a pinned snapshot
SET ROLE regress_tenant_b;
SELECT is(jsonb_path_query_array(a2_append('tenant-b:s1', '[{"id":"tb:e1","type":"a"},{"id":"tb:e2","type":"b"}]'), '$.events[*].index'),
		  '[1, 2]', 'tenant B: append to its own session');
SELECT is(jsonb_path_query_array(a2_claim('tenant-b:s1', 'wb', 60000), '$.events[*].index'), '[1, 2]',
		  'tenant B: claim its own events');
SELECT lives_ok($$SELECT a2_put_snapshots('tenant-b:s1', 'r', '[{"index":1,"state":"b1","pinEventIndexes":[2]}]'),
					   a2_presence_set('tenant-b:ns', 'pb', '{"f":"b"}', '2026-03-01 00:00:00+00', 1, 60000)$$,
				'tenant B: snapshots and presence of its own');
SELECT is(jsonb_array_length(a2_read('tenant-a:s1')), 0, 'tenant B: sees nothing of tenant A yet');
RESET ROLE;

SET ROLE regress_tenant_a;
-- B's rows do not exist for A
SELECT is(a2_read('tenant-b:s1'), '[]', 'tenant A: a2_read of a B session returns []');
SELECT is(a2_read_state('tenant-b:s1', 'r'), '{"events": [], "snapshot": null, "headIndex": null}',
		  'tenant A: a2_read_state of a B session finds no head, snapshot or events');
SELECT is(a2_read_states('[{"sessionId":"tenant-b:s1"},{"sessionId":"tenant-a:none"}]', 'r'),
		  '[{"events": [], "snapshot": null, "headIndex": null}, {"events": [], "snapshot": null, "headIndex": null}]',
		  'tenant A: a2_read_states of a B session is empty');
SELECT is(a2_claim('tenant-b:s1', 'wa', 1000, '2020-01-01 00:00:00+00'), '{"outcome": "settled"}',
		  'tenant A: a2_claim of a B session reports settled');
SELECT is(a2_renew('tenant-b:s1', 'wb', '[{"index":1,"attempt":1},{"index":2,"attempt":1}]', 1000),
		  '{"renewed": [], "superseded": []}', 'tenant A: a2_renew of B''s leases renews nothing');
SELECT throws_ok($$SELECT a2_complete('tenant-b:s1', 1, 1)$$, 'Z2003', NULL,
				 'tenant A: a2_complete of a B event reports NOT_FOUND');
SELECT throws_ok($$SELECT a2_fail('tenant-b:s1', 2, 1, 'sabotage', 1)$$, 'Z2003', NULL,
				 'tenant A: a2_fail of a B event reports NOT_FOUND');
SELECT is(a2_presence_read('tenant-b:ns'), '[]', 'tenant A: a2_presence_read of a B namespace returns []');
-- ... and A may not write to them
SELECT throws_ok($$SELECT a2_append('tenant-b:s1', '[{"type":"evil"}]')$$, '42501', NULL,
				 'tenant A: a2_append to a B session raises 42501');
SELECT throws_ok($$SELECT a2_put_snapshots('tenant-b:s1', 'r', '[{"index":9,"state":"evil"}]')$$, '42501', NULL,
				 'tenant A: a2_put_snapshots to a B session raises 42501');
SELECT throws_ok($$SELECT a2_presence_set('tenant-b:ns', 'pb', '{"f":"evil"}', '2026-03-01 00:00:01+00', 1, 60000)$$, '42501', NULL,
				 'tenant A: a2_presence_set of a B field raises 42501');
-- event ids are unique across all sessions, visible or not
SELECT throws_ok($$SELECT a2_append('tenant-a:s1', '[{"id":"tb:e1","type":"a"}]')$$, 'Z2001', NULL,
				 'tenant A: reusing the id of an invisible B event is PARTIAL_DUPLICATE_BATCH');

-- A's own sessions work
SELECT is(jsonb_path_query_array(a2_append('tenant-a:s1', '[{"id":"ta:e1","type":"a"},{"id":"ta:e2","type":"b"}]'), '$.events[*].index'),
		  '[1, 2]', 'tenant A: append to its own session starts at index 1');
SELECT is(jsonb_path_query_array(a2_claim('tenant-a:s1', 'wa', 60000), '$.events[*].index'), '[1, 2]',
		  'tenant A: claim its own events');
SELECT lives_ok($$SELECT a2_put_snapshots('tenant-a:s1', 'r', '[{"index":1,"state":"a1","pinEventIndexes":[2]}]')$$,
				'tenant A: put_snapshots on its own session');
SELECT is(a2_complete('tenant-a:s1', 1, 1, '[{"id":"ta:c1","type":"child"}]')->'events'->0->>'index', '3',
		  'tenant A: complete its own event');
SELECT is(a2_fail('tenant-a:s1', 2, 1, 'boom', 1)->>'outcome', 'dead_lettered', 'tenant A: fail its own event');
SELECT is(a2_read_state('tenant-a:s1', 'r')->'snapshot', '{"index": 1, "state": "a1"}',
		  'tenant A: read_state of its own session');
SELECT lives_ok($$SELECT a2_presence_set('tenant-a:ns', 'pa', '{"f":"a"}', '2026-03-01 00:00:00+00', 1, 60000)$$,
				'tenant A: presence_set in its own namespace');
SELECT is(jsonb_path_query_array(a2_presence_read('tenant-a:ns'), '$[*].value'), '["a"]',
		  'tenant A: presence_read of its own namespace');
RESET ROLE;

-- B's data is as B left it
SELECT is((SELECT jsonb_agg(jsonb_build_array(idx, event_type, attempt_count, failure_count, claim_holder,
											  processed_at IS NULL, failed_at IS NULL) ORDER BY idx)
			 FROM a2_events WHERE session_id = 'tenant-b:s1'),
		  '[[1, "a", 1, 0, "wb", true, true], [2, "b", 1, 0, "wb", true, true]]',
		  'tenant B''s events are untouched by tenant A');
SELECT is((SELECT jsonb_agg(jsonb_build_array(up_to_index, state)) FROM a2_snapshots WHERE session_id = 'tenant-b:s1'),
		  '[[1, "b1"]]', 'tenant B''s snapshot head is untouched');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'tenant-b:s1'), 1::bigint,
		  'tenant B''s pin is untouched');
SELECT is((SELECT jsonb_agg(value) FROM a2_presence WHERE ns = 'tenant-b:ns'), '["b"]',
		  'tenant B''s presence is untouched');

SET ROLE regress_tenant_b;
SELECT is(jsonb_path_query_array(a2_complete('tenant-b:s1', 1, 1), '$.outcome'), '["completed"]',
		  'tenant B: completes its event after A''s attempts');
SELECT is(jsonb_array_length(a2_read('tenant-a:s1')), 0, 'tenant B: still sees nothing of tenant A');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
