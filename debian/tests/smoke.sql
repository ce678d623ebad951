-- The installed package's smoke test (debian/tests/installed): with a2 in
-- shared_preload_libraries, CREATE EXTENSION a2 and one pass through the
-- protocol.  Each check raises an error when it does not hold, and psql
-- runs with ON_ERROR_STOP, so any failure fails the test.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;

CREATE EXTENSION a2;

DO $smoke$
DECLARE
	r jsonb;
	st record;
	ext_version text;
	available text;
BEGIN
	-- The version CREATE EXTENSION picked is the control file's default.
	SELECT extversion INTO ext_version FROM pg_extension WHERE extname = 'a2';
	SELECT default_version INTO available FROM pg_available_extensions WHERE name = 'a2';
	IF ext_version IS DISTINCT FROM available THEN
		RAISE EXCEPTION 'a2 % created, but the control file says %', ext_version, available;
	END IF;

	-- Preloaded: the background notifier announces commits.
	SELECT * INTO st FROM a2_notify_status();
	IF st.mode <> 'notifier' OR st.notifier_pid IS NULL THEN
		RAISE EXCEPTION 'a2 is not running preloaded: notify mode %, notifier pid %', st.mode, st.notifier_pid;
	END IF;

	r := a2_append('smoke', '[{"id": "smoke-1", "type": "order.placed", "payload": {"item": "tea"}},
	                          {"id": "smoke-2", "type": "order.placed", "payload": {"item": "cups"}}]');
	IF jsonb_array_length(r->'events') <> 2 OR (r#>>'{events,1,index}')::bigint <> 2 THEN
		RAISE EXCEPTION 'append: %', r;
	END IF;

	r := a2_claim('smoke', 'smoke-worker', 30000);
	IF r->>'outcome' <> 'claimed' OR jsonb_array_length(r->'events') <> 2 THEN
		RAISE EXCEPTION 'claim: %', r;
	END IF;

	r := a2_complete('smoke', 1, 1, '[{"id": "smoke-1/shipped", "type": "order.shipped"}]');
	IF r->>'outcome' <> 'completed' OR (r#>>'{events,0,index}')::bigint <> 3 THEN
		RAISE EXCEPTION 'complete: %', r;
	END IF;

	r := a2_fail('smoke', 2, 1, 'out of cups', 1);
	IF r->>'outcome' <> 'dead_lettered' THEN
		RAISE EXCEPTION 'fail: %', r;
	END IF;

	-- A retried completion returns the stored child, writing nothing.
	r := a2_complete('smoke', 1, 1, '[{"id": "smoke-1/shipped", "type": "order.shipped"}]');
	IF r->>'outcome' <> 'completed' OR (r#>>'{events,0,index}')::bigint <> 3 THEN
		RAISE EXCEPTION 'a retried completion: %', r;
	END IF;

	r := a2_read('smoke');
	IF jsonb_array_length(r) <> 3
	   OR r#>>'{0,processedAt}' IS NULL
	   OR r#>>'{1,failedAt}' IS NULL
	   OR r#>>'{2,cause,index}' <> '1' THEN
		RAISE EXCEPTION 'read: %', r;
	END IF;
END
$smoke$;

SELECT 'a2 ' || extversion || ': smoke test passed' AS result FROM pg_extension WHERE extname = 'a2';
