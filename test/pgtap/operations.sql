-- operations.sql: errors and privileges of the issue-10 functions:
-- a2_list_sessions, a2_list_snapshots, a2_metrics, a2_drop_session,
-- a2_drop_finished_sessions, and the high-water mark behind them.
--
--  1. Every refusal raises its documented SQLSTATE (22004 for a NULL
--     argument, 22023 for a bad value, Z2010 for dropping an unfinished
--     session) and removes nothing.
--  2. A monitoring role needs only USAGE on the extension's schema and
--     membership in pg_monitor (or EXECUTE on a2_metrics()): it reads the
--     metrics and nothing else -- not the events, not the inspection
--     functions.  Without either, a2_metrics() is refused (42501).
--  3. A worker with the worker grants appends to a dropped session, after
--     its high-water mark, without any privilege on a2_retired_sessions
--     (which it cannot read), and cannot drop sessions.
--  4. A retention role with the documented grants runs both drop forms.
--
-- One transaction; the roles go away with the final ROLLBACK.
BEGIN;
SELECT plan(38);

SET LOCAL a2.now = '2026-10-01 00:00:00+00';

-- Fingerprint of every session-keyed a2 table and the marks.
CREATE FUNCTION ops_fp() RETURNS text LANGUAGE sql AS $f$
	SELECT md5(concat_ws(E'\f',
		(SELECT string_agg(t::text, E'\n' ORDER BY t.session_id, t.idx) FROM a2_events t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshots t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_history t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_snapshot_pins t),
		(SELECT string_agg(t::text, E'\n' ORDER BY t::text) FROM a2_retired_sessions t)))
$f$;

-- throws_ok, then: nothing changed
CREATE FUNCTION ops_refused(sql text, state text, msg text, what text)
RETURNS SETOF text LANGUAGE plpgsql AS $f$
DECLARE
	before text := ops_fp();
BEGIN
	RETURN NEXT throws_ok(sql, state, msg, what);
	RETURN NEXT is(ops_fp(), before, what || ': nothing written');
END
$f$;

------------------------------------------------------------------------
-- 1. Refusals
------------------------------------------------------------------------
SELECT a2_append('ops:busy', '[{"type": "t"}, {"type": "t", "settled": true}]') IS NOT NULL AS ok \gset
SELECT a2_put_snapshots('ops:busy', 'r', '[{"index": 1, "state": {}}]');

SELECT * FROM ops_refused($$SELECT a2_drop_session('ops:busy')$$, 'Z2010',
	'session "ops:busy" has unfinished events', 'drop of an unfinished session');
SELECT * FROM ops_refused($$SELECT a2_drop_session('ops:busy', false)$$, 'Z2010',
	NULL, 'drop with force => false');
SELECT * FROM ops_refused($$SELECT a2_drop_session(NULL)$$, '22004', NULL, 'drop: NULL session_id');
SELECT * FROM ops_refused($$SELECT a2_drop_session('')$$, '22023', NULL, 'drop: empty session_id');
SELECT * FROM ops_refused($$SELECT a2_drop_session(repeat('s', 1025))$$, '22023', NULL, 'drop: 1025-byte session_id');
SELECT * FROM ops_refused($$SELECT a2_drop_session('ops:busy', NULL)$$, '22004', NULL, 'drop: NULL force');
SELECT * FROM ops_refused($$SELECT a2_drop_finished_sessions(NULL, 1)$$, '22004', NULL, 'batch drop: NULL idle_ms');
SELECT * FROM ops_refused($$SELECT a2_drop_finished_sessions(-1, 1)$$, '22023', NULL, 'batch drop: negative idle_ms');
SELECT * FROM ops_refused($$SELECT a2_drop_finished_sessions(0, 0)$$, '22023', NULL, 'batch drop: max_sessions 0');
SELECT * FROM ops_refused($$SELECT a2_drop_finished_sessions(0, 10001)$$, '22023', NULL, 'batch drop: max_sessions over the list limit');

SELECT throws_ok($$SELECT a2_list_sessions(NULL)$$, '22004', NULL, 'list_sessions: NULL prefix');
SELECT throws_ok($$SELECT a2_list_sessions('', '')$$, '22023', NULL, 'list_sessions: empty cursor');
SELECT throws_ok($$SELECT a2_list_sessions('', NULL, -5)$$, '22023', NULL, 'list_sessions: negative page');
SELECT lives_ok($$SELECT a2_list_sessions('', NULL, 10000)$$, 'list_sessions: a page of 10000 is allowed');
SELECT throws_ok($$SELECT a2_list_snapshots('ops:busy', NULL)$$, '22004', NULL, 'list_snapshots: NULL include_history');

