-- fresh/notify.sql: NOTIFY a2_events (SPEC section 4, "notifications").
--
-- Every committed transaction that added events to a session sends one
-- NOTIFY a2_events per session with payload {"sessionId": ..., "index":
-- <greatest new index>}; rolled-back transactions and savepoints send
-- nothing, and transactions that add no events send nothing.
--
-- Delivery can only be seen across transactions, so this file runs in its
-- own database outside any wrapping transaction.  A second connection made
-- with dblink LISTENs; after each step a2_notify_wait() waits until the
-- background notifier (when a2 is preloaded) has sent what finished
-- transactions are owed, then a round trip on the listener (its backend
-- flushes pending notifications before ReadyForQuery) and
-- dblink_get_notify() collect what it received into notify_seen.  The
-- same file runs with and without the notifier (test/suites/15-notifier.sh).
\set ON_ERROR_STOP 1
SET client_min_messages = warning;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
CREATE EXTENSION IF NOT EXISTS dblink;
RESET client_min_messages;
SET a2.now = '2026-01-01 00:00:00+00';

SELECT plan(29);

CREATE TABLE notify_seen (step text, channel text, pid integer, payload text);

-- Connect the listener to this database through the server's own socket.
CREATE FUNCTION notify_connstr() RETURNS text LANGUAGE sql AS $f$
	SELECT format('dbname=%s port=%s user=%s%s',
				  quote_literal(current_database()), current_setting('port'),
				  quote_literal(current_user),
				  CASE WHEN btrim(split_part(current_setting('unix_socket_directories'), ',', 1)) <> ''
					   THEN ' host=' || quote_literal(btrim(split_part(current_setting('unix_socket_directories'), ',', 1)))
					   ELSE ' host=localhost' END)
$f$;

-- Round trips on the listener, then record what it has received.
CREATE FUNCTION notify_collect(step text) RETURNS void LANGUAGE plpgsql AS $f$
BEGIN
	IF NOT a2_notify_wait(30000) THEN
		RAISE EXCEPTION 'the a2 notifier did not catch up within 30 s';
	END IF;
	PERFORM * FROM dblink('notify_listener', 'SELECT 1') AS t(x integer);
	PERFORM * FROM dblink('notify_listener', 'SELECT 1') AS t(x integer);
	INSERT INTO notify_seen
		SELECT step, n.notify_name, n.be_pid, n.extra FROM dblink_get_notify('notify_listener') n;
END
$f$;

-- What one step received: [sessionId, index] pairs, one per notification.
CREATE FUNCTION notify_got(step text) RETURNS TABLE (session_id text, idx bigint) LANGUAGE sql AS $f$
	SELECT s.payload::jsonb ->> 'sessionId', (s.payload::jsonb ->> 'index')::bigint
	  FROM notify_seen s WHERE s.step = $1
$f$;

SELECT is(dblink_connect('notify_listener', notify_connstr()), 'OK', 'listener connected');
SELECT is(dblink_exec('notify_listener', 'LISTEN a2_events'), 'LISTEN', 'listener listens on a2_events');

