--
-- Direct writes (docs/internals.md, "Direct writes"): appends, claims,
-- completions and failures write a2_events without the executor.  The
-- rows and the answers must be exactly those of the statements
-- (a2.direct_writes = off), for every kind of event, claim, completion
-- and failure.  Wherever the statement would do more than write the row
-- (a user's trigger, a policy, a default that is not a constant, a NOT
-- NULL column a2 does not fill, an index that is not a btree, column
-- privileges, a read-only transaction, a statement trigger or a missing
-- DELETE privilege on the snapshot pins a completion would release), a2
-- runs the statement, so that all of it still happens.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(37);

SET LOCAL a2.now = '2026-03-01 00:00:00+00';

-- The same appends, with their answers (less the generated id and the
-- session id), into session s.
CREATE FUNCTION pg_temp.script(s text) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
	r jsonb;
BEGIN
	FOREACH r IN ARRAY ARRAY[
		'[{"type": "first"}]',
		'[{"type": "plain", "payload": {"n": 1}}]',
		'[{"type": "queued", "queue": "email", "priority": 5, "concurrencyKey": "k1"}]',
		'[{"type": "low", "priority": -3}]',
		'[{"type": "later", "notBefore": "2026-03-02T00:00:00Z"}]',
		'[{"type": "waits", "waitFor": {"types": ["reply"], "timeoutMs": 60000}}]',
		'[{"type": "after-wait", "payload": [1, "two", null]}]',
		'[{"type": "settled", "settled": true}]',
		'[{"type": "laned", "lane": "l"}]',
		'[{"type": "two", "payload": 1}, {"type": "of-a-batch", "payload": 2}]',
		jsonb_build_array(jsonb_build_object('id', s || '/given', 'type', 'given', 'payload', 3))]::jsonb[]
	LOOP
		RETURN NEXT (SELECT jsonb_set(x, '{events}',
					 (SELECT jsonb_agg(e - 'id' - 'sessionId') FROM jsonb_array_elements(x -> 'events') e))
					   FROM a2_append(s, r) x);
	END LOOP;
	-- a claimed event's attempt appends with a cause
	PERFORM a2_claim(s, 'w', 30000);
	RETURN NEXT (SELECT jsonb_set(x, '{events}',
				 (SELECT jsonb_agg(e - 'id' - 'sessionId') FROM jsonb_array_elements(x -> 'events') e))
				   FROM a2_append(s, '[{"type": "caused", "cause": {"index": 1, "attempt": 1}}]') x);
END
$$;

CREATE FUNCTION pg_temp.stored(s text) RETURNS SETOF jsonb LANGUAGE sql AS $$
	SELECT to_jsonb(e) - 'event_id' - 'session_id'
	  FROM a2_events e WHERE e.session_id = s ORDER BY e.idx
$$;

CREATE FUNCTION pg_temp.direct_shape_read() RETURNS boolean LANGUAGE sql AS $$
	SELECT EXISTS (SELECT 1 FROM pg_backend_memory_contexts WHERE name = 'a2 direct writes')
$$;

-- 1. The statement's rows and answers, then the direct writes'.
SET LOCAL a2.direct_writes = off;
CREATE TEMP TABLE answers_off AS SELECT row_number() OVER () AS n, a FROM pg_temp.script('dw-off') a;
SELECT ok(NOT pg_temp.direct_shape_read(), 'with a2.direct_writes off, every append ran its statement');
SET LOCAL a2.direct_writes = on;
CREATE TEMP TABLE answers_on AS SELECT row_number() OVER () AS n, a FROM pg_temp.script('dw-on') a;
SELECT ok(pg_temp.direct_shape_read(), 'with a2.direct_writes on, appends took the direct path');

SELECT results_eq('SELECT n, a FROM answers_on ORDER BY n', 'SELECT n, a FROM answers_off ORDER BY n',
				  'every append answers the same with and without direct writes');
SELECT results_eq($$SELECT * FROM pg_temp.stored('dw-on')$$, $$SELECT * FROM pg_temp.stored('dw-off')$$,
				  'every stored row is the same with and without direct writes');
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'dw-on'), 13::bigint,
		  'thirteen events stored');
SELECT is((SELECT event_id FROM a2_events WHERE session_id = 'dw-on' AND idx = 12), 'dw-on/given',
		  'an event with its id given');

