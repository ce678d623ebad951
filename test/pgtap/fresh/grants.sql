-- grants.sql: SPEC 7.4 and 7.5 -- the grant helpers and the clock
-- override.
--
--  1. a2_grant_worker gives a role the whole worker protocol (append, read,
--     claim, renew, complete, fail, claim_next, redrive, cancel, state, snapshots,
--     presence), and nothing else: no metrics, no notifier status, no
--     dropping sessions, no direct deletes, no a2_retired_sessions.
--  2. a2_grant_monitor gives metrics, the notifier's status and inspection,
--     and no protocol writes.
--  3. The helpers are idempotent, refused (42501) to a role that does not
--     own the extension, and a2_revoke takes everything back.
--  4. No SECURITY DEFINER function of a2 is executable by PUBLIC.
--  5. a2.allow_clock_override = off: a non-superuser's a2.now makes every a2
--     call fail with 42501 and write nothing, also when the call runs in a
--     superuser's SECURITY DEFINER function, a view or a trigger; a
--     superuser's still works; only a superuser can change the setting.
--
-- Roles regress_a2_gw, regress_a2_gm and regress_a2_gx are created inside
-- the file's one transaction and vanish with its ROLLBACK.

\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;

SELECT plan(57);

CREATE ROLE regress_a2_gw;
CREATE ROLE regress_a2_gm;
CREATE ROLE regress_a2_gx;

-- 4. SECURITY DEFINER functions and PUBLIC
SELECT is((SELECT count(*) FROM pg_proc p
			 JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
			 JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'a2'
			WHERE p.prosecdef
			  AND has_function_privilege('public', p.oid, 'EXECUTE')), 0::bigint,
		  'no SECURITY DEFINER function of a2 is executable by PUBLIC');
SELECT ok((SELECT count(*) FROM pg_proc p
			 JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
			 JOIN pg_extension e ON e.oid = d.refobjid AND e.extname = 'a2'
			WHERE p.prosecdef) >= 1, 'a2 has SECURITY DEFINER functions to check (metrics)');

-- 3. idempotent, and refused to a non-owner
SELECT lives_ok($$SELECT a2_grant_worker('regress_a2_gw')$$, 'a2_grant_worker');
SELECT lives_ok($$SELECT a2_grant_worker('regress_a2_gw')$$, 'a2_grant_worker again (idempotent)');
SELECT lives_ok($$SELECT a2_grant_monitor('regress_a2_gm')$$, 'a2_grant_monitor');
SELECT lives_ok($$SELECT a2_grant_monitor('regress_a2_gm')$$, 'a2_grant_monitor again (idempotent)');
SET ROLE regress_a2_gw;
SELECT throws_ok($$SELECT a2_grant_worker('regress_a2_gx')$$, '42501', NULL,
				 'a worker cannot run a2_grant_worker');
SELECT throws_ok($$SELECT a2_revoke('regress_a2_gm')$$, '42501', NULL, 'a worker cannot run a2_revoke');
RESET ROLE;

SET a2.now = '2026-04-01 00:00:00+00';
SELECT a2_append('g:dropped', '[{"type":"a"}]') IS NOT NULL AS setup_dropped_session \g /dev/null
SELECT a2_drop_session('g:dropped', true) IS NOT NULL \g /dev/null

-- 1. the worker runs the whole protocol
SET ROLE regress_a2_gw;
SELECT is(jsonb_path_query_array(a2_append('g:s1', '[{"id":"g:e1","type":"a"},{"id":"g:e2","type":"b"},{"id":"g:e3","type":"c"}]'),
			'$.events[*].index'), '[1, 2, 3]', 'worker: append');
SELECT is(a2_append('g:dropped', '[{"type":"again"}]')->'events'->0->>'index', '2',
		  'worker: append after a drop continues after the high-water mark');
