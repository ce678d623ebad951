--
-- reentrancy: a2 called again from triggers on its own tables, with the
-- caller's search_path inside them (SPEC 7.2).
--
-- First a trigger on a2_events that runs ANALYZE a2_events and then calls
-- a2_append: the ANALYZE invalidates a2_events' relcache entry while the
-- outer a2 statement is still executing its plan.  0.2.0 freed that plan
-- from inside the inner call and the outer one crashed the backend.  Then
-- the trigger inserts into a user table by its unqualified name, which
-- 0.2.0 resolved under a pg_catalog-only search_path ("relation "audit"
-- does not exist").
--
\set VERBOSITY terse
SET a2.now = '2026-03-01 00:00:00+00';

CREATE TABLE audit (session_id text, idx bigint, via text);

CREATE FUNCTION audit_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO public.audit VALUES (NEW.session_id, NEW.idx, TG_OP);
	IF NEW.session_id = 'reent-src' THEN
		ANALYZE public.a2_events;
		PERFORM public.a2_append('reent-copy',
			jsonb_build_array(jsonb_build_object('type', 'copy',
				'payload', jsonb_build_object('of', NEW.idx))));
	END IF;
	RETURN NULL;
END
$$;
CREATE TRIGGER audit_event AFTER INSERT ON a2_events
	FOR EACH ROW EXECUTE FUNCTION audit_event();

-- one event (the single-row statement), then a batch (the batch statement)
SELECT jsonb_path_query_array(a2_append('reent-src', '[{"type":"a"}]'), '$.events[*].index');
SELECT jsonb_path_query_array(a2_append('reent-src', '[{"type":"b"},{"type":"c"}]'), '$.events[*].index');

-- a completion's returned events fire it too, inside a2_complete
SELECT a2_claim('reent-src', 'w', 60000) ->> 'outcome';
SELECT a2_complete('reent-src', 1, 1, '[{"id":"reent-done","type":"done"}]') ->> 'outcome';

-- every insert reached the user table, the copies in order
SELECT session_id, idx, via FROM audit ORDER BY session_id, idx;
SELECT idx, payload FROM a2_events WHERE session_id = 'reent-copy' ORDER BY idx;

-- the same trigger naming the user table unqualified: it resolves on the
-- caller's search_path, as it does for the caller's own INSERT
CREATE OR REPLACE FUNCTION audit_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO audit VALUES (NEW.session_id, NEW.idx, TG_OP);
	RETURN NULL;
END
$$;
SELECT jsonb_path_query_array(a2_append('reent-plain', '[{"type":"p"}]'), '$.events[*].index');
SELECT session_id, idx FROM audit WHERE session_id = 'reent-plain';

-- a caller with a schema of its own first on search_path: the name
-- resolves there
CREATE SCHEMA app;
CREATE TABLE app.audit (session_id text, idx bigint, via text);
SET search_path = app, public;
SELECT jsonb_path_query_array(a2_append('reent-other', '[{"type":"x"}]'), '$.events[*].index');
SELECT session_id, idx FROM app.audit;
SELECT count(*) AS in_public FROM public.audit WHERE session_id = 'reent-other';
RESET search_path;

DROP TRIGGER audit_event ON a2_events;
DROP FUNCTION audit_event();
DROP TABLE audit, app.audit;
DROP SCHEMA app;
