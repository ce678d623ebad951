/*
 * test/citus/session.sql
 *	  The whole protocol on one session, :'s', through delegated calls
 *	  (plain SELECT a2_...(...) on the coordinator, pushed to the node of
 *	  the session's shard).  Included by protocol.sql once per worker.
 */
\echo protocol on session :s (node :port)

-- append: dense indexes, supplied ids, a lane
SELECT a2_append(:'s', jsonb_build_array(
	jsonb_build_object('id', :'s' || '-a', 'type', 'order.placed', 'payload', '{"qty": 2}'::jsonb),
	jsonb_build_object('id', :'s' || '-b', 'type', 'pay', 'lane', 'L'))) AS r \gset
SELECT citus_test_ok((SELECT array_agg((e->>'index')::int) FROM jsonb_array_elements((:'r'::jsonb)->'events') e) = '{1,2}',
					 'first append gets indexes 1, 2');
-- an exact replay writes nothing and returns the stored events
SELECT a2_append(:'s', jsonb_build_array(
	jsonb_build_object('id', :'s' || '-a', 'type', 'order.placed', 'payload', '{"qty": 2}'::jsonb),
	jsonb_build_object('id', :'s' || '-b', 'type', 'pay', 'lane', 'L'))) AS r \gset
SELECT citus_test_ok((SELECT array_agg((e->>'index')::int) FROM jsonb_array_elements((:'r'::jsonb)->'events') e) = '{1,2}'
					 AND (SELECT count(*) FROM a2_events WHERE session_id = :'s') = 2,
					 'replay returns the stored events and writes nothing');
-- a partial replay is Z2001
DO $$ BEGIN
	PERFORM a2_append(current_setting('t.s'), jsonb_build_array(
		jsonb_build_object('id', current_setting('t.s') || '-a', 'type', 'order.placed', 'payload', '{"qty": 2}'::jsonb),
		jsonb_build_object('type', 'fresh')));
	RAISE EXCEPTION 'partial replay accepted' USING ERRCODE = 'ZT000';
EXCEPTION WHEN SQLSTATE 'Z2001' THEN NULL;
END $$;

-- claim every eligible event, renew them
SELECT a2_claim(:'s', 'worker-1', 30000) AS r \gset
SELECT citus_test_ok((:'r'::jsonb)->>'outcome' = 'claimed'
					 AND jsonb_array_length((:'r'::jsonb)->'events') = 2, 'claim takes both events');
SELECT citus_test_ok(a2_renew(:'s', 'worker-1', '[{"index": 1, "attempt": 1}, {"index": 2, "attempt": 1}]', 60000)
					 = '{"renewed": [1, 2], "superseded": []}', 'renew extends both leases');

-- snapshots: 1 pinned by unfinished event 2, then a head at 2
SELECT a2_put_snapshots(:'s', 'total', '[{"index": 1, "state": {"t": 2}, "pinEventIndexes": [2]}]');
SELECT a2_put_snapshots(:'s', 'total', '[{"index": 2, "state": {"t": 3}}]');
SELECT citus_test_ok((SELECT count(*) FROM a2_snapshot_history WHERE session_id = :'s') = 1
					 AND (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = :'s') = 1,
					 'the pinned old head moved to history');
SELECT citus_test_ok(a2_read_state(:'s', 'total', 2, 1) #> '{snapshot,index}' = '1'
					 AND a2_read_state(:'s', 'total') -> 'headIndex' = '2',
					 'read_state selects the pinned checkpoint and reports the head');

-- complete event 1 with a child; a retry returns the stored child
SELECT a2_complete(:'s', 1, 1, jsonb_build_array(jsonb_build_object('id', :'s' || '-c', 'type', 'shipped'))) AS r \gset
SELECT citus_test_ok((:'r'::jsonb)->>'outcome' = 'completed'
					 AND (:'r'::jsonb) #> '{events,0,index}' = '3'
					 AND (:'r'::jsonb) #> '{events,0,cause}' = '{"index": 1, "attempt": 1}',
					 'complete appends the child at index 3 with its cause');