------------------------------------------------------------------------
-- 1. One transaction: A gets 1-2 then 3, B gets 1 then 2 (in a released
--    savepoint); C and A's 4 are appended in a rolled-back savepoint, D
--    in a savepoint released into a rolled-back one.
------------------------------------------------------------------------
BEGIN;
SELECT a2_append('notify-a', '[{"type":"t"},{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_append('notify-b', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_append('notify-a', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SAVEPOINT s1;
SELECT a2_append('notify-c', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_append('notify-a', '[{"type":"t"}]') IS NOT NULL AS appended \gset
ROLLBACK TO SAVEPOINT s1;
SAVEPOINT s2;
SELECT a2_append('notify-b', '[{"type":"t"}]') IS NOT NULL AS appended \gset
RELEASE SAVEPOINT s2;
SAVEPOINT outer_sp;
SAVEPOINT inner_sp;
SELECT a2_append('notify-d', '[{"type":"t"}]') IS NOT NULL AS appended \gset
RELEASE SAVEPOINT inner_sp;
ROLLBACK TO SAVEPOINT outer_sp;
COMMIT;
SELECT notify_collect('savepoints');

SELECT bag_eq($$SELECT * FROM notify_got('savepoints')$$,
	$$VALUES ('notify-a', 3::bigint), ('notify-b', 2::bigint)$$,
	'savepoints: exactly one notification each for A (index 3) and B (index 2)');
-- the sender: the background notifier when a2 is preloaded, else this backend
SELECT is((SELECT count(*) FROM notify_seen WHERE step = 'savepoints' AND channel = 'a2_events'
			 AND pid = (SELECT coalesce(notifier_pid, pg_backend_pid()) FROM a2_notify_status())),
	2::bigint, 'savepoints: both on channel a2_events, sent by the notifier if preloaded, else by this backend');
SELECT is((SELECT array_agg(payload::jsonb ORDER BY payload) FROM notify_seen WHERE step = 'savepoints'),
	ARRAY['{"sessionId":"notify-a","index":3}', '{"sessionId":"notify-b","index":2}']::jsonb[],
	'savepoints: payloads are exactly {sessionId, index}');
SELECT is(jsonb_array_length(a2_read('notify-a')), 3, 'savepoints: A really holds 3 events');

------------------------------------------------------------------------
-- 2. A rolled-back transaction notifies nothing.
------------------------------------------------------------------------
BEGIN;
SELECT a2_append('notify-a', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_append('notify-e', '[{"type":"t"}]') IS NOT NULL AS appended \gset
ROLLBACK;
SELECT notify_collect('rollback');
SELECT is((SELECT count(*) FROM notify_seen WHERE step = 'rollback'), 0::bigint, 'rollback: no notification');

------------------------------------------------------------------------
-- 3. An append in a PL/pgSQL block whose exception was caught is undone
--    and notifies nothing; the append after it does.
------------------------------------------------------------------------
BEGIN;
DO $$
BEGIN
	BEGIN
		PERFORM a2_append('notify-e', '[{"type":"t"}]');
		RAISE EXCEPTION 'handler failed';
	EXCEPTION WHEN OTHERS THEN
		NULL;
	END;
	PERFORM a2_append('notify-g', '[{"type":"t"},{"type":"t"}]');
END
$$;
COMMIT;
SELECT notify_collect('caught');
SELECT bag_eq($$SELECT * FROM notify_got('caught')$$, $$VALUES ('notify-g', 2::bigint)$$,
	'caught: only the surviving append notifies');

------------------------------------------------------------------------
-- 4. Transactions that add no events notify nothing: an empty batch, an
--    idempotent replay, a claim.
------------------------------------------------------------------------
SELECT is(a2_append('notify-h', '[{"id":"nh-1","type":"t"}]') #>> '{events,0,index}', '1', 'setup: H has one event');
SELECT notify_collect('setup h');
SELECT bag_eq($$SELECT * FROM notify_got('setup h')$$, $$VALUES ('notify-h', 1::bigint)$$,
	'autocommit: a single-statement append notifies');
BEGIN;
SELECT a2_append('notify-h', '[]') IS NOT NULL AS appended \gset
SELECT a2_append('notify-h', '[{"id":"nh-1","type":"t"}]') IS NOT NULL AS appended \gset
COMMIT;
SELECT is(jsonb_path_query_array(a2_claim('notify-a', 'h', 60000), '$.events[*].index'), '[1,2,3]',
	'setup: A''s three events leased to attempt 1');
SELECT notify_collect('nothing added');
SELECT is((SELECT count(*) FROM notify_seen WHERE step = 'nothing added'), 0::bigint,
	'nothing added: empty batch, replay and claim do not notify');

------------------------------------------------------------------------
-- 5. Completions: the returned events notify; a completion returning
--    nothing does not.
------------------------------------------------------------------------
BEGIN;
SELECT a2_complete('notify-a', 1, 1, '[{"id":"na-c1","type":"t"},{"id":"na-c2","type":"t"}]') IS NOT NULL AS completed \gset
SELECT a2_complete('notify-a', 2, 1) IS NOT NULL AS completed \gset
COMMIT;
SELECT notify_collect('complete');
SELECT bag_eq($$SELECT * FROM notify_got('complete')$$, $$VALUES ('notify-a', 5::bigint)$$,
	'complete: one notification with the greatest returned index');

SELECT is(a2_complete('notify-a', 3, 1), '{"outcome":"completed","events":[]}', 'complete with no events');
SELECT notify_collect('complete empty');
SELECT is((SELECT count(*) FROM notify_seen WHERE step = 'complete empty'), 0::bigint,
	'complete empty: no notification');

------------------------------------------------------------------------
-- 6. Appends and completions of one session in one transaction: one
--    notification, the greatest index.
------------------------------------------------------------------------
SELECT is(jsonb_path_query_array(a2_claim('notify-a', 'h', 60000), '$.events[*].index'), '[4,5]',
	'setup: A''s children leased');
BEGIN;
SELECT a2_complete('notify-a', 4, 1, '[{"id":"na-c3","type":"t"}]') IS NOT NULL AS completed \gset
SELECT a2_append('notify-a', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_complete('notify-a', 5, 1, '[{"id":"na-c4","type":"t"}]') IS NOT NULL AS completed \gset
SELECT a2_append('notify-b', '[{"type":"t"}]') IS NOT NULL AS appended \gset
COMMIT;
SELECT notify_collect('mixed');
SELECT bag_eq($$SELECT * FROM notify_got('mixed')$$, $$VALUES ('notify-a', 8::bigint), ('notify-b', 3::bigint)$$,
	'mixed: one notification per session, greatest index');

------------------------------------------------------------------------
-- 7. Separate transactions notify separately; session ids are JSON-escaped.
--    The notifier sends the entries of one session that are ready in the
--    same pass as one announcement at the greatest index
--    (docs/semantics.md, "coalesced"), so each append is collected before
--    the next commits: otherwise whether the worker's pass ran between
--    the two commits would decide the answer.
------------------------------------------------------------------------
SELECT is(a2_append('notify-f', '[{"type":"t"}]') #>> '{events,0,index}', '1', 'F: first append');
SELECT notify_collect('separate');
SELECT is(a2_append('notify-f', '[{"type":"t"}]') #>> '{events,0,index}', '2', 'F: second append');
SELECT notify_collect('separate');
SELECT is(a2_append(E'notify "q" \\ \u00e9', '[{"type":"t"}]') #>> '{events,0,index}', '1', 'escaped: append');
SELECT notify_collect('separate');
SELECT bag_eq($$SELECT * FROM notify_got('separate')$$,
	$$VALUES ('notify-f', 1::bigint), ('notify-f', 2::bigint), (E'notify "q" \\ \u00e9', 1::bigint)$$,
	'separate: one notification per transaction; the escaped session id parses back');

------------------------------------------------------------------------
-- 8. SET a2.notify = off: appends still work and send nothing; back on,
--    notifications resume.
------------------------------------------------------------------------
SET a2.notify = off;
SELECT is(a2_append('notify-quiet', '[{"type":"t"}]') #>> '{events,0,index}', '1', 'quiet: append with a2.notify off');
SELECT notify_collect('notify off');
SELECT is((SELECT count(*) FROM notify_seen WHERE step = 'notify off'), 0::bigint,
	'a2.notify off: no notification');
RESET a2.notify;
SELECT a2_append('notify-quiet', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT notify_collect('notify on again');
SELECT bag_eq($$SELECT * FROM notify_got('notify on again')$$, $$VALUES ('notify-quiet', 2::bigint)$$,
	'a2.notify back on: notifications resume');

------------------------------------------------------------------------
-- 9. A session appended to before a savepoint, again inside it (rolled
--    back) and again after it: one notification with the greatest index
--    that survived; many sessions in one transaction: one each.
------------------------------------------------------------------------
BEGIN;
SELECT a2_append('notify-sp', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SAVEPOINT s9;
SELECT a2_append('notify-sp', '[{"type":"t"},{"type":"t"}]') IS NOT NULL AS appended \gset
SAVEPOINT s9b;
SELECT a2_append('notify-sp', '[{"type":"t"}]') IS NOT NULL AS appended \gset
ROLLBACK TO SAVEPOINT s9;
SELECT a2_append('notify-sp', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT count(a2_append('notify-many-' || i, '[{"type":"t"}]')) AS appended FROM generate_series(1, 300) i \gset
SELECT a2_append('notify-many-7', '[{"type":"t"}]') IS NOT NULL AS appended \gset
COMMIT;
SELECT notify_collect('savepoint then more');
SELECT bag_eq($$SELECT * FROM notify_got('savepoint then more') WHERE session_id = 'notify-sp' OR session_id = 'notify-many-7'$$,
	$$VALUES ('notify-sp', 2::bigint), ('notify-many-7', 2::bigint)$$,
	'savepoint then more: the rolled-back appends leave index 2 for notify-sp; notify-many-7 once, at 2');
SELECT is((SELECT count(DISTINCT session_id) FILTER (WHERE session_id LIKE 'notify-many-%') || '/' || count(*)
			 FROM notify_got('savepoint then more')),
		  '300/301', 'savepoint then more: 300 sessions and notify-sp, one notification each');

SELECT is(dblink_disconnect('notify_listener'), 'OK', 'listener disconnected');

-- a2_notify_status(): the notifier's queue, then (0.4.0) the durable records
-- on disk and the schedulers; all NULL but mode without the preloaded library
SELECT is((SELECT array_agg(a.attname::text ORDER BY a.ordinality)
			 FROM pg_proc p, unnest(p.proargnames, p.proargmodes) WITH ORDINALITY AS a(attname, mode, ordinality)
			WHERE p.oid = 'a2_notify_status()'::regprocedure),
		  '{mode,notifier_pid,queue_size,queue_depth,waiting,recorded,announced,coalesced,fallbacks,dropped,disk_records,disk_set_aside,schedulers,schedulers_waiting}'::text[],
		  'a2_notify_status: its columns, the background workers'' last');
SELECT ok((SELECT CASE WHEN mode = 'notifier'
					   THEN disk_records >= 0 AND disk_set_aside >= 0 AND schedulers >= 0 AND schedulers_waiting >= 0
					   ELSE num_nulls(disk_records, disk_set_aside, schedulers, schedulers_waiting) = 4 END
			 FROM a2_notify_status()),
		  'a2_notify_status: disk records and schedulers are counts with the preloaded library, NULL without');

SELECT * FROM finish();

DROP FUNCTION notify_got(text);
DROP FUNCTION notify_collect(text);
DROP FUNCTION notify_connstr();
DROP TABLE notify_seen;
