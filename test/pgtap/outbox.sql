-- outbox.sql: the transactional-outbox property (SPEC section 1).
--
-- A handler writes its own rows and calls a2_complete in the same
-- transaction: either both stay or neither does.  pgTAP runs inside one
-- transaction, so a handler's transaction is a savepoint here: RELEASE is
-- its commit, ROLLBACK TO its rollback.  A rolled-back completion must leave
-- the event exactly as it was -- unprocessed, still leased to the same
-- attempt, its returned events absent, its lane not promoted, its snapshot
-- pins kept -- so the same attempt can complete later, or, once its lease
-- expires, a re-claim gets attempt 2.
BEGIN;
SELECT plan(46);

SET LOCAL a2.now = '2026-01-01 00:00:00+00';

-- The handler's own table: one effect per (session, event).
CREATE TABLE outbox_effects (
	session_id	text	NOT NULL,
	event_index	bigint	NOT NULL,
	note		text,
	PRIMARY KEY (session_id, event_index)
);

CREATE FUNCTION outbox_event(s text, i bigint) RETURNS jsonb LANGUAGE sql AS $f$
	SELECT jsonb_build_object('processed', e.processed_at IS NOT NULL,
							  'by', e.processed_by_attempt,
							  'returned', e.returned_event_ids,
							  'attempts', e.attempt_count,
							  'holder', e.claim_holder,
							  'expires', e.claim_expires_at,
							  'ready', e.lane_ready)
	  FROM a2_events e WHERE e.session_id = s AND e.idx = i
$f$;

-- A handler that completes its event and then fails: its effect and the
-- completion must go down together.
CREATE FUNCTION outbox_crashing_handler(s text, i bigint, a integer) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
	INSERT INTO outbox_effects VALUES (s, i, 'crashing');
	PERFORM a2_complete(s, i, a, jsonb_build_array(jsonb_build_object('id', s || '-crash-out', 'type', 'result')));
	RAISE EXCEPTION 'handler crashed after completing' USING ERRCODE = 'P0001';
END
$f$;

-- A handler that completes first and then writes a row that violates its
-- own table's primary key.
CREATE FUNCTION outbox_late_violation(s text, i bigint, a integer) RETURNS void
LANGUAGE plpgsql AS $f$
BEGIN
	PERFORM a2_complete(s, i, a, jsonb_build_array(jsonb_build_object('id', s || '-late-out', 'type', 'result')));
	INSERT INTO outbox_effects VALUES (s, i, 'first');
	INSERT INTO outbox_effects VALUES (s, i, 'second');
END
$f$;

------------------------------------------------------------------------
-- Session outbox-s: 1 and 2 leased to attempt 1 by h; event 2 pins the
-- reducer checkpoint at index 1 (kept in history).
------------------------------------------------------------------------
SELECT is(jsonb_path_query_array(
		a2_append('outbox-s', '[{"id":"outbox-ob1","type":"job"},{"id":"outbox-ob2","type":"job"}]'), '$.events[*].index'),
	'[1,2]', 'setup: two events');
SELECT is(jsonb_path_query_array(a2_claim('outbox-s', 'h', 60000), '$.events[*].attemptCount'),
	'[1,1]', 'setup: both leased to attempt 1');
SELECT lives_ok($$SELECT a2_put_snapshots('outbox-s', 'r',
		'[{"index":1,"state":{"n":1},"pinEventIndexes":[2]},{"index":2,"state":{"n":2}}]')$$,
	'setup: checkpoint 1 pinned by event 2, head at 2');
SELECT is((SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'outbox-s'), 1::bigint,
	'setup: checkpoint 1 is in history');

-- Commit: the handler's row and the completion both stay.
SAVEPOINT handler_1;
INSERT INTO outbox_effects VALUES ('outbox-s', 1, 'done');
SELECT is(a2_complete('outbox-s', 1, 1, '[{"id":"outbox-ob1-out","type":"result"}]') #>> '{events,0,index}',
	'3', 'commit: completion returns its child at index 3');
RELEASE SAVEPOINT handler_1;

SELECT is((SELECT note FROM outbox_effects WHERE session_id = 'outbox-s' AND event_index = 1),
	'done', 'commit: the handler''s row is kept');
SELECT is(outbox_event('outbox-s', 1),
	'{"processed":true,"by":1,"returned":["outbox-ob1-out"],"attempts":1,"holder":null,"expires":null,"ready":false}',
	'commit: event 1 is processed by attempt 1, lease cleared');
