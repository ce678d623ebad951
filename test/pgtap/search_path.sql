-- search_path.sql: objects a user puts on search_path (or in pg_temp)
-- cannot hijack what the a2 functions run (SPEC section 6).
--
-- Schema evil shadows the extension's tables (some with the same columns,
-- some with wrong ones), functions the C code could call unqualified
-- (hashtext, unnest, min, coalesce, jsonb_build_object, the advisory lock,
-- the clock) and the comparison operators on text, bigint, integer and
-- jsonb.  Every evil function records its call in search_path_hijacks and
-- returns a wrong answer; the operators say "equal" (or "greater") to
-- everything.  pg_temp shadows the tables too.
--
-- The a2 calls run under SET search_path = evil, public (pg_catalog and
-- pg_temp implicitly first) and under evil, pg_catalog, public (evil before
-- pg_catalog).  While evil is on the path no pgTAP function runs -- evil's
-- operators would corrupt pgTAP's own comparisons -- so results are stored
-- in search_path_results and checked after RESET search_path.
BEGIN;
SELECT plan(56);

SET LOCAL a2.now = '2026-01-01 00:00:00+00';

CREATE TABLE public.search_path_results (step text PRIMARY KEY, result jsonb);
CREATE TABLE public.search_path_hijacks (fn text);

-- Runs a statement and returns its SQLSTATE, or 'ok'.  Compares nothing,
-- so it is safe under the evil search_path.
CREATE FUNCTION public.search_path_try(query text) RETURNS text LANGUAGE plpgsql AS $f$
BEGIN
	EXECUTE query;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END
$f$;

------------------------------------------------------------------------
-- A neighbouring session, written with a clean search_path; it must come
-- through both rounds untouched.
------------------------------------------------------------------------
SELECT is(jsonb_path_query_array(
		a2_append('search_path-other', '[{"id":"search-path-o1","type":"t","lane":"L"},{"id":"search-path-o2","type":"t"},{"id":"search-path-o3","type":"t"},{"id":"search-path-o4","type":"t"},{"id":"search-path-o5","type":"t"},{"id":"search-path-o6","type":"t"},{"id":"search-path-o7","type":"t"}]'),
		'$.events[*].index'),
	'[1,2,3,4,5,6,7]', 'setup: seven events in search_path-other');
SELECT is(jsonb_path_query_array(a2_claim('search_path-other', 'h', 60000, NULL, '{2,3,4,5,6,7}'), '$.events[*].index'), '[1]',
	'setup: search_path-other event 1 leased to attempt 1');
CREATE TEMP TABLE search_path_other AS
	SELECT * FROM public.a2_events WHERE session_id = 'search_path-other';

------------------------------------------------------------------------
-- The decoys
------------------------------------------------------------------------
CREATE SCHEMA evil;
CREATE TABLE evil.a2_events (LIKE public.a2_events INCLUDING ALL);
CREATE TABLE evil.a2_snapshots (LIKE public.a2_snapshots INCLUDING ALL);
CREATE TABLE evil.a2_snapshot_history (LIKE public.a2_snapshot_history INCLUDING ALL);
CREATE TABLE evil.a2_snapshot_pins (wrong integer);
CREATE TABLE evil.a2_presence (wrong integer);
CREATE TEMP TABLE a2_events (LIKE public.a2_events INCLUDING ALL);
CREATE TEMP TABLE a2_snapshot_history (LIKE public.a2_snapshot_history INCLUDING ALL);
CREATE TEMP TABLE a2_snapshots (LIKE public.a2_snapshots INCLUDING ALL);
CREATE TEMP TABLE a2_snapshot_pins (wrong text);