-- 2. A rolled-back append leaves its index free; a dropped session's
--    appends continue after its last index.
SAVEPOINT before_append;
SELECT (a2_append('dw-on', '[{"type": "undone"}]') -> 'events' -> 0 ->> 'index')::int AS undone \gset
ROLLBACK TO SAVEPOINT before_append;
SELECT is(:undone, 14, 'the next index');
SELECT is((a2_append('dw-on', '[{"type": "redone"}]') -> 'events' -> 0 ->> 'index')::int, 14,
		  'after a rollback the same index is taken again');
SELECT is((a2_drop_session('dw-off', true) ->> 'lastIndex')::int, 13, 'dw-off dropped');
SELECT is((a2_append('dw-off', '[{"type": "again"}]') -> 'events' -> 0 ->> 'index')::int, 14,
		  'a dropped session continues after its last index');
SELECT is((a2_append('dw-off', '[{"type": "again"}]') -> 'events' -> 0 ->> 'index')::int, 15,
		  'and its next append after that');

-- 3. A user's trigger still fires.
CREATE TABLE dw_seen (session_id text, idx bigint);
CREATE FUNCTION dw_note() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO dw_seen VALUES (NEW.session_id, NEW.idx);
	RETURN NEW;
END
$$;
CREATE TRIGGER dw_note AFTER INSERT ON a2_events FOR EACH ROW EXECUTE FUNCTION dw_note();
SELECT ok(a2_append('dw-on', '[{"type": "watched"}]') IS NOT NULL, 'an append beside a trigger');
SELECT results_eq($$SELECT session_id, idx FROM dw_seen$$, $$VALUES ('dw-on', 15::bigint)$$,
				  'an AFTER INSERT trigger on a2_events fires for the appended row');
DROP TRIGGER dw_note ON a2_events;

-- 4. Columns a2 does not know: a constant default is stored, a default
--    that is not a constant is evaluated, a NOT NULL column without a
--    default refuses the row as the statement does.
ALTER TABLE a2_events ADD COLUMN dw_tag text DEFAULT 'tagged';
CREATE SEQUENCE dw_seq;
ALTER TABLE a2_events ADD COLUMN dw_n bigint DEFAULT nextval('dw_seq');
SELECT ok(a2_append('dw-on', '[{"type": "defaults"}]') IS NOT NULL, 'an append beside user columns');
SELECT results_eq($$SELECT dw_tag, dw_n FROM a2_events WHERE session_id = 'dw-on' AND idx = 16$$,
				  $$VALUES ('tagged'::text, currval('dw_seq'))$$,
				  'a user column''s constant default and its nextval() default are both applied');
ALTER TABLE a2_events DROP COLUMN dw_n;
ALTER TABLE a2_events ALTER COLUMN dw_tag SET NOT NULL, ALTER COLUMN dw_tag DROP DEFAULT;
SELECT throws_ok($$SELECT a2_append('dw-on', '[{"type": "refused"}]')$$, '23502', NULL,
				 'a NOT NULL column a2 does not fill refuses the append (23502)');
ALTER TABLE a2_events DROP COLUMN dw_tag;
SELECT is((a2_append('dw-on', '[{"type": "plain-again"}]') -> 'events' -> 0 ->> 'index')::int, 17,
		  'the refused append wrote nothing');

-- 5. An index that is not a btree gets its entry.
CREATE INDEX dw_gin ON a2_events USING gin (payload);
SELECT ok(a2_append('dw-on', '[{"type": "indexed", "payload": {"dw": 7}}]') IS NOT NULL,
		  'an append beside a GIN index');
SET LOCAL enable_seqscan = off;
SELECT is((SELECT count(*) FROM a2_events WHERE payload @> '{"dw": 7}'), 1::bigint,
		  'a GIN index on a2_events holds the appended row');
RESET enable_seqscan;
DROP INDEX dw_gin;

-- 6. Privileges and row-level security apply as to the statement.
CREATE ROLE dw_worker;
SELECT ok(a2_grant_worker('dw_worker') IS NOT NULL, 'a worker role');
ALTER TABLE a2_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY dw_read ON a2_events FOR SELECT TO dw_worker USING (true);
CREATE POLICY dw_write ON a2_events FOR INSERT TO dw_worker WITH CHECK (event_type <> 'forbidden');
SET LOCAL ROLE dw_worker;
SELECT is((a2_append('dw-on', '[{"type": "allowed"}]') -> 'events' -> 0 ->> 'index')::int, 19,
		  'a worker role appends under a policy that allows the row');
