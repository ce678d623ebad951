--
-- A completion's and a failure's read of their event (docs/internals.md,
-- "Direct writes"): under the session lock, a2_complete and a2_fail read
-- their event without locking the row, and where they write that row
-- alone (a completion: no lane, no snapshot pins) they write it first (a
-- completion's returned events after).  Anything else locks the row with
-- the lock statement first.  Each case is told apart by whether the lock
-- statement's plan was prepared in this backend: a call that never ran
-- it prepared none.  Each case also checks what was written.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(33);

SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SET LOCAL a2.direct_writes = on;

-- The cached plans of complete.lock_event in this backend.
CREATE FUNCTION pg_temp.lock_plans() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_backend_memory_contexts
	 WHERE ident LIKE '%e.claim_holder IS NOT NULL AS held, e.failed_at IS NOT NULL AS dead_lettered%'
	   AND ident NOT LIKE '%pg_backend_memory_contexts%'
$$;

SELECT ok(a2_append('dc', '[{"type": "a"}, {"type": "b"}, {"type": "c", "lane": "l"}]') IS NOT NULL,
		  'three events, the third in a lane');
SELECT is(jsonb_array_length(a2_claim('dc', 'w', 30000) -> 'events'), 3, 'all three claimed');

-- 1. No lane, no pins: read without the lock, row first, children after.
SELECT is(a2_complete('dc', 1, 1, '[{"id": "dc-child", "type": "x"}]') -> 'events' -> 0 ->> 'id',
		  'dc-child', 'event 1 completed with its returned event');
SELECT is(pg_temp.lock_plans(), 0::bigint, 'the completion did not run the lock statement');
SELECT is((SELECT processed_by_attempt FROM a2_events WHERE session_id = 'dc' AND idx = 1), 1,
		  'event 1 is processed by attempt 1');
SELECT is((SELECT returned_event_ids FROM a2_events WHERE session_id = 'dc' AND idx = 1),
		  '["dc-child"]'::jsonb, 'with its returned event''s id');
SELECT is((SELECT cause FROM a2_events WHERE event_id = 'dc-child'),
		  '{"index": 1, "attempt": 1}'::jsonb, 'the returned event is caused by attempt 1');
SELECT is((SELECT claim_holder FROM a2_events WHERE session_id = 'dc' AND idx = 1), NULL,
		  'the lease is cleared');

-- 2. A retry of the same completion: the stored batch again, nothing written.
SELECT is(a2_complete('dc', 1, 1, '[{"id": "dc-child", "type": "x"}]') -> 'events' -> 0 ->> 'index',
		  '4', 'a retry returns the stored event');
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'dc'), 4::bigint,
		  'and inserts nothing');

-- 3. Another attempt: superseded, nothing written.
SELECT is(a2_complete('dc', 2, 7, '[{"id": "dc-never", "type": "x"}]') ->> 'outcome',
		  'superseded', 'a completion of an attempt that is not current is superseded');
SELECT is((SELECT count(*) FROM a2_events WHERE event_id = 'dc-never'), 0::bigint,
		  'and inserts nothing');
SELECT is((SELECT processed_at FROM a2_events WHERE session_id = 'dc' AND idx = 2), NULL,
		  'event 2 stays unprocessed');

-- 4. No such event: the same error as through the statement.
SELECT throws_ok($$ SELECT a2_complete('dc', 99, 1) $$, 'Z2003',
				 'no event at index 99 in session "dc"', 'a missing event raises Z2003');
SELECT is(pg_temp.lock_plans(), 0::bigint, 'none of these ran the lock statement');

-- 5. a2.direct_writes off: the lock statement reads the row.
SET LOCAL a2.direct_writes = off;
SELECT is(a2_complete('dc', 2, 1) ->> 'outcome', 'completed', 'event 2 completed');
SELECT cmp_ok(pg_temp.lock_plans(), '>', 0::bigint,
			  'with direct writes off, the completion ran the lock statement');
SET LOCAL a2.direct_writes = on;

-- 6. A lane: the row is locked first (its lane's promotion runs in the
--    finishing statement), and the result is the same.
SELECT is(a2_complete('dc', 3, 1, '[{"id": "dc-lane-child", "type": "x", "lane": "l"}]') ->> 'outcome',
		  'completed', 'the lane event completed');
SELECT is((SELECT processed_by_attempt FROM a2_events WHERE session_id = 'dc' AND idx = 3), 1,
		  'the lane event is processed by attempt 1');
SELECT is((SELECT lane_ready FROM a2_events WHERE event_id = 'dc-lane-child'), true,
		  'its returned event in the lane is lane-ready');

-- 7. Completed through the statement and read directly afterwards: a retry
--    replays the batch the statement stored.
SELECT is(a2_complete('dc', 3, 1, '[{"id": "dc-lane-child", "type": "x", "lane": "l"}]') -> 'events' -> 0 ->> 'id',
		  'dc-lane-child', 'a retry of the lane completion returns the stored event');
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'dc'), 5::bigint,
		  'and inserts nothing');

-- 8. Failures, read directly: counted, repeated, dead-lettered, superseded.
CREATE FUNCTION pg_temp.fail_plans() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_backend_memory_contexts
	 WHERE ident LIKE '%AS failed_by_this%'
	   AND ident NOT LIKE '%pg_backend_memory_contexts%'
$$;
SELECT ok(a2_append('df', '[{"type": "a"}, {"type": "b"}]') IS NOT NULL, 'two events to fail');
SELECT is(jsonb_array_length(a2_claim('df', 'w', 30000) -> 'events'), 2, 'both claimed');
SELECT is(a2_fail('df', 1, 1, 'boom', 3), '{"outcome": "failed", "failureCount": 1}'::jsonb,
		  'a failure is counted');
SELECT is(a2_fail('df', 1, 1, 'boom', 3), '{"outcome": "failed", "failureCount": 1}'::jsonb,
		  'a repeated failure of the same attempt is not counted again');
SELECT is((SELECT (failure_count, last_error, last_failed_attempt, claim_holder)::text
			 FROM a2_events WHERE session_id = 'df' AND idx = 1), '(1,boom,1,)',
		  'the failure is recorded and the lease cleared');
SELECT is(a2_fail('df', 2, 1, 'fatal', 1), '{"outcome": "dead_lettered", "failureCount": 1}'::jsonb,
		  'a failure at the limit dead-letters');
SELECT is(a2_fail('df', 2, 1, 'fatal', 1), '{"outcome": "dead_lettered", "failureCount": 1}'::jsonb,
		  'and says so again');
SELECT is(a2_fail('df', 1, 9, 'late', 3), '{"outcome": "superseded", "failureCount": 1}'::jsonb,
		  'another attempt''s failure is superseded');
SELECT is(pg_temp.fail_plans(), 0::bigint, 'none of these failures ran the lock statement');
SET LOCAL a2.direct_writes = off;
SELECT is(a2_fail('df', 1, 9, 'late', 3) ->> 'outcome', 'superseded', 'with direct writes off too');
SELECT cmp_ok(pg_temp.fail_plans(), '>', 0::bigint,
			  'with direct writes off, the failure ran the lock statement');
SET LOCAL a2.direct_writes = on;

SELECT * FROM finish();
ROLLBACK;