CREATE FUNCTION evil.hashtext(text) RETURNS integer LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('hashtext'); RETURN 0; END $f$;
CREATE FUNCTION evil.unnest(anyarray) RETURNS SETOF anyelement LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('unnest'); RETURN; END $f$;
CREATE FUNCTION evil.jsonb_build_object(VARIADIC text[]) RETURNS jsonb LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('jsonb_build_object'); RETURN '{"evil":true}'; END $f$;
CREATE FUNCTION evil."coalesce"(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('coalesce'); RETURN -1; END $f$;
CREATE FUNCTION evil.pg_advisory_xact_lock(bigint) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('pg_advisory_xact_lock'); END $f$;
CREATE FUNCTION evil.clock_timestamp() RETURNS timestamptz LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('clock_timestamp'); RETURN '1999-01-01 00:00:00+00'; END $f$;
CREATE FUNCTION evil.now() RETURNS timestamptz LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('now'); RETURN '1999-01-01 00:00:00+00'; END $f$;
CREATE FUNCTION evil.min_step(bigint, bigint) RETURNS bigint LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('min'); RETURN 0; END $f$;
CREATE AGGREGATE evil.min(bigint) (SFUNC = evil.min_step, STYPE = bigint);

CREATE FUNCTION evil.text_eq(text, text) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('text = text'); RETURN true; END $f$;
CREATE OPERATOR evil.= (LEFTARG = text, RIGHTARG = text, FUNCTION = evil.text_eq);
CREATE FUNCTION evil.int8_eq(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('bigint = bigint'); RETURN true; END $f$;
CREATE OPERATOR evil.= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_eq);
CREATE FUNCTION evil.int48_eq(integer, bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('integer = bigint'); RETURN true; END $f$;
CREATE OPERATOR evil.= (LEFTARG = integer, RIGHTARG = bigint, FUNCTION = evil.int48_eq);
CREATE FUNCTION evil.int4_eq(integer, integer) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('integer = integer'); RETURN true; END $f$;
CREATE OPERATOR evil.= (LEFTARG = integer, RIGHTARG = integer, FUNCTION = evil.int4_eq);
CREATE FUNCTION evil.jsonb_eq(jsonb, jsonb) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('jsonb = jsonb'); RETURN true; END $f$;
CREATE OPERATOR evil.= (LEFTARG = jsonb, RIGHTARG = jsonb, FUNCTION = evil.jsonb_eq);
CREATE FUNCTION evil.int8_ne(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('bigint <> bigint'); RETURN false; END $f$;
CREATE OPERATOR evil.<> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_ne);
CREATE FUNCTION evil.int8_gt(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('bigint > bigint'); RETURN true; END $f$;
CREATE OPERATOR evil.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_gt);
CREATE FUNCTION evil.int8_le(bigint, bigint) RETURNS boolean LANGUAGE plpgsql AS $f$
BEGIN INSERT INTO public.search_path_hijacks VALUES ('bigint <= bigint'); RETURN true; END $f$;
CREATE OPERATOR evil.<= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = evil.int8_le);

------------------------------------------------------------------------
-- Round 1: search_path = evil, public.  Round 2: evil, pg_catalog, public.
-- The same script each time, in session search_path-1 / search_path-2:
--   append 1 (lane L), 2 (lane L), 3; replay 3; checkpoint 1 pinned by
--   event 1; claim (1 and 3); renew 1 and a stale 3; read; complete 1 with
--   a child (4), which promotes 2 and releases the pin; claim (2 and 4);
--   dead-letter 3; fail 2; append a child of 4 (5); a stale child of 4.
------------------------------------------------------------------------
CREATE FUNCTION pg_temp.search_path_round(s text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO public.search_path_results VALUES
		(s || ' append', a2_append(s, format('[{"id":"%1$s-a","type":"t","lane":"L"},{"id":"%1$s-b","type":"t","lane":"L"},{"id":"%1$s-c","type":"t"}]', s)::jsonb));
	INSERT INTO public.search_path_results VALUES
		(s || ' replay', a2_append(s, format('[{"id":"%1$s-c","type":"t"}]', s)::jsonb));
	INSERT INTO public.search_path_results VALUES
		(s || ' put_snapshots', to_jsonb(public.search_path_try(format(
			$q$SELECT a2_put_snapshots(%L, 'r', '[{"index":1,"state":{"n":1},"pinEventIndexes":[1]},{"index":2,"state":{"n":2}}]')$q$, s))));
	INSERT INTO public.search_path_results VALUES
		(s || ' history before', (SELECT to_jsonb(pg_catalog.count(*)) FROM public.a2_snapshot_pins p
								  WHERE p.session_id OPERATOR(pg_catalog.=) s));
	INSERT INTO public.search_path_results VALUES
		(s || ' claim 1', a2_claim(s, 'h', 60000));
	INSERT INTO public.search_path_results VALUES
		(s || ' renew', a2_renew(s, 'h', '[{"index":1,"attempt":1},{"index":3,"attempt":2}]', 120000));
	INSERT INTO public.search_path_results VALUES
		(s || ' read', a2_read(s));
	INSERT INTO public.search_path_results VALUES
		(s || ' read 1..2', a2_read(s, 1, 2));
	INSERT INTO public.search_path_results VALUES
		(s || ' read max 2', a2_read(s, NULL, NULL, 2));
	INSERT INTO public.search_path_results VALUES
		(s || ' complete', a2_complete(s, 1, 1, format('[{"id":"%1$s-d","type":"child"}]', s)::jsonb));
	INSERT INTO public.search_path_results VALUES
		(s || ' complete retry', a2_complete(s, 1, 1, format('[{"id":"%1$s-d","type":"child"}]', s)::jsonb));
	INSERT INTO public.search_path_results VALUES
		(s || ' claim 2', a2_claim(s, 'h', 60000));
	INSERT INTO public.search_path_results VALUES
		(s || ' fail 3', a2_fail(s, 3, 1, 'boom', 1));
	INSERT INTO public.search_path_results VALUES
		(s || ' fail 2', a2_fail(s, 2, 1, 'oops', 5));
	INSERT INTO public.search_path_results VALUES
		(s || ' claim 3', a2_claim(s, 'h2', 60000, NULL, '{2}'));
	INSERT INTO public.search_path_results VALUES
		(s || ' append child', a2_append(s, '[{"type":"grandchild","cause":{"index":4,"attempt":1}}]'));
	INSERT INTO public.search_path_results VALUES
		(s || ' stale child', to_jsonb(public.search_path_try(format(
			$q$SELECT a2_append(%L, '[{"type":"grandchild","cause":{"index":4,"attempt":2}}]')$q$, s))));
	INSERT INTO public.search_path_results VALUES
		(s || ' missing parent', to_jsonb(public.search_path_try(format(
			$q$SELECT a2_append(%L, '[{"type":"grandchild","cause":{"index":7,"attempt":1}}]')$q$, s))));
END
$f$;

SET LOCAL search_path = evil, public;
SELECT pg_temp.search_path_round('search_path-1');
SET LOCAL search_path = evil, pg_catalog, public;
SELECT pg_temp.search_path_round('search_path-2');
RESET search_path;

------------------------------------------------------------------------
-- Checks, with a clean search_path, for each round
------------------------------------------------------------------------
CREATE FUNCTION pg_temp.r(s text, step text) RETURNS jsonb LANGUAGE sql AS $f$
	SELECT result FROM public.search_path_results WHERE step = s || ' ' || $2
$f$;

SELECT is(jsonb_path_query_array(pg_temp.r(s, 'append'), '$.events[*].index'), '[1,2,3]',
		s || ': append numbers the session from 1')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'replay'), '$.events[*].index'), '[3]',
		s || ': a replay returns the stored event')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'put_snapshots'), '"ok"', s || ': put_snapshots runs')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'history before'), '1', s || ': the pin went to the real a2_snapshot_pins')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'claim 1'), '$.events[*].index'), '[1,3]',
		s || ': claim takes the lane head and the free event')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'renew'), '{"renewed":[1],"superseded":[]}',
		s || ': renew extends only the current attempt')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'read'), '$[*].id'), to_jsonb(ARRAY[s || '-a', s || '-b', s || '-c']),
		s || ': read returns the session''s own events')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'read 1..2'), '$[*].index'), '[2]',
		s || ': read bounds apply')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'read max 2'), '$[*].index'), '[1,2]',
		s || ': max_events applies')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is((pg_temp.r(s, 'complete') #> '{events,0}') - 'id' - 'sessionId',
		'{"type":"child","payload":null,"index":4,"createdAt":"2026-01-01T00:00:00.000Z","cause":{"index":1,"attempt":1},"lane":null,"processedAt":null,
		  "processedByAttempt":null,"returnedEventIds":null,"firstClaimedAt":null,"lastClaimedAt":null,
		  "attemptCount":0,"failureCount":0,"lastFailedAt":null,"lastFailedAttempt":null,"lastError":null,
		  "failedAt":null,"claimHolder":null,"claimExpiresAt":null}',
		s || ': complete stores the child after the session''s last index')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'complete retry'), '$.events[*].index'), '[4]',
		s || ': a retried completion returns the stored child')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'claim 2'), '$.events[*].index'), '[2,4]',
		s || ': completion promoted the lane; the child is claimable')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'fail 3'), '{"outcome":"dead_lettered","failureCount":1}', s || ': fail dead-letters event 3')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'fail 2'), '{"outcome":"failed","failureCount":1}', s || ': fail counts a failure of event 2')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'claim 3'), '{"outcome":"busy","retryAt":"2026-01-01T00:01:00.000Z"}',
		s || ': with 2 excluded, the lease of 4 makes the session busy')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(jsonb_path_query_array(pg_temp.r(s, 'append child'), '$.events[*].index'), '[5]',
		s || ': a child of the current attempt of 4 is appended')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'stale child'), '"Z2002"', s || ': a child of a stale attempt is fenced')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is(pg_temp.r(s, 'missing parent'), '"Z2003"', s || ': a child of a missing parent is refused')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;