-- force drops it, and the mark is kept
SELECT is(a2_drop_session('ops:busy', true) -> 'lastIndex', '2'::jsonb, 'force drops an unfinished session');

------------------------------------------------------------------------
-- 2. Monitoring
------------------------------------------------------------------------
CREATE ROLE regress_a2_monitor;
CREATE ROLE regress_a2_exec;
CREATE ROLE regress_a2_nobody;
CREATE ROLE regress_a2_worker;
CREATE ROLE regress_a2_retention;
DO $$
DECLARE
	s text := (SELECT quote_ident(n.nspname) FROM pg_extension e
				 JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'a2');
BEGIN
	-- monitoring: the schema and pg_monitor, nothing on the tables
	EXECUTE format('GRANT USAGE ON SCHEMA %s TO regress_a2_monitor, regress_a2_exec, regress_a2_nobody,'
				   ' regress_a2_worker, regress_a2_retention', s);
	GRANT pg_monitor TO regress_a2_monitor;
	-- or EXECUTE on the function alone
	EXECUTE format('GRANT EXECUTE ON FUNCTION %s.a2_metrics() TO regress_a2_exec', s);
	-- the worker grants of docs/security.md (the ones a2_append and a2_read need)
	EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.a2_events TO regress_a2_worker', s);
	-- from 0.3.0 the SECURITY DEFINER mark function is not PUBLIC
	EXECUTE format('GRANT EXECUTE ON FUNCTION %s.a2_retired_last_index(text) TO regress_a2_worker', s);
	-- the retention grants of docs/operations.md
	EXECUTE format('GRANT SELECT, UPDATE, DELETE ON %s.a2_events TO regress_a2_retention', s);
	EXECUTE format('GRANT SELECT, DELETE ON %s.a2_snapshots, %s.a2_snapshot_history, %s.a2_snapshot_pins'
				   ' TO regress_a2_retention', s, s, s);
	EXECUTE format('GRANT SELECT, INSERT, UPDATE ON %s.a2_retired_sessions TO regress_a2_retention', s);
END $$;

SELECT a2_append('ops:m', '[{"type": "t"}]') IS NOT NULL AS ok \gset

SET LOCAL ROLE regress_a2_monitor;
SELECT is((SELECT eligible_events >= 1 FROM a2_metrics()), true,
	'pg_monitor member: reads a2_metrics()');
SELECT throws_ok($$SELECT count(*) FROM a2_events$$, '42501', NULL,
	'pg_monitor member: cannot read the events');
SELECT throws_ok($$SELECT a2_list_sessions('')$$, '42501', NULL,
	'pg_monitor member: inspection needs SELECT on the tables');
SELECT throws_ok($$SELECT a2_read('ops:m')$$, '42501', NULL,
	'pg_monitor member: cannot read a session');
RESET ROLE;

SET LOCAL ROLE regress_a2_exec;
SELECT lives_ok($$SELECT * FROM a2_metrics()$$, 'EXECUTE on a2_metrics(): reads the metrics');
RESET ROLE;

SET LOCAL ROLE regress_a2_nobody;
SELECT throws_ok($$SELECT * FROM a2_metrics()$$, '42501', NULL,
	'no pg_monitor, no EXECUTE: a2_metrics() is refused');
RESET ROLE;

------------------------------------------------------------------------
-- 3. A worker and the high-water mark
------------------------------------------------------------------------
SET LOCAL ROLE regress_a2_worker;
SELECT is(a2_append('ops:busy', '[{"type": "t"}]') -> 'events' -> 0 -> 'index', '3'::jsonb,
	'worker: an append to a dropped session continues after its mark');
SELECT throws_ok($$SELECT * FROM a2_retired_sessions$$, '42501', NULL,
	'worker: cannot list the retired sessions');
SELECT throws_ok($$SELECT a2_drop_session('ops:m', true)$$, '42501', NULL,
	'worker: cannot drop a session');
RESET ROLE;

------------------------------------------------------------------------
-- 4. Retention
------------------------------------------------------------------------
SET LOCAL ROLE regress_a2_retention;
SELECT is(a2_drop_session('ops:busy', true) -> 'lastIndex', '3'::jsonb,
	'retention role: drops a session');
SELECT is(a2_drop_finished_sessions(0, 10) >= 0, true,
	'retention role: runs the batch drop');
RESET ROLE;
SELECT is(a2_retired_last_index('ops:busy'), 3::bigint, 'the mark moved to 3');

SELECT * FROM finish();
ROLLBACK;
