/*
 * test/citus/grants.sql
 *	  Run by test/citus/grants.sh as a role made with a2_grant_worker, on
 *	  the coordinator, once per worker: the whole worker protocol on
 *	  session :'s' through delegated calls (plain SELECT a2_...(...),
 *	  run on the shard's node as the role), then on session :'c' through
 *	  calls the coordinator runs (inside PL/pgSQL, each statement routed to
 *	  the shard), then on :'d', a session postgres dropped: an append
 *	  continues after its high-water mark.  Checks with citus_test_ok;
 *	  psql runs with ON_ERROR_STOP, so a permission error stops the run
 *	  with its message.
 */
\set ON_ERROR_STOP 1
\set QUIET 1
\echo grants: delegated calls on :s
SELECT set_config('t.c', :'c', false) IS NOT NULL AS ok \gset

-- Each call is the whole statement (so Citus delegates it), its result
-- kept with \gset and checked after.
-- append, read
SELECT a2_append(:'s', jsonb_build_array(jsonb_build_object('id', :'s' || '-1', 'type', 'a'),
										 jsonb_build_object('id', :'s' || '-2', 'type', 'b'),
										 jsonb_build_object('id', :'s' || '-3', 'type', 'c', 'lane', 'L'))) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) #> '{events,2,index}' = '3', 'worker: append (delegated)');
SELECT a2_read(:'s') AS r \gset
SELECT citus_test_ok(jsonb_array_length(:'r'::jsonb) = 3, 'worker: read (delegated)');
-- claim, renew, snapshots, complete, fail, redrive
SELECT a2_claim(:'s', 'gw', 60000) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) ->> 'outcome' = 'claimed' AND jsonb_array_length((:'r'::jsonb) -> 'events') = 3,
					 'worker: claim (delegated)');
SELECT a2_renew(:'s', 'gw', '[{"index": 1, "attempt": 1}]', 60000) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) -> 'renewed' = '[1]', 'worker: renew (delegated)');
-- checkpoint 1 is pinned by event 3, which stays claimed to the end
SELECT a2_put_snapshots(:'s', 'r', '[{"index": 1, "state": {"n": 1}, "pinEventIndexes": [3]}]') AS r \gset
SELECT a2_put_snapshots(:'s', 'r', '[{"index": 2, "state": {"n": 2}}]') AS r \gset
SELECT a2_complete(:'s', 1, 1, jsonb_build_array(jsonb_build_object('id', :'s' || '-c', 'type', 'child'))) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) ->> 'outcome' = 'completed', 'worker: complete (delegated)');
SELECT a2_fail(:'s', 2, 1, 'boom', 1) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) ->> 'outcome' = 'dead_lettered', 'worker: fail (delegated)');
SELECT a2_redrive(:'s', 2) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) ->> 'outcome' = 'redriven', 'worker: redrive (delegated)');
SELECT a2_redrive(:'s') AS r \gset
SELECT citus_test_ok(jsonb_array_length((:'r'::jsonb) -> 'events') = 0, 'worker: redrive all (delegated)');
-- state
SELECT a2_read_state(:'s', 'r') AS r \gset
SELECT citus_test_ok((:'r'::jsonb) #> '{snapshot,index}' = '2', 'worker: read_state (delegated)');
SELECT a2_read_state(:'s', 'r', 2, 1) AS r \gset
SELECT citus_test_ok((:'r'::jsonb) #> '{snapshot,index}' = '1', 'worker: read_state of the pinned checkpoint (delegated)');
SELECT a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', :'s'),
										jsonb_build_object('sessionId', :'c')), 'r') AS r \gset