-- the real tables hold the rounds' rows, in their final state
SELECT is((SELECT jsonb_agg(jsonb_build_array(e.idx, e.event_id, e.lane, e.lane_ready, e.processed_by_attempt,
								e.attempt_count, e.failure_count, e.failed_at IS NOT NULL, e.claim_holder, e.last_error)
						ORDER BY e.idx)
			 FROM public.a2_events e WHERE e.session_id = s),
		jsonb_build_array(
			jsonb_build_array(1, s || '-a', 'L', false, 1, 1, 0, false, NULL, NULL),
			jsonb_build_array(2, s || '-b', 'L', true, NULL, 1, 1, false, NULL, 'oops'),
			jsonb_build_array(3, s || '-c', NULL, true, NULL, 1, 1, true, NULL, 'boom'),
			jsonb_build_array(4, s || '-d', NULL, true, NULL, 1, 0, false, 'h', NULL),
			jsonb_build_array(5, (SELECT event_id FROM public.a2_events WHERE session_id = s AND idx = 5), NULL, true, NULL, 0, 0, false, NULL, NULL)),
		s || ': public.a2_events holds the final state')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is((SELECT count(*) FROM public.a2_snapshots WHERE session_id = s), 1::bigint,
		s || ': the head checkpoint is in public.a2_snapshots')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;