SELECT throws_ok($$SELECT a2_append('dw-on', '[{"type": "forbidden"}]')$$, '42501', NULL,
				 'a policy that refuses the row refuses the append (42501)');
RESET ROLE;
ALTER TABLE a2_events DISABLE ROW LEVEL SECURITY;
REVOKE INSERT ON a2_events FROM dw_worker;
GRANT INSERT (session_id, idx, event_type, payload, event_id, created_at, cause, lane, lane_ready,
			  processed_at, not_before, queue, priority, concurrency_key, wait_for) ON a2_events TO dw_worker;
SET LOCAL ROLE dw_worker;
SELECT is((a2_append('dw-on', '[{"type": "by-columns"}]') -> 'events' -> 0 ->> 'index')::int, 20,
		  'INSERT granted on the written columns only is enough');
RESET ROLE;
REVOKE INSERT ON a2_events FROM dw_worker;
SET LOCAL ROLE dw_worker;
SELECT throws_ok($$SELECT a2_append('dw-on', '[{"type": "no-grant"}]')$$, '42501', NULL,
				 'without INSERT the append is refused (42501)');
RESET ROLE;

-- 7. A read-only transaction writes nothing.
CREATE FUNCTION pg_temp.read_only_append() RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	SET LOCAL transaction_read_only = on;
	PERFORM a2_append('dw-on', '[{"type": "read-only"}]');
	RETURN 'appended';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;			-- the block's subtransaction undoes the SET
END
$$;
SELECT is(pg_temp.read_only_append(), '25006',
		  'a read-only transaction refuses the append (25006)');
SELECT is((a2_append('dw-on', '[{"type": "read-write"}]') -> 'events' -> 0 ->> 'index')::int, 21,
		  'and wrote nothing');

-- 8. Completions: answers and rows the same with and without direct
--    writes (a plain event, a laned one that promotes the next, a keyed
--    one, a retry, a superseded attempt), the session's name aside.
CREATE FUNCTION pg_temp.completions(s text) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
DECLARE
	r jsonb;
BEGIN
	PERFORM a2_append(s, '[{"type": "a"}, {"type": "b", "lane": "l"}, {"type": "c", "lane": "l"},
						  {"type": "d", "concurrencyKey": "k"}]');
	RETURN NEXT a2_claim(s, 'w', 30000);
	RETURN NEXT a2_complete(s, 1, 1, jsonb_build_array(jsonb_build_object('id', s || '/c1', 'type', 'child')));
	RETURN NEXT a2_complete(s, 2, 1, NULL);
	RETURN NEXT a2_complete(s, 4, 1, '[]');
	RETURN NEXT a2_complete(s, 1, 1, jsonb_build_array(jsonb_build_object('id', s || '/c1', 'type', 'child')));
	RETURN NEXT a2_complete(s, 4, 2, NULL);
	RETURN NEXT a2_claim(s, 'w', 30000);
	RETURN NEXT a2_complete(s, 5, 1, NULL);
	RETURN NEXT a2_complete(s, 3, 1, NULL);
END
$$;
CREATE FUNCTION pg_temp.anon(j jsonb, s text) RETURNS jsonb LANGUAGE sql AS $$
	SELECT regexp_replace(regexp_replace(j::text, '"id": "[0-9a-f-]{36}"', '"id": "generated"', 'g'),
						  s, 'S', 'g')::jsonb
$$;
SET LOCAL a2.direct_writes = off;
CREATE TEMP TABLE done_off AS
	SELECT row_number() OVER () AS n, pg_temp.anon(a, 'cf-off') AS a FROM pg_temp.completions('cf-off') a;
SET LOCAL a2.direct_writes = on;
CREATE TEMP TABLE done_on AS
	SELECT row_number() OVER () AS n, pg_temp.anon(a, 'cf-on') AS a FROM pg_temp.completions('cf-on') a;
SELECT results_eq('SELECT n, a FROM done_on ORDER BY n', 'SELECT n, a FROM done_off ORDER BY n',
				  'every claim and completion answers the same with and without direct writes');
