--
-- Direct queue walk (docs/internals.md, "Direct writes"): the probes of
-- a2_claim_next's walk over queues and priority levels read
-- a2_events_queue_available, a2_events_level_available and
-- a2_events_queue_retry without the executor.  The answers and the rows they leave must be exactly those of
-- the statements (a2.direct_writes = off): named queues and the default
-- queue, priorities above and below 0, work of the same instant in
-- session order, a concurrency key at its limit (its work left out for
-- the rest of the call), a paused queue and its resumption, work
-- scheduled for later, expired leases; calls for every queue and for
-- some; the key decisions' limit row (a2_limits) and count of a key's
-- leases (a2_events_key_leases).
-- With row-level security on a2_events the statements run.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(13);

SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SELECT a2_set_concurrency_limit('kq', 1) IS NOT NULL AS limit_set \gset
SELECT a2_pause_queue('qc') IS NOT NULL AS paused \gset
SELECT count(a2_append(s, e::jsonb)) AS appended FROM (VALUES
	('dq-a', '[{"type": "a1", "queue": "qa", "priority": 2}]'),
	('dq-b', '[{"type": "b1", "queue": "qa"}]'),
	('dq-c', '[{"type": "c1", "queue": "qb", "priority": 2, "concurrencyKey": "kq"}]'),
	('dq-d', '[{"type": "d1", "queue": "qb", "priority": 2, "concurrencyKey": "kq"}]'),
	('dq-e', '[{"type": "e1", "queue": "qb", "priority": -1}]'),
	('dq-f', '[{"type": "f1", "priority": 1}]'),
	('dq-g', '[{"type": "g1"}, {"type": "g2", "queue": "qa", "priority": 3}]'),
	('dq-h', '[{"type": "h1", "queue": "qc", "priority": 5}]'),
	('dq-i', '[{"type": "i1", "queue": "qa", "priority": 2, "notBefore": "2026-03-01T00:05:00Z"}]'),
	('dq-j', '[{"type": "j1", "priority": 1, "concurrencyKey": "kq"}]'),
	('dq-l', '[{"type": "l1", "queue": "qa", "priority": 2}]')) v(s, e) \gset
SET LOCAL a2.now = '2026-03-01 00:00:00.001+00';
SELECT a2_append('dq-k', '[{"type": "k1", "queue": "qa", "priority": 2}]') IS NOT NULL AS appended_k \gset

-- The cached plans of the queue walk's statements (dispatch_probes.c):
-- each reads a2_events_queue_available, a2_events_level_available or
-- a2_events_queue_retry, whose
-- predicate ends with this clause.
CREATE FUNCTION pg_temp.probe_plans() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_backend_memory_contexts
	 WHERE ident LIKE '%(e.queue IS NOT NULL OR e.priority IS NOT NULL)%'
	   AND ident NOT LIKE '%pg_backend_memory_contexts%'
$$;

-- The walk: calls of a2_claim_next and their answers, in order.
CREATE FUNCTION pg_temp.walk() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	answers jsonb := '[]';
BEGIN
	PERFORM set_config('a2.now', '2026-03-01 00:00:01+00', true);
	answers := answers || jsonb_build_array(a2_claim_next('w1', 30000, 3));
	answers := answers || jsonb_build_array(a2_claim_next('w2', 30000, 10, NULL, '{qb}'));
	answers := answers || jsonb_build_array(a2_claim_next('w3', 30000, 10));
	answers := answers || jsonb_build_array(a2_claim_next('w4', 30000, 10, NULL, '{default}'));
	-- the leases have expired, dq-i is due, qc is resumed
	PERFORM set_config('a2.now', '2026-03-01 00:10:00+00', true);
	PERFORM a2_resume_queue('qc');
	answers := answers || jsonb_build_array(a2_claim_next('w5', 30000, 3));
	answers := answers || jsonb_build_array(a2_claim_next('w6', 30000, 10, NULL, '{qa,default}'));
	answers := answers || jsonb_build_array(a2_claim_next('w7', 30000, 10));
	answers := answers || jsonb_build_array(a2_claim_next('w8', 30000, 10));
	RETURN answers;
END
$$;

CREATE FUNCTION pg_temp.stored() RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(to_jsonb(e) ORDER BY e.session_id, e.idx) FROM a2_events e
$$;

-- 1. The whole walk reads directly: no queue probe statement is prepared
-- (this comes first: the backend keeps the plans the next parts prepare).
SAVEPOINT walk;
SET LOCAL a2.direct_writes = on;
SELECT pg_temp.walk() AS answers_on \gset
SELECT pg_temp.stored() AS stored_on \gset
SELECT is(jsonb_array_length(:'answers_on'::jsonb -> 0 -> 'claims'), 3,
		  'a first call for every queue claims three sessions');
SELECT is(pg_temp.probe_plans(), 0::bigint,
		  'with a2.direct_writes on, the queue walk (kq held in some calls) prepares no probe statement');
SELECT is((SELECT count(*) FROM pg_backend_memory_contexts
			WHERE (ident LIKE '%pg_catalog.count(*) AS leased%'
				   OR ident LIKE '%l.max_leased, l.rate_max, l.rate_per_ms FROM%')
			  AND ident NOT LIKE '%pg_backend_memory_contexts%'), 0::bigint,
		  'and its key decisions read kq''s limit and count its leases without their statements');
ROLLBACK TO SAVEPOINT walk;

