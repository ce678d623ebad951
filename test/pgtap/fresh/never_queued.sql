--
-- A database that never used a named queue, a priority or a pause: a call
-- of a2_claim_next for every queue then skips its discovery statement (the
-- btree a2_events_queue_available holds its metapage only and a2_queues
-- has no page: src/dispatch_walk.c, never_queued), and a2_claim skips the
-- paused queues' statement (src/queues.c).  The first named event, the
-- first priority and the first pause must each be seen by the very next
-- call, in the same transaction and from a fresh one.
--
-- Likewise a database whose work is all in named queues: the btree
-- a2_events_default_available holds its metapage only, and a call for
-- every queue skips the default queue's plain probes (never_plain).  The
-- first plain event must be served by the next call, and its lease be in
-- the call after's retryAt.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SET a2.now = '2026-05-01 00:00:00+00';

BEGIN;
SELECT plan(19);

SELECT is(pg_relation_size('a2_events_queue_available'), current_setting('block_size')::bigint,
		  'a new database: a2_events_queue_available has its metapage only');
SELECT is(pg_relation_size('a2_queues'), 0::bigint, 'a new database: a2_queues has no page');

-- plain work only: served as ever
SELECT is(a2_append('plain-1', '[{"type": "t"}]') -> 'events' -> 0 ->> 'index', '1', 'plain work appended');
SELECT is(a2_claim_next('w', 60000) -> 'claims' -> 0 ->> 'sessionId', 'plain-1',
		  'the plain session is served');

-- the first event with a priority: newer, yet served first
SELECT is(a2_append('plain-2', '[{"type": "t"}]') -> 'events' -> 0 ->> 'index', '1', 'more plain work');
SET a2.now = '2026-05-01 00:00:01+00';
SELECT is(a2_append('urgent-1', '[{"type": "t", "priority": 5}]') -> 'events' -> 0 ->> 'index', '1',
		  'the first prioritized event');
SELECT is(a2_claim_next('w', 60000) -> 'claims' -> 0 ->> 'sessionId', 'urgent-1',
		  'the next call serves the prioritized session before the older plain one');

-- the first pause, with a2_events emptied again (TRUNCATE: a new, empty
-- btree): a2_queues gets its first page
TRUNCATE a2_events;
SELECT is(pg_relation_size('a2_events_queue_available'), current_setting('block_size')::bigint,
		  'after TRUNCATE: a2_events_queue_available has its metapage only');
SELECT is(a2_append('plain-3', '[{"type": "t"}]') -> 'events' -> 0 ->> 'index', '1', 'plain work again');
SELECT ok(a2_pause_queue('default') IS NOT NULL, 'the default queue paused');
SELECT is(a2_claim_next('w', 60000) -> 'claims', '[]'::jsonb,
		  'the next call sees the default queue paused: plain-3 is not served');
SELECT is(a2_claim('plain-3', 'w', 60000) ->> 'outcome', 'settled',
		  'a2_claim sees it paused too (paused work is not eligible, nothing is leased)');

-- queued work only
TRUNCATE a2_events;
SELECT ok(a2_resume_queue('default') IS NOT NULL, 'the default queue resumed');
SELECT is(pg_relation_size('a2_events_default_available'), current_setting('block_size')::bigint,
		  'after TRUNCATE: a2_events_default_available has its metapage only');
SET a2.now = '2026-05-01 00:01:00+00';
SELECT is(a2_append('q-1', '[{"type": "t", "queue": "qa"}]') -> 'events' -> 0 ->> 'index', '1',
		  'queued work only');
SELECT is((SELECT jsonb_build_array(r -> 'claims' -> 0 ->> 'sessionId', r -> 'retryAt')
			 FROM a2_claim_next('w', 60000) r),
		  '["q-1", "2026-05-01T00:02:00.000Z"]'::jsonb,
		  'a call for every queue serves it; retryAt is its lease''s expiry');
SET a2.now = '2026-05-01 00:01:01+00';
SELECT is(a2_append('plain-4', '[{"type": "t"}]') -> 'events' -> 0 ->> 'index', '1',
		  'the first plain event');
SELECT is(a2_claim_next('w', 1000) -> 'claims' -> 0 ->> 'sessionId', 'plain-4',
		  'the next call serves it');
SELECT is(a2_claim_next('w', 1000) -> 'retryAt', '"2026-05-01T00:01:02.000Z"'::jsonb,
		  'and the call after has its lease''s expiry, before the queued lease''s, as retryAt');
SELECT * FROM finish();
ROLLBACK;