SELECT is(a2_read('outbox-s', 2) -> 0 -> 'cause', '{"index":1,"attempt":1}',
	'commit: the returned event is stored with its cause');

-- Rollback: neither the handler's row nor anything of the completion stays.
SAVEPOINT handler_2;
INSERT INTO outbox_effects VALUES ('outbox-s', 2, 'done');
SELECT is(a2_complete('outbox-s', 2, 1, '[{"id":"outbox-ob2-out","type":"result"}]') #>> '{events,0,index}',
	'4', 'rollback: inside the handler the completion succeeds');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'outbox-s'), 0::bigint,
	'rollback: inside the handler the pin is released');
ROLLBACK TO SAVEPOINT handler_2;

SELECT is((SELECT count(*) FROM outbox_effects WHERE session_id = 'outbox-s' AND event_index = 2), 0::bigint,
	'rollback: the handler''s row is gone');
SELECT is(outbox_event('outbox-s', 2),
	'{"processed":false,"by":null,"returned":null,"attempts":1,"holder":"h","expires":1767225660000,"ready":true}',
	'rollback: event 2 is unprocessed and still leased to attempt 1');
SELECT is(jsonb_path_query_array(a2_read('outbox-s'), '$[*].id'), '["outbox-ob1", "outbox-ob2", "outbox-ob1-out"]',
	'rollback: the returned event is gone');
SELECT is((SELECT count(*) FROM a2_events WHERE event_id = 'outbox-ob2-out'), 0::bigint,
	'rollback: no row with the returned id');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'outbox-s' AND event_index = 2), 1::bigint,
	'rollback: the pin is kept');
SELECT is((SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'outbox-s'), 1::bigint,
	'rollback: the pinned checkpoint is kept');
SELECT is(a2_claim('outbox-s', 'other', 60000, NULL, '{3}'), '{"outcome":"busy","retryAt":"2026-01-01T00:01:00.000Z"}',
	'rollback: the live lease of attempt 1 still keeps other claimers out of event 2');

-- The same attempt completes later, with the same returned event.
SAVEPOINT handler_2_again;
INSERT INTO outbox_effects VALUES ('outbox-s', 2, 'done');
SELECT is(a2_complete('outbox-s', 2, 1, '[{"id":"outbox-ob2-out","type":"result"}]') #>> '{events,0,index}',
	'4', 'retry: the same attempt completes; its child takes index 4');
RELEASE SAVEPOINT handler_2_again;

SELECT is((SELECT note FROM outbox_effects WHERE session_id = 'outbox-s' AND event_index = 2),
	'done', 'retry: the handler''s row is kept');
SELECT is(outbox_event('outbox-s', 2) -> 'by', '1', 'retry: event 2 is processed by attempt 1');
SELECT is((SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'outbox-s')
		+ (SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'outbox-s'), 0::bigint,
	'retry: the pin and the history checkpoint are released');
SELECT is(jsonb_path_query_array(a2_read('outbox-s'), '$[*].index'), '[1, 2, 3, 4]',
	'retry: indexes stay dense');

------------------------------------------------------------------------
-- Session outbox-lane: a rolled-back completion does not promote the lane.
------------------------------------------------------------------------
SELECT is(jsonb_path_query_array(
		a2_append('outbox-lane', '[{"id":"outbox-l1","type":"job","lane":"L"},{"id":"outbox-l2","type":"job","lane":"L"}]'),
		'$.events[*].index'),
	'[1,2]', 'lane setup: two events in lane L');
SELECT is(jsonb_path_query_array(a2_claim('outbox-lane', 'h', 1000), '$.events[*].index'), '[1]',
	'lane setup: only the head of the lane is claimed');
SAVEPOINT handler_lane;
INSERT INTO outbox_effects VALUES ('outbox-lane', 1, 'done');
SELECT is(outbox_event('outbox-lane', 2) -> 'ready', 'false', 'lane: event 2 waits before completion');
SELECT is(a2_complete('outbox-lane', 1, 1) ->> 'outcome', 'completed', 'lane: completion inside the handler');
SELECT is(outbox_event('outbox-lane', 2) -> 'ready', 'true', 'lane: inside the handler event 2 is promoted');
ROLLBACK TO SAVEPOINT handler_lane;
SELECT is(outbox_event('outbox-lane', 2) -> 'ready', 'false', 'lane: after rollback event 2 is not promoted');
SELECT is(a2_claim('outbox-lane', 'h2', 1000), '{"outcome":"busy","retryAt":"2026-01-01T00:00:01.000Z"}',
	'lane: after rollback nothing is claimable until the lease of event 1 expires');