-- 2. With row-level security on the table, the statements run, and a
-- worker's call does not see what a policy hides from it.
CREATE ROLE dqw_worker;
SELECT a2_grant_worker('dqw_worker') IS NOT NULL AS granted \gset
ALTER TABLE a2_events ENABLE ROW LEVEL SECURITY;
CREATE POLICY dqw_read ON a2_events FOR SELECT TO dqw_worker USING (session_id <> 'dq-a');
CREATE POLICY dqw_claim ON a2_events FOR UPDATE TO dqw_worker USING (true);
SET LOCAL ROLE dqw_worker;
SELECT is((SELECT jsonb_agg(c -> 'sessionId')
			 FROM jsonb_array_elements(a2_claim_next('w1', 30000, 3) -> 'claims') c),
		  '["dq-g", "dq-c", "dq-l"]'::jsonb,
		  'under a policy that hides dq-a, the first call claims the three after it');
RESET ROLE;
SELECT cmp_ok(pg_temp.probe_plans(), '>', 0::bigint,
			  'with row-level security on a2_events, the queue walk ran its statements');
ROLLBACK TO SAVEPOINT walk;

-- 2b. With row-level security on a2_limits, a limit's row is read by its
-- statement (a superuser's call: the policy filters nothing).
ALTER TABLE a2_limits ENABLE ROW LEVEL SECURITY;
SELECT is(jsonb_array_length(a2_claim_next('w1', 30000, 3) -> 'claims'), 3,
		  'a call with row-level security on a2_limits claims the same three sessions');
SELECT cmp_ok((SELECT count(*) FROM pg_backend_memory_contexts
				WHERE ident LIKE '%l.max_leased, l.rate_max, l.rate_per_ms FROM%'
				  AND ident NOT LIKE '%pg_backend_memory_contexts%'), '>', 0::bigint,
			  'with row-level security on a2_limits, kq''s limit was read by its statement');
ROLLBACK TO SAVEPOINT walk;

-- 2c. A level above the range a2 accepts (a row changed by hand) is left
-- out of a call for every queue by the direct read, as by the statement.
-- From the top the direct read has no scan key on the level and checks
-- the bound on each entry it returns; the statement has the bound as an
-- index condition.
SET LOCAL a2.now = '2026-03-01 00:00:01+00';
UPDATE a2_events SET priority = 40000 WHERE session_id = 'dq-b';
SAVEPOINT high;
SET LOCAL a2.direct_writes = on;
SELECT a2_claim_next('w9', 30000, 20) AS high_on \gset
ROLLBACK TO SAVEPOINT high;
SET LOCAL a2.direct_writes = off;
SELECT a2_claim_next('w9', 30000, 20) AS high_off \gset
SELECT is(:'high_on'::jsonb, :'high_off'::jsonb,
		  'a level above 32767 gets the same answer with and without the direct walk');
SELECT ok(NOT (:'high_on'::jsonb -> 'claims') @> '[{"sessionId": "dq-b"}]'
		  AND jsonb_array_length(:'high_on'::jsonb -> 'claims') > 5,
		  'which serves the other sessions and leaves that level out');
ROLLBACK TO SAVEPOINT walk;

-- 3. The same walk by statement, from the same rows.
SET LOCAL a2.direct_writes = off;
SELECT pg_temp.walk() AS answers_off \gset
SELECT pg_temp.stored() AS stored_off \gset

SELECT is(:'answers_on'::jsonb, :'answers_off'::jsonb,
		  'every a2_claim_next answers the same with and without the direct queue walk');
SELECT is(:'stored_on'::jsonb, :'stored_off'::jsonb,
		  'and leaves the same rows');
-- What the walk was: each call's sessions and retryAt.  At 00:00:01:
-- qa's level 3 (dq-g), then level 2 oldest first, ties by session (dq-a,
-- dq-c; dq-d waits for kq, which dq-c holds; qc is paused); qb alone
-- (dq-e, at -1); the rest, level 2 to 0 (dq-j waits for kq); the default
-- queue alone (nothing but dq-j).  At 00:10:00, the leases expired and qc
-- resumed: qc's level 5, qa's 3, then dq-d, oldest at level 2 (its key
-- free again); qa and the default queue (dq-i now due); qb's dq-e, at
-- -1 (dq-c waits for kq again).
\set expected '[{"sessions": ["dq-g", "dq-a", "dq-c"], "retryAt": "2026-03-01T00:00:31.000Z"}, {"sessions": ["dq-e"], "retryAt": "2026-03-01T00:00:31.000Z"}, {"sessions": ["dq-l", "dq-k", "dq-f", "dq-b"], "retryAt": "2026-03-01T00:00:31.000Z"}, {"sessions": [], "retryAt": "2026-03-01T00:00:31.000Z"}, {"sessions": ["dq-h", "dq-g", "dq-d"], "retryAt": "2026-03-01T00:10:30.000Z"}, {"sessions": ["dq-a", "dq-k", "dq-l", "dq-i", "dq-f", "dq-b"], "retryAt": "2026-03-01T00:10:30.000Z"}, {"sessions": ["dq-e"], "retryAt": "2026-03-01T00:10:30.000Z"}, {"sessions": [], "retryAt": "2026-03-01T00:10:30.000Z"}]'
SELECT is((SELECT jsonb_agg(jsonb_build_object(
					'sessions', (SELECT coalesce(jsonb_agg(c -> 'sessionId'), '[]')
								   FROM jsonb_array_elements(a -> 'claims') c),
					'retryAt', a -> 'retryAt'))
			 FROM jsonb_array_elements(:'answers_on'::jsonb) a),
		  :'expected'::jsonb,
		  'highest priority first, then oldest, then session id; the key held; qc paused until resumed; the schedule kept');
SELECT is((SELECT count(*) FROM a2_events WHERE claim_holder IS NOT NULL AND processed_at IS NULL
			  AND concurrency_key = 'kq' AND claim_expires_at > 1772323800000),
		  1::bigint, 'never more than one lease of kq at the end');

SELECT * FROM finish();
ROLLBACK;
