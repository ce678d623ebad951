-- user_search_path.sql: user code that a2's own statements fire runs with
-- the caller's search_path (SPEC 7.2, issue 15 item 6).
--
-- The user's objects live in schema app, which only the caller's
-- search_path (app, public) names.  A trigger on a2_events inserts into
-- audit, and then a column default added to a2_events reads labels, both
-- through their bare names.  Before 0.3.0 a2 ran its statements under a
-- pg_catalog-only search_path, and that path also applied to the trigger
-- and the default: the plain INSERT worked, the same row through a2_append
-- failed with 42P01 relation "audit" does not exist.  A decoy app.a2_events
-- checks the other half of the promise: a2's own statements still name
-- their tables schema-qualified and never touch it.
BEGIN;
SELECT plan(12);

SET LOCAL a2.now = '2026-01-01 00:00:00+00';

CREATE SCHEMA app;
CREATE TABLE app.audit (
	op			text	NOT NULL,
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	note		text,
	seen_path	text	NOT NULL
);
CREATE TABLE app.labels (label text NOT NULL);
INSERT INTO app.labels VALUES ('from labels');
-- Same name as a2's table, first on the caller's path: a2 must not use it.
CREATE TABLE app.a2_events (session_id text, idx bigint);

-- No SET search_path clause: the trigger sees whatever path is current.
CREATE FUNCTION app.audit_event() RETURNS trigger LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO audit (op, session_id, idx, note, seen_path)
	VALUES (TG_OP, NEW.session_id, NEW.idx, to_jsonb(NEW) ->> 'user_note',
			current_setting('search_path'));
	RETURN NULL;
END
$f$;
CREATE TRIGGER user_search_path_audit AFTER INSERT OR UPDATE ON public.a2_events
	FOR EACH ROW EXECUTE FUNCTION app.audit_event();

SET LOCAL search_path = app, public;

-- The control: the trigger works for a plain INSERT.
SELECT lives_ok($$
	INSERT INTO public.a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
	VALUES ('usp-plain', 1, 't', '{}', 'usp-plain-1', 0, true)
$$, 'a plain INSERT into a2_events fires the trigger');
SELECT is((SELECT count(*)::int FROM audit WHERE session_id = 'usp-plain'), 1,
	'the plain INSERT was audited');

-- The same through a2.
SELECT lives_ok($$ SELECT a2_append('usp-1', '[{"type": "t", "id": "usp-1-a"}, {"type": "t", "id": "usp-1-b"}]') $$,
	'a2_append fires the trigger, which finds audit on the caller''s search_path');
SELECT results_eq(
	$$ SELECT op, idx, seen_path FROM audit WHERE session_id = 'usp-1' ORDER BY idx $$,
	$$ VALUES ('INSERT', 1::bigint, 'app, public'), ('INSERT', 2::bigint, 'app, public') $$,
	'one audit row per appended event; the trigger saw the caller''s search_path');

SELECT lives_ok($$ SELECT a2_claim('usp-1', 'w', 60000) $$,
	'a2_claim fires the UPDATE trigger under the caller''s search_path');
SELECT is((SELECT count(*)::int FROM audit WHERE session_id = 'usp-1' AND op = 'UPDATE'
			 AND seen_path = 'app, public'), 2,
	'both claimed events were audited');

-- A default: a SQL function's body is parsed (or inlined into a2's
-- statement) with the current path, and checked at creation with this one.
CREATE FUNCTION app.default_note() RETURNS text LANGUAGE sql AS $f$
	SELECT label FROM labels LIMIT 1
$f$;
ALTER TABLE public.a2_events ADD COLUMN user_note text DEFAULT app.default_note();

SELECT lives_ok($$ SELECT a2_complete('usp-1', 1, 1, '[{"type": "child", "id": "usp-1-c"}]') $$,
	'a2_complete (with a returned event) runs a column default that finds labels on the caller''s search_path');
SELECT results_eq(
	$$ SELECT op, note, seen_path FROM audit WHERE session_id = 'usp-1' AND idx = 3 $$,
	$$ VALUES ('INSERT', 'from labels', 'app, public') $$,
	'the returned event got its default and was audited');

-- Under a search_path without app, the bare names are not found: the
-- trigger really resolves them on the caller's path (and fails the call).
SET LOCAL search_path = public;
SELECT throws_ok($$ SELECT a2_append('usp-2', '[{"type": "t"}]') $$, '42P01', NULL,
	'without app on the caller''s search_path, the trigger''s bare name is not found');
SET LOCAL search_path = app, public;

-- a2's own statements are still schema-qualified.
SELECT is((SELECT count(*)::int FROM app.a2_events), 0,
	'the decoy app.a2_events on the caller''s path was never written');
SELECT is((SELECT count(*)::int FROM public.a2_events WHERE session_id = 'usp-1'), 3,
	'the events went to the extension''s a2_events');
SELECT is(a2_read('usp-1') -> 2 ->> 'type', 'child',
	'a2_read reads the extension''s a2_events, not the decoy');

SELECT * FROM finish();
ROLLBACK;
