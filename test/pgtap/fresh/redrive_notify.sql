-- fresh/redrive_notify.sql: a2_redrive wakes listeners like an append
-- (NOTIFY a2_events {"sessionId", "index": the session's greatest index}),
-- once per committed transaction that put something back, and not when it
-- put nothing back.  Same method as fresh/notify.sql: a second connection
-- (dblink) LISTENs; after a2_notify_wait(), round trips on it collect what
-- it received.
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SET a2.now = '2026-01-01 00:00:00+00';

SELECT plan(11);

CREATE TABLE rn_seen (step text, payload text);

CREATE FUNCTION rn_connstr() RETURNS text LANGUAGE sql AS $f$
	SELECT format('dbname=%s port=%s user=%s%s',
				  quote_literal(current_database()), current_setting('port'),
				  quote_literal(current_user),
				  CASE WHEN btrim(split_part(current_setting('unix_socket_directories'), ',', 1)) <> ''
					   THEN ' host=' || quote_literal(btrim(split_part(current_setting('unix_socket_directories'), ',', 1)))
					   ELSE ' host=localhost' END)
$f$;

CREATE FUNCTION rn_collect(step text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	-- with a2 preloaded the background notifier sends after commit: wait
	IF NOT a2_notify_wait(30000) THEN
		RAISE EXCEPTION 'the a2 notifier did not catch up within 30 s';
	END IF;
	PERFORM * FROM dblink('rn_listener', 'SELECT 1') AS t(x integer);
	PERFORM * FROM dblink('rn_listener', 'SELECT 1') AS t(x integer);
	INSERT INTO rn_seen SELECT step, n.extra FROM dblink_get_notify('rn_listener') n
	 WHERE n.notify_name = 'a2_events';
END
$f$;

SELECT is(dblink_connect('rn_listener', rn_connstr()), 'OK', 'listener connected');
SELECT is(dblink_exec('rn_listener', 'LISTEN a2_events'), 'LISTEN', 'listener listens on a2_events');

-- rn: 1 and 3 dead-lettered, 2 settled; everything set up is collected away
SELECT is(jsonb_path_query_array(a2_append('rn', '[{"type":"t"},{"type":"t","settled":true},{"type":"t"}]'),
	'$.events[*].index'), '[1,2,3]', 'setup: three events');
SELECT is(jsonb_path_query_array(a2_claim('rn', 'w', 60000), '$.events[*].index'), '[1,3]', 'setup: claim 1 and 3');
SELECT is(a2_fail('rn', 1, 1, 'x', 1)->>'outcome' || ' ' || (a2_fail('rn', 3, 1, 'x', 1)->>'outcome'),
	'dead_lettered dead_lettered', 'setup: both dead-lettered');
SELECT rn_collect('setup');

-- a redrive that rolls back notifies nothing
BEGIN;
SELECT a2_redrive('rn', 1) IS NOT NULL AS redriven \gset
ROLLBACK;
SELECT rn_collect('rolled back');
SELECT is((SELECT count(*) FROM rn_seen WHERE step = 'rolled back'), 0::bigint, 'rolled-back redrive: no notification');

-- a committed redrive: one notification with the session's greatest index (3)
SELECT is(a2_redrive('rn', 1)->>'outcome', 'redriven', 'redrive event 1');
SELECT rn_collect('redrive');
SELECT is((SELECT array_agg(payload::jsonb) FROM rn_seen WHERE step = 'redrive'),
	ARRAY['{"sessionId":"rn","index":3}']::jsonb[], 'redrive: one notification, greatest index of the session');

-- a second redrive puts nothing back: no notification
SELECT is(a2_redrive('rn', 1)->>'outcome', 'already_redriven', 'second redrive');
SELECT rn_collect('again');
SELECT is((SELECT count(*) FROM rn_seen WHERE step = 'again'), 0::bigint, 'already_redriven: no notification');

-- the session-wide redrive of what is left (3): one notification
SELECT a2_redrive('rn') IS NOT NULL AS redriven \gset
SELECT rn_collect('session');
SELECT is((SELECT array_agg(payload::jsonb) FROM rn_seen WHERE step = 'session'),
	ARRAY['{"sessionId":"rn","index":3}']::jsonb[], 'session redrive: one notification');

SELECT * FROM finish();
SELECT dblink_disconnect('rn_listener');
