--
-- A completion's pins check (docs/internals.md, "Direct writes"): a
-- completion writes its row directly only when the finishing statement
-- would find no snapshot pin of the event and no history row of its
-- session to release.  That is read from the tables' size when they have
-- no pages, and by probing their primary keys otherwise.  Each case is
-- told apart by whether the finishing statement's plan was prepared: a
-- direct completion prepares none.
--
-- In a new database: the pin tables have never had a page.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(16);

SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SET LOCAL a2.direct_writes = on;

-- The cached plans of complete.finish_event in this backend.
CREATE FUNCTION pg_temp.finish_plans() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_backend_memory_contexts
	 WHERE ident LIKE '%lane_ready = false, claim_holder = NULL, claim_expires_at = NULL%'
	   AND ident NOT LIKE '%pg_backend_memory_contexts%'
$$;

SELECT ok(a2_append('dp', '[{"type": "a"}, {"type": "b"}, {"type": "c"}, {"type": "d"},
							 {"type": "e"}, {"type": "f"}]') IS NOT NULL, 'six events');
SELECT is(jsonb_array_length(a2_claim('dp', 'w', 30000) -> 'events'), 6, 'all six claimed');

-- 1. No pages: the tables' size says there is nothing to release.
SELECT is(pg_relation_size('a2_snapshot_pins') + pg_relation_size('a2_snapshot_history'), 0::bigint,
		  'the pin tables have no pages in a new database');
SELECT is(a2_complete('dp', 1, 1, NULL) ->> 'outcome', 'completed', 'event 1 completed');
SELECT is(pg_temp.finish_plans(), 0::bigint,
		  'with no pages in the pin tables, the completion wrote its row directly');

-- 2. Pages, but no row of this event or session: the primary keys say so.
--    A pin of another session, and a pin of event 2 rolled back (its dead
--    index entry is stepped over).
INSERT INTO a2_snapshot_history VALUES ('dp-other', 'r', 1, '{}', 0);
INSERT INTO a2_snapshot_pins VALUES ('dp-other', 2, 'r', 1);
SAVEPOINT undone;
INSERT INTO a2_snapshot_history VALUES ('dp', 'r', 1, '{}', 0);
INSERT INTO a2_snapshot_pins VALUES ('dp', 2, 'r', 1);
ROLLBACK TO SAVEPOINT undone;
SELECT is(a2_complete('dp', 2, 1, NULL) ->> 'outcome', 'completed', 'event 2 completed');
SELECT is(pg_temp.finish_plans(), 0::bigint,
		  'with only another session''s pin and a rolled-back one, the completion wrote its row directly');

-- 3. A history row of the session, pinned by no event: the statement runs
--    and collects it.
INSERT INTO a2_snapshot_history VALUES ('dp', 'r', 2, '{}', 0);
SELECT is(a2_complete('dp', 3, 1, NULL) ->> 'outcome', 'completed', 'event 3 completed');
SELECT cmp_ok(pg_temp.finish_plans(), '>', 0::bigint,
		  'a history row of the session sends the completion to its statement');
SELECT is((SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'dp'), 0::bigint,
		  'which collected the unpinned history row');

-- 4. A pin of the event: released, with its history row; the other
--    session's rows stay.
INSERT INTO a2_snapshot_history VALUES ('dp', 'r', 3, '{}', 0);
INSERT INTO a2_snapshot_pins VALUES ('dp', 4, 'r', 3);
SELECT is(a2_complete('dp', 4, 1, NULL) ->> 'outcome', 'completed', 'event 4 completed');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'dp')
		  + (SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'dp'), 0::bigint,
		  'the event''s pin and the history row it held are released');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'dp-other')
		  + (SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'dp-other'), 2::bigint,
		  'another session''s pin and history row stay');

-- 5. A pin of another event of the session: its history row must stay,
--    and a completion of an unpinned event of that session still runs the
--    statement (the history row is the session's); the pin survives it.
INSERT INTO a2_snapshot_history VALUES ('dp', 'r', 4, '{}', 0);
INSERT INTO a2_snapshot_pins VALUES ('dp', 6, 'r', 4);
SELECT is(a2_complete('dp', 5, 1, NULL) ->> 'outcome', 'completed', 'event 5 completed');
SELECT results_eq($$SELECT event_index, up_to_index FROM a2_snapshot_pins WHERE session_id = 'dp'$$,
				  $$VALUES (6::bigint, 4::bigint)$$,
				  'event 6''s pin survives event 5''s completion');
SELECT is((SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'dp'), 1::bigint,
		  'and so does the history row it holds');

SELECT * FROM finish();
ROLLBACK;