SELECT citus_test_ok(jsonb_array_length(:'r'::jsonb) = 2
					 AND (:'r'::jsonb) #> '{0,snapshot,index}' = '2', 'worker: read_states');
-- presence (by ns, on its own shard)
SELECT :'s' || '-room' AS ns \gset
SELECT a2_presence_set(:'ns', 'gw', '{"cursor": 1}', now(), 1, 60000) AS r \gset
SELECT a2_presence_set(:'ns', 'gw', '{"cursor": null, "typing": true}', now(), 2, 60000) AS r \gset
SELECT a2_presence_read(:'ns') AS r \gset
SELECT citus_test_ok(jsonb_array_length(:'r'::jsonb) = 1
					 AND (:'r'::jsonb) @> '[{"participant": "gw", "field": "typing", "value": true}]',
					 'worker: presence set, delete, read (delegated)');
-- in a transaction block: a replay of the first append, and an append
BEGIN;
SELECT a2_append(:'s', jsonb_build_array(jsonb_build_object('id', :'s' || '-1', 'type', 'a'),
										 jsonb_build_object('id', :'s' || '-2', 'type', 'b'),
										 jsonb_build_object('id', :'s' || '-3', 'type', 'c', 'lane', 'L'))) AS r \gset
SELECT a2_append(:'s', '[{"type": "in-tx"}]') AS r2 \gset
COMMIT;
SELECT citus_test_ok((:'r'::jsonb) #> '{events,2,index}' = '3' AND (:'r2'::jsonb) #> '{events,0,index}' = '5',
					 'worker: a replay and an append in one transaction block (delegated)');

\echo grants: coordinator-run calls on :c
DO $$
DECLARE
	c text := current_setting('t.c');
	r jsonb;
BEGIN
	r := a2_append(c, jsonb_build_array(jsonb_build_object('id', c || '-1', 'type', 'a'),
										jsonb_build_object('id', c || '-2', 'type', 'b'),
										jsonb_build_object('id', c || '-3', 'type', 'c')));
	PERFORM citus_test_ok(r #> '{events,2,index}' = '3', 'worker: append (coordinator-run)');
	PERFORM citus_test_ok(jsonb_array_length(a2_read(c)) = 3, 'worker: read (coordinator-run)');
	r := a2_claim(c, 'gw', 60000);
	PERFORM citus_test_ok(r ->> 'outcome' = 'claimed', 'worker: claim (coordinator-run)');
	PERFORM citus_test_ok(a2_renew(c, 'gw', '[{"index": 1, "attempt": 1}, {"index": 2, "attempt": 1}]', 60000)
						  -> 'renewed' = '[1, 2]', 'worker: renew (coordinator-run)');
	PERFORM a2_put_snapshots(c, 'r', '[{"index": 1, "state": {"n": 1}, "pinEventIndexes": [3]}]');
	PERFORM a2_put_snapshots(c, 'r', '[{"index": 2, "state": {"n": 2}}]');
	PERFORM citus_test_ok(a2_complete(c, 1, 1, jsonb_build_array(jsonb_build_object('id', c || '-c', 'type', 'child')))
						  ->> 'outcome' = 'completed', 'worker: complete (coordinator-run)');
	PERFORM citus_test_ok(a2_fail(c, 2, 1, 'boom', 1) ->> 'outcome' = 'dead_lettered', 'worker: fail (coordinator-run)');
	PERFORM citus_test_ok(a2_redrive(c, 2) ->> 'outcome' = 'redriven', 'worker: redrive (coordinator-run)');
	PERFORM citus_test_ok(a2_read_state(c, 'r', 2, 1) #> '{snapshot,index}' = '1', 'worker: read_state (coordinator-run)');
	PERFORM a2_presence_set(c || '-room', 'gw', '{"cursor": 1}', now(), 1, 60000);
	PERFORM a2_presence_set(c || '-room', 'gw', '{"cursor": null}', now(), 2, 60000);
	PERFORM citus_test_ok(a2_presence_read(c || '-room') = '[]'::jsonb, 'worker: presence set, delete, read (coordinator-run)');
END $$;

\echo grants: an append to :d, dropped by postgres
SELECT a2_append(:'d', '[{"type": "again"}]') AS r \gset
SELECT citus_test_ok((:'r'::jsonb) #> '{events,0,index}' = '2',
					 'worker: an append to a dropped session continues after its high-water mark (delegated)');
SELECT citus_test_ok(a2_append(:'d', '[{"type": "again"}]') #> '{events,0,index}' = '3',
					 'worker: the same, coordinator-run');
\echo grants: protocol passed