SELECT is(jsonb_array_length(a2_read('g:s1')), 3, 'worker: read');
SELECT is(jsonb_path_query_array(a2_claim('g:s1', 'w', 60000, NULL, '{3}'), '$.events[*].index'), '[1, 2]', 'worker: claim');
SELECT is(a2_renew('g:s1', 'w', '[{"index":1,"attempt":1}]', 60000)->'renewed', '[1]', 'worker: renew');
SELECT is(a2_complete('g:s1', 1, 1, '[{"id":"g:c1","type":"child"}]')->>'outcome', 'completed', 'worker: complete');
SELECT is(a2_fail('g:s1', 2, 1, 'boom', 1)->>'outcome', 'dead_lettered', 'worker: fail');
SELECT is(a2_redrive('g:s1', 2)->>'outcome', 'redriven', 'worker: redrive');
SELECT is(jsonb_array_length(a2_claim_next('w', 60000, 10)->'claims'), 2, 'worker: claim_next (g:s1 and g:dropped)');
SELECT lives_ok($$SELECT a2_put_snapshots('g:s1', 'r', '[{"index":1,"state":{"n":1}}]')$$, 'worker: put_snapshots');
SELECT is(a2_read_state('g:s1', 'r')->'snapshot'->>'index', '1', 'worker: read_state');
SELECT is(jsonb_array_length(a2_read_states('[{"sessionId":"g:s1"}]', 'r')), 1, 'worker: read_states');
SELECT lives_ok($$SELECT a2_presence_set('g:ns', 'p', '{"a":1}', '2026-04-01 00:00:00+00', 1, 60000)$$, 'worker: presence_set');
SELECT is(jsonb_array_length(a2_presence_read('g:ns')), 1, 'worker: presence_read');
SELECT is(jsonb_path_query_array(a2_cancel('g:s1', '{3}', 'grants'), '$.cancelled[*].index'), '[3]',
		  'worker: cancel (0.4.0)');
-- ... and nothing else
SELECT throws_ok($$SELECT * FROM a2_metrics()$$, '42501', NULL, 'worker: no a2_metrics');
SELECT throws_ok($$SELECT * FROM a2_notify_status()$$, '42501', NULL, 'worker: no a2_notify_status');
SELECT throws_ok($$SELECT a2_notify_wait(0)$$, '42501', NULL, 'worker: no a2_notify_wait');
SELECT throws_ok($$SELECT a2_drop_session('g:s1', true)$$, '42501', NULL, 'worker: cannot drop a session');
SELECT throws_ok($$DELETE FROM a2_events$$, '42501', NULL, 'worker: cannot delete events');
SELECT throws_ok($$TRUNCATE a2_events$$, '42501', NULL, 'worker: cannot truncate');
SELECT throws_ok($$SELECT * FROM a2_retired_sessions$$, '42501', NULL, 'worker: cannot read a2_retired_sessions');
RESET ROLE;

-- 2. the monitor
SET ROLE regress_a2_gm;
SELECT is((SELECT dead_letters FROM a2_metrics()), 0::bigint, 'monitor: a2_metrics');
SELECT is((SELECT mode FROM a2_notify_status()) IS NOT NULL, true, 'monitor: a2_notify_status');
SELECT is(jsonb_array_length(a2_list_sessions('g:')->'sessions'), 2, 'monitor: a2_list_sessions');
SELECT is(jsonb_array_length(a2_list_snapshots('g:s1')), 1, 'monitor: a2_list_snapshots');
SELECT throws_ok($$SELECT a2_append('g:m', '[{"type":"a"}]')$$, '42501', NULL, 'monitor: cannot append');
SELECT throws_ok($$SELECT a2_claim('g:s1', 'm', 1000)$$, '42501', NULL, 'monitor: cannot claim');
SELECT throws_ok($$SELECT a2_cancel('g:s1')$$, '42501', NULL, 'monitor: cannot cancel');
SELECT throws_ok($$SELECT a2_retired_last_index('g:dropped')$$, '42501', NULL, 'monitor: no a2_retired_last_index');
RESET ROLE;

-- 3. a2_revoke takes it back
SELECT lives_ok($$SELECT a2_revoke('regress_a2_gw')$$, 'a2_revoke worker');
SELECT lives_ok($$SELECT a2_revoke('regress_a2_gw')$$, 'a2_revoke again (idempotent)');
SELECT lives_ok($$SELECT a2_revoke('regress_a2_gm')$$, 'a2_revoke monitor');
SET ROLE regress_a2_gw;
SELECT throws_ok($$SELECT a2_read('g:s1')$$, '42501', NULL, 'revoked worker: no read');
RESET ROLE;
SET ROLE regress_a2_gm;
SELECT throws_ok($$SELECT * FROM a2_metrics()$$, '42501', NULL, 'revoked monitor: no a2_metrics');
RESET ROLE;