------------------------------------------------------------------------
-- Session outbox-x: rolled back, then the lease expires: a re-claim gets
-- attempt 2 and attempt 1 can no longer complete.
------------------------------------------------------------------------
SELECT is(a2_append('outbox-x', '[{"id":"outbox-x1","type":"job"}]') #>> '{events,0,index}', '1', 'expiry setup: one event');
SELECT is(a2_claim('outbox-x', 'h', 1000) #>> '{events,0,attemptCount}', '1', 'expiry setup: attempt 1 leased for 1 s');
SAVEPOINT handler_x;
INSERT INTO outbox_effects VALUES ('outbox-x', 1, 'attempt 1');
SELECT is(a2_complete('outbox-x', 1, 1) ->> 'outcome', 'completed', 'expiry: attempt 1 completes inside its handler');
ROLLBACK TO SAVEPOINT handler_x;

SET LOCAL a2.now = '2026-01-01 00:00:05+00';
SELECT is(a2_claim('outbox-x', 'h2', 1000) #> '{events,0}' -> 'attemptCount', '2',
	'expiry: after the rollback and the expiry a re-claim gets attempt 2');
SELECT is(a2_complete('outbox-x', 1, 1), '{"outcome":"superseded"}', 'expiry: attempt 1 is superseded now');
SAVEPOINT handler_x2;
INSERT INTO outbox_effects VALUES ('outbox-x', 1, 'attempt 2');
SELECT is(a2_complete('outbox-x', 1, 2) ->> 'outcome', 'completed', 'expiry: attempt 2 completes');
RELEASE SAVEPOINT handler_x2;
SELECT is((SELECT array_agg(note) FROM outbox_effects WHERE session_id = 'outbox-x'), ARRAY['attempt 2'],
	'expiry: only the effect of attempt 2 exists');
SELECT is(outbox_event('outbox-x', 1) -> 'by', '2', 'expiry: processed by attempt 2');

------------------------------------------------------------------------
-- Handlers that fail after completing: the error takes the completion
-- down with the handler's rows (throws_ok runs them in a subtransaction,
-- as an application's transaction would be rolled back).
------------------------------------------------------------------------
SELECT is(a2_append('outbox-crash', '[{"id":"outbox-c1","type":"job"},{"id":"outbox-c2","type":"job"}]') -> 'hasPending', 'true',
	'crash setup: two events');
SELECT is(jsonb_array_length(a2_claim('outbox-crash', 'h', 60000) -> 'events'), 2, 'crash setup: both leased');
SELECT throws_ok($$SELECT outbox_crashing_handler('outbox-crash', 1, 1)$$, 'P0001', NULL,
	'crash: the handler raises after a2_complete');
SELECT is(outbox_event('outbox-crash', 1),
	'{"processed":false,"by":null,"returned":null,"attempts":1,"holder":"h","expires":1767225665000,"ready":true}',
	'crash: event 1 is untouched');
SELECT is((SELECT count(*) FROM outbox_effects WHERE session_id = 'outbox-crash')
		+ (SELECT count(*) FROM a2_events WHERE event_id LIKE 'outbox-crash-%'), 0::bigint,
	'crash: neither the handler''s row nor the returned event exists');
SELECT throws_ok($$SELECT outbox_late_violation('outbox-crash', 2, 1)$$, '23505', NULL,
	'crash: the handler''s own write fails after a2_complete');
SELECT is(outbox_event('outbox-crash', 2) -> 'processed', 'false', 'crash: event 2 is still unprocessed');
SELECT is((SELECT count(*) FROM outbox_effects WHERE session_id = 'outbox-crash')
		+ (SELECT count(*) FROM a2_events WHERE event_id LIKE 'outbox-crash-%'), 0::bigint,
	'crash: nothing of the second handler is left');
SELECT is(a2_complete('outbox-crash', 2, 1) ->> 'outcome', 'completed',
	'crash: the same attempt can still complete');

SELECT * FROM finish();
ROLLBACK;
