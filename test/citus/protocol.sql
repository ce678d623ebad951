/*
 * test/citus/protocol.sql
 *	  The protocol on two sessions, one on each worker (session.sql), then
 *	  what spans sessions: read_states across both workers, the per-session
 *	  id contract, presence, a2.now in delegated calls.
 */
\set ON_ERROR_STOP 1
\set QUIET 1
SELECT port AS w1 FROM (SELECT nodeport AS port FROM pg_dist_node WHERE groupid > 0 ORDER BY groupid LIMIT 1) x \gset
SELECT port AS w2 FROM (SELECT nodeport AS port FROM pg_dist_node WHERE groupid > 0 ORDER BY groupid OFFSET 1 LIMIT 1) x \gset
SELECT citus_test_session_on('sess', :w1) AS sa, citus_test_session_on('sess', :w2) AS sb \gset
SELECT citus_test_ok(:'sa' IS NOT NULL AND :'sb' IS NOT NULL, 'a session on each worker');

\set s :sa
\set port :w1
SELECT set_config('t.s', :'s', false);
\ir session.sql
\set s :sb
\set port :w2
SELECT set_config('t.s', :'s', false);
\ir session.sql

-- read_states over sessions on both workers, in request order
SELECT a2_read_states(jsonb_build_array(jsonb_build_object('sessionId', :'sb', 'throughIndex', 4),
										jsonb_build_object('sessionId', :'sa'),
										jsonb_build_object('sessionId', 'nobody')), 'total') AS r \gset
SELECT citus_test_ok(jsonb_array_length(:'r'::jsonb) = 3
					 AND (:'r'::jsonb) #>> '{0,events,0,sessionId}' = :'sb'
					 AND jsonb_array_length((:'r'::jsonb) #> '{0,events}') = 2
					 AND (:'r'::jsonb) #> '{1,headIndex}' = '2'
					 AND jsonb_array_length((:'r'::jsonb) #> '{1,events}') = 3
					 AND (:'r'::jsonb) -> 2 = '{"events": [], "snapshot": null, "headIndex": null}',
					 'read_states answers each request from its own worker, in order');

-- contract change: ids are unique per session, so one id may live in both
SELECT a2_append(:'sa', '[{"id": "shared-id", "type": "x"}]') IS NOT NULL AS a \gset
SELECT a2_append(:'sb', '[{"id": "shared-id", "type": "x"}]') IS NOT NULL AS b \gset
SELECT citus_test_ok((SELECT count(*) FROM a2_events WHERE event_id = 'shared-id') = 2,
					 'distributed mode: the same id in two sessions');

-- presence, by ns
SELECT a2_presence_set('room-1', 'alice', '{"cursor": 10, "typing": true}', now(), 1, 60000);
SELECT a2_presence_set('room-1', 'alice', '{"typing": null}', now(), 2, 60000);
SELECT citus_test_ok(a2_presence_read('room-1') @> '[{"participant": "alice", "field": "cursor", "value": 10}]'
					 AND jsonb_array_length(a2_presence_read('room-1')) = 1,
					 'presence write, delete and read');

-- a2.now reaches a delegated call as SET LOCAL with propagate_set_commands
BEGIN;
SET LOCAL citus.propagate_set_commands = 'local';
SET LOCAL a2.now = '2030-01-01T00:00:00.000Z';
SELECT a2_append(:'sa', '[{"type": "timed"}]') #>> '{events,0,createdAt}' AS t \gset
COMMIT;
SELECT citus_test_ok(:'t' = '2030-01-01T00:00:00.000Z', 'SET LOCAL a2.now reaches the delegated call');

-- the contract's single-node errors still hold per session
DO $$ BEGIN
	PERFORM a2_append(current_setting('t.s'), '[{"id": "dup", "type": "x"}, {"id": "dup", "type": "y"}]');
	RAISE EXCEPTION 'duplicate ids in a batch accepted' USING ERRCODE = 'ZT000';
EXCEPTION WHEN SQLSTATE 'Z2001' THEN NULL;
END $$;
-- redrive and drop (issues 9 and 10) on a session, delegated
SELECT citus_test_session_on('ops', :w2) AS so \gset
SELECT a2_append(:'so', '[{"type": "x"}, {"type": "y"}]') IS NOT NULL AS ok \gset
SELECT a2_claim(:'so', 'h', 30000) IS NOT NULL AS ok \gset
SELECT citus_test_ok(a2_fail(:'so', 1, 1, 'e', 1) ->> 'outcome' = 'dead_lettered', 'dead-letter before redrive');
SELECT citus_test_ok(a2_redrive(:'so', 1) ->> 'outcome' = 'redriven', 'redrive is delegated and works');
SELECT citus_test_ok((a2_drop_session(:'so', true) ->> 'lastIndex')::int = 2, 'drop_session reports the last index');
SELECT citus_test_ok(a2_append(:'so', '[{"type": "after-drop"}]') #> '{events,0,index}' = '3',
					 'an append after the drop continues after the high-water mark');
-- functions that span sessions work across shards (test/citus/fleet.py
-- checks them in depth)
SELECT citus_test_ok(jsonb_array_length(a2_claim_next('h', 600000, 1) -> 'claims') = 1,
					 'a2_claim_next runs in distributed mode (the after-drop append is available)');
SELECT citus_test_ok(a2_list_sessions('', NULL, 1) ? 'sessions', 'a2_list_sessions runs in distributed mode');
SELECT citus_test_ok(a2_drop_finished_sessions(86400000, 1) = 0, 'a2_drop_finished_sessions runs in distributed mode');
-- (a row IS NOT NULL only when every column is: 0.3.0's earliest_due_at is
-- NULL with nothing scheduled, so the counts are checked one by one)
SELECT citus_test_ok((SELECT m.eligible_events >= 0 AND m.leased_events >= 1
							 AND m.dead_letters >= 0 AND m.scheduled_events >= 0
						FROM a2_metrics() m),
					 'a2_metrics reads across shards (the claim above is leased)');
-- and compare a column with the shards' rows: a dead letter on each worker
SELECT citus_test_ok(m.measured_at IS NOT NULL
					 AND m.dead_letters >= 2
					 AND m.dead_letters = (SELECT count(*) FROM a2_events WHERE failed_at IS NOT NULL AND processed_at IS NULL),
					 'a2_metrics reads across shards')
  FROM a2_metrics() m;
\echo protocol: passed