SELECT results_eq($$SELECT pg_temp.anon(x, 'cf-on') FROM pg_temp.stored('cf-on') x$$,
				  $$SELECT pg_temp.anon(x, 'cf-off') FROM pg_temp.stored('cf-off') x$$,
				  'every completed row is the same with and without direct writes');
SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'cf-on' AND processed_at IS NOT NULL),
		  5::bigint, 'all five events processed');

-- Failures: the same, for a retried, a dead-lettered, a repeated and a
-- backed-off failure.
CREATE FUNCTION pg_temp.failures(s text) RETURNS SETOF jsonb LANGUAGE plpgsql AS $$
BEGIN
	PERFORM a2_append(s, '[{"type": "a"}, {"type": "b", "concurrencyKey": "k"},
						  {"type": "c", "notBefore": "2026-03-05T00:00:00Z"}]');
	RETURN NEXT a2_claim(s, 'w', 30000);
	RETURN NEXT a2_fail(s, 1, 1, 'boom', 3);
	RETURN NEXT a2_fail(s, 2, 1, NULL, 1);
	RETURN NEXT a2_fail(s, 1, 1, 'boom', 3);
	RETURN NEXT a2_claim(s, 'w', 30000);
	RETURN NEXT a2_fail(s, 1, 2, 'again', 3, 60000);
	RETURN NEXT a2_claim(s, 'w', 30000);
END
$$;
SET LOCAL a2.direct_writes = off;
CREATE TEMP TABLE failed_off AS
	SELECT row_number() OVER () AS n, pg_temp.anon(a, 'ff-off') AS a FROM pg_temp.failures('ff-off') a;
SET LOCAL a2.direct_writes = on;
CREATE TEMP TABLE failed_on AS
	SELECT row_number() OVER () AS n, pg_temp.anon(a, 'ff-on') AS a FROM pg_temp.failures('ff-on') a;
SELECT results_eq('SELECT n, a FROM failed_on ORDER BY n', 'SELECT n, a FROM failed_off ORDER BY n',
				  'every claim and failure answers the same with and without direct writes');
SELECT results_eq($$SELECT pg_temp.anon(x, 'ff-on') FROM pg_temp.stored('ff-on') x$$,
				  $$SELECT pg_temp.anon(x, 'ff-off') FROM pg_temp.stored('ff-off') x$$,
				  'every failed row is the same with and without direct writes');

-- 9. A completion still fires a user's UPDATE trigger on a2_events and a
--    statement trigger on a2_snapshot_pins, and needs DELETE there.
CREATE TABLE dw_fired (what text);
CREATE FUNCTION dw_fire() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO dw_fired VALUES (TG_TABLE_NAME || ' ' || TG_OP || ' ' || TG_LEVEL);
	RETURN NULL;
END
$$;
SELECT ok(a2_append('cf-t', '[{"type": "a"}, {"type": "b"}, {"type": "c"}]') IS NOT NULL, 'three to complete');
SELECT ok(a2_claim('cf-t', 'w', 30000) IS NOT NULL, 'claimed');
CREATE TRIGGER dw_fire AFTER UPDATE ON a2_events FOR EACH ROW EXECUTE FUNCTION dw_fire();
SELECT is(a2_complete('cf-t', 1, 1, NULL) ->> 'outcome', 'completed', 'completed beside a row trigger');
DROP TRIGGER dw_fire ON a2_events;
CREATE TRIGGER dw_fire AFTER DELETE ON a2_snapshot_pins FOR EACH STATEMENT EXECUTE FUNCTION dw_fire();
SELECT is(a2_complete('cf-t', 2, 1, NULL) ->> 'outcome', 'completed', 'completed beside a statement trigger');
DROP TRIGGER dw_fire ON a2_snapshot_pins;
SELECT results_eq('SELECT what FROM dw_fired ORDER BY what',
				  $$VALUES ('a2_events UPDATE ROW'), ('a2_snapshot_pins DELETE STATEMENT')$$,
				  'the row trigger and the statement trigger both fired');
REVOKE DELETE ON a2_snapshot_pins FROM dw_worker;
SET LOCAL ROLE dw_worker;
SELECT throws_ok($$SELECT a2_complete('cf-t', 3, 1, NULL)$$, '42501', 'permission denied for table a2_snapshot_pins',
				 'without DELETE on a2_snapshot_pins a completion is refused, as its statement is (42501)');
RESET ROLE;

SELECT * FROM finish();
ROLLBACK;