-- 5. a2.allow_clock_override
SELECT lives_ok($$SELECT a2_grant_worker('regress_a2_gw')$$, 'a2_grant_worker again after the revoke');
SET ROLE regress_a2_gw;
SELECT throws_ok($$SET a2.allow_clock_override = off$$, '42501', NULL,
				 'a non-superuser cannot change a2.allow_clock_override');
RESET ROLE;
SET a2.allow_clock_override = off;
SET ROLE regress_a2_gw;
SET a2.now = '2026-05-01 00:00:00+00';
SELECT throws_ok($$SELECT a2_append('g:clock', '[{"type":"a"}]')$$, '42501',
				 'a2.now is set, but a2.allow_clock_override is off',
				 'override off: a worker with a2.now set cannot append');
SELECT throws_ok($$SELECT a2_claim('g:s1', 'w', 60000)$$, '42501', NULL,
				 'override off: a worker with a2.now set cannot claim (take over leases)');
SELECT throws_ok($$SELECT a2_read('g:s1')$$, '42501', NULL, 'override off: nor read');
RESET a2.now;
SELECT is(a2_append('g:clock', '[{"type":"a"}]')->'events'->0->>'index', '1',
		  'override off: with a2.now reset the worker appends on the wall clock');
RESET ROLE;
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'g:clock'), 1::bigint,
		  'override off: the refused append wrote nothing');
SET a2.now = '2026-05-01 00:00:00+00';
SELECT is(a2_append('g:clock', '[{"type":"b"}]')->'events'->0->>'createdAt', '2026-05-01T00:00:00.000Z',
		  'override off: a superuser''s a2.now is still honoured');
-- the role that set the clock counts, not the definer a2 runs as
CREATE FUNCTION public.regress_a2_definer_claim() RETURNS jsonb
	LANGUAGE sql SECURITY DEFINER SET search_path = public
	AS $f$ SELECT a2_claim('g:s1', 'thief', 60000) $f$;
GRANT EXECUTE ON FUNCTION public.regress_a2_definer_claim() TO regress_a2_gw;
CREATE VIEW public.regress_a2_clock_view AS SELECT a2_read('g:clock') AS r;
GRANT SELECT ON public.regress_a2_clock_view TO regress_a2_gw;
CREATE TABLE public.regress_a2_inbox (id int);
GRANT INSERT ON public.regress_a2_inbox TO regress_a2_gw;
CREATE FUNCTION public.regress_a2_inbox_trigger() RETURNS trigger
	LANGUAGE plpgsql SECURITY DEFINER SET search_path = public
	AS $f$ BEGIN PERFORM a2_append('g:clock', '[{"type":"from-trigger"}]'); RETURN NEW; END $f$;
CREATE TRIGGER regress_a2_inbox_append AFTER INSERT ON public.regress_a2_inbox
	FOR EACH ROW EXECUTE FUNCTION public.regress_a2_inbox_trigger();
SET ROLE regress_a2_gw;
SET a2.now = '2030-01-01 00:00:00+00';
SELECT throws_ok($$SELECT public.regress_a2_definer_claim()$$, '42501', NULL,
				 'override off: a worker''s a2.now is refused through a superuser''s SECURITY DEFINER function');
SELECT throws_ok($$SELECT * FROM public.regress_a2_clock_view$$, '42501', NULL,
				 'override off: ... through a view');
SELECT throws_ok($$INSERT INTO public.regress_a2_inbox VALUES (1)$$, '42501', NULL,
				 'override off: ... through a trigger with a SECURITY DEFINER function');
RESET a2.now;
RESET ROLE;
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'g:clock' AND event_type = 'from-trigger'), 0::bigint,
		  'override off: the refused trigger wrote nothing');
SET a2.now = '2026-05-01 00:00:00+00';
SELECT lives_ok($$SELECT public.regress_a2_definer_claim()$$,
				'override off: a superuser''s a2.now is honoured through the same definer function');
RESET a2.allow_clock_override;
SET ROLE regress_a2_gw;
SELECT is(a2_append('g:clock', '[{"type":"c"}]')->'events'->0->>'createdAt', '2026-05-01T00:00:00.000Z',
		  'override on (the default): a worker''s a2.now is honoured');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