SELECT is((SELECT count(*) FROM public.a2_snapshot_pins WHERE session_id = s)
		+ (SELECT count(*) FROM public.a2_snapshot_history WHERE session_id = s), 0::bigint,
		s || ': completing event 1 released its pin and the history checkpoint')
	FROM unnest(ARRAY['search_path-1', 'search_path-2']) s;

-- the neighbouring session is untouched
SELECT set_eq($$SELECT * FROM public.a2_events WHERE session_id = 'search_path-other'$$,
	$$SELECT * FROM search_path_other$$, 'search_path-other is untouched');

-- the decoys are empty and were never called
SELECT is((SELECT count(*) FROM evil.a2_events), 0::bigint, 'evil.a2_events is empty');
SELECT is((SELECT count(*) FROM evil.a2_snapshots), 0::bigint, 'evil.a2_snapshots is empty');
SELECT is((SELECT count(*) FROM evil.a2_snapshot_history), 0::bigint, 'evil.a2_snapshot_history is empty');
SELECT is((SELECT count(*) FROM evil.a2_snapshot_pins), 0::bigint, 'evil.a2_snapshot_pins is empty');
SELECT is((SELECT count(*) FROM evil.a2_presence), 0::bigint, 'evil.a2_presence is empty');
SELECT is((SELECT count(*) FROM pg_temp.a2_events), 0::bigint, 'pg_temp.a2_events is empty');
SELECT is((SELECT count(*) FROM pg_temp.a2_snapshots), 0::bigint, 'pg_temp.a2_snapshots is empty');
SELECT is((SELECT count(*) FROM pg_temp.a2_snapshot_history), 0::bigint, 'pg_temp.a2_snapshot_history is empty');
SELECT is((SELECT count(*) FROM pg_temp.a2_snapshot_pins), 0::bigint, 'pg_temp.a2_snapshot_pins is empty');
SELECT is((SELECT array_agg(DISTINCT fn ORDER BY fn) FROM public.search_path_hijacks), NULL,
	'no evil function or operator was called');

-- the session lock key is pg_catalog.hashtext(session_id), whatever evil says
SELECT set_eq($$SELECT (l.classid::bigint << 32) | l.objid::bigint
				  FROM pg_locks l
				 WHERE l.locktype = 'advisory' AND l.pid = pg_backend_pid() AND l.objsubid = 1$$,
	$$SELECT pg_catalog.hashtext(s)::bigint FROM unnest(ARRAY['search_path-other', 'search_path-1', 'search_path-2']) s$$,
	'the advisory locks held are exactly hashtext() of the sessions written');

SELECT * FROM finish();
ROLLBACK;