SELECT citus_test_ok(a2_complete(:'s', 1, 1, jsonb_build_array(jsonb_build_object('id', :'s' || '-c', 'type', 'shipped')))
					 = :'r'::jsonb, 'a completion retry returns the stored child');
SELECT citus_test_ok(a2_complete(:'s', 1, 2) = '{"outcome": "superseded"}', 'another attempt is superseded');

-- fail event 2 to dead-letter: its pin goes, and the history row with it
SELECT citus_test_ok(a2_fail(:'s', 2, 1, 'card declined', 1) = '{"outcome": "dead_lettered", "failureCount": 1}',
					 'fail at max_failures dead-letters');
SELECT citus_test_ok((SELECT count(*) FROM a2_snapshot_history WHERE session_id = :'s') = 0
					 AND (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = :'s') = 0,
					 'dead-lettering released the pin and collected history');

-- errors keep their SQLSTATEs when delegated
DO $$ BEGIN
	PERFORM a2_complete(current_setting('t.s'), 99, 1);
	RAISE EXCEPTION 'complete of a missing event accepted' USING ERRCODE = 'ZT000';
EXCEPTION WHEN SQLSTATE 'Z2003' THEN NULL;
END $$;

-- inside the caller's transaction: own colocated and local rows commit with
-- the completion, or roll back with it
SELECT a2_claim(:'s', 'worker-1', 30000) #>> '{events,0,index}' AS k \gset
SELECT citus_test_ok(:k = 3, 'the child is claimable');
BEGIN;
INSERT INTO handled VALUES (:'s', 3, 'rolled back');
SELECT a2_complete(:'s', 3, 1) ->> 'outcome' AS o \gset
ROLLBACK;
SELECT citus_test_ok((SELECT processed_at IS NULL FROM a2_events WHERE session_id = :'s' AND idx = 3)
					 AND NOT EXISTS (SELECT 1 FROM handled WHERE session_id = :'s'),
					 'rollback undoes the completion and the handler''s row');
BEGIN;
INSERT INTO handled VALUES (:'s', 3, 'done');
SELECT a2_complete(:'s', 3, 1,
	jsonb_build_array(jsonb_build_object('id', :'s' || '-d', 'type', 'next'))) ->> 'outcome' AS o \gset
SELECT a2_append(:'s', jsonb_build_array(jsonb_build_object('id', :'s' || '-e', 'type', 'supplied'))) IS NOT NULL AS ok \gset
COMMIT;
SELECT citus_test_ok(:'o' = 'completed', 'completion inside a transaction block');
SELECT citus_test_ok((SELECT processed_at IS NOT NULL FROM a2_events WHERE session_id = :'s' AND idx = 3)
					 AND EXISTS (SELECT 1 FROM handled WHERE session_id = :'s' AND note = 'done')
					 AND (SELECT array_agg(event_id ORDER BY idx) FROM a2_events WHERE session_id = :'s' AND idx > 3)
						 = ARRAY[:'s' || '-d', :'s' || '-e'],
					 'the completion, its child, a supplied-id append and the handler''s row committed together');
-- a coordinator-local write in the same transaction as a delegated call
BEGIN;
INSERT INTO local_audit VALUES (:'s', 4);
SELECT a2_fail(:'s', 4, 0 + 1, 'x', 3) ->> 'outcome' AS o \gset
COMMIT;
SELECT citus_test_ok(:'o' = 'superseded' AND EXISTS (SELECT 1 FROM local_audit WHERE session_id = :'s'),
					 'a local write and a delegated call share a transaction');

-- read with bounds; the log is dense
SELECT citus_test_ok(jsonb_array_length(a2_read(:'s', 1, 4)) = 3
					 AND (SELECT array_agg(idx ORDER BY idx) FROM a2_events WHERE session_id = :'s') = '{1,2,3,4,5}',
					 'read with bounds, dense indexes');
