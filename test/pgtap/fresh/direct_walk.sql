--
-- Direct walk (docs/internals.md, "Direct writes"): a2_claim_next's two
-- probes of a2_events_default_available -- the next session with work
-- available now, and the retryAt -- read the index without the executor.
-- The answers and the rows they leave must be exactly those of the
-- statements (a2.direct_writes = off): sessions whose work became
-- available at the same instant, taken in session order across calls and
-- within one call; a session with two events; a lane; a concurrency key
-- at its limit (whose events the direct read then leaves out, as the
-- statement's filter does); work scheduled for later; expired leases.  With row-level security on
-- a2_events the statements run.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(7);

SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SELECT a2_set_concurrency_limit('kx', 1) IS NOT NULL AS limit_set \gset
-- seven sessions' work available from the same instant, one a millisecond later
SELECT count(a2_append(s, e::jsonb)) AS appended FROM (VALUES
	('dwk-a', '[{"type": "a1"}, {"type": "a2"}]'),
	('dwk-b', '[{"type": "b1"}]'),
	('dwk-c', '[{"type": "c1", "concurrencyKey": "kx"}]'),
	('dwk-d', '[{"type": "d1", "concurrencyKey": "kx"}]'),
	('dwk-e', '[{"type": "e1", "lane": "l"}, {"type": "e2", "lane": "l"}]'),
	('dwk-f', '[{"type": "f1", "notBefore": "2026-03-01T00:05:00Z"}]'),
	('dwk-g', '[{"type": "g1"}]')) v(s, e) \gset
SET LOCAL a2.now = '2026-03-01 00:00:00.001+00';
SELECT a2_append('dwk-h', '[{"type": "h1"}]') IS NOT NULL AS appended_h \gset

-- The cached plans of the two probes' statements (local.c's
-- next_candidate and next_after_now, dispatch_walk.c's plain_next): each
-- has the plain level's predicate right after its table.
CREATE FUNCTION pg_temp.probe_plans() RETURNS bigint LANGUAGE sql AS $$
	SELECT count(*) FROM pg_backend_memory_contexts
	 WHERE ident LIKE '%.a2_events e WHERE e.lane_ready AND e.processed_at IS NULL'
					  ' AND e.failed_at IS NULL AND e.queue IS NULL AND e.priority IS NULL%'
	   AND ident NOT LIKE '%pg_backend_memory_contexts%'
$$;

-- The walk: calls of a2_claim_next and their answers, in order.
CREATE FUNCTION pg_temp.walk() RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
	answers jsonb := '[]';
BEGIN
	PERFORM set_config('a2.now', '2026-03-01 00:00:01+00', true);
	-- two sessions of the same instant, in session order
	answers := answers || jsonb_build_array(a2_claim_next('w1', 30000, 2));
	-- the rest: kx admits dwk-c and holds dwk-d; dwk-f is not due
	answers := answers || jsonb_build_array(a2_claim_next('w2', 30000, 10));
	answers := answers || jsonb_build_array(a2_claim_next('w3', 30000, 10));
	-- the leases have expired and dwk-f is due
	PERFORM set_config('a2.now', '2026-03-01 00:10:00+00', true);
	answers := answers || jsonb_build_array(a2_claim_next('w4', 30000, 3));
	answers := answers || jsonb_build_array(a2_claim_next('w5', 30000, 10));
	answers := answers || jsonb_build_array(a2_claim_next('w6', 30000, 10));
	RETURN answers;
END
$$;

CREATE FUNCTION pg_temp.stored() RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(to_jsonb(e) ORDER BY e.session_id, e.idx) FROM a2_events e
$$;

-- 1. The whole walk reads directly: no probe statement is prepared (this
-- comes first: the backend keeps the plans the next parts prepare).
SAVEPOINT walk;
SET LOCAL a2.direct_writes = on;
SELECT pg_temp.walk() AS answers_on \gset
SELECT pg_temp.stored() AS stored_on \gset
SELECT is(jsonb_array_length(:'answers_on'::jsonb -> 0 -> 'claims'), 2,
		  'a first call claims two sessions');
SELECT is(pg_temp.probe_plans(), 0::bigint,
		  'with a2.direct_writes on, the walk (kx held in some calls) prepares no probe statement');
ROLLBACK TO SAVEPOINT walk;

-- 2. With row-level security on the table, the statements run.
ALTER TABLE a2_events ENABLE ROW LEVEL SECURITY;
SELECT is(jsonb_array_length(a2_claim_next('w1', 30000, 2) -> 'claims'), 2,
		  'the same call with row-level security enabled');
SELECT cmp_ok(pg_temp.probe_plans(), '>', 0::bigint,
			  'with row-level security on a2_events, the walk ran its statements');
ROLLBACK TO SAVEPOINT walk;

-- 3. The same walk by statement, from the same rows.
SET LOCAL a2.direct_writes = off;
SELECT pg_temp.walk() AS answers_off \gset
SELECT pg_temp.stored() AS stored_off \gset

SELECT is(:'answers_on'::jsonb, :'answers_off'::jsonb,
		  'every a2_claim_next answers the same with and without the direct walk');
SELECT is(:'stored_on'::jsonb, :'stored_off'::jsonb,
		  'and leaves the same rows');
-- what the walk was: each call's sessions and retryAt
SELECT is((SELECT jsonb_agg(jsonb_build_object(
					'sessions', (SELECT coalesce(jsonb_agg(c -> 'sessionId'), '[]')
								   FROM jsonb_array_elements(a -> 'claims') c),
					'retryAt', a -> 'retryAt'))
			 FROM jsonb_array_elements(:'answers_on'::jsonb) a),
		  '[{"sessions": ["dwk-a", "dwk-b"], "retryAt": "2026-03-01T00:00:31.000Z"},
			{"sessions": ["dwk-c", "dwk-e", "dwk-g", "dwk-h"], "retryAt": "2026-03-01T00:00:31.000Z"},
			{"sessions": [], "retryAt": "2026-03-01T00:00:31.000Z"},
			{"sessions": ["dwk-d", "dwk-a", "dwk-b"], "retryAt": "2026-03-01T00:10:30.000Z"},
			{"sessions": ["dwk-e", "dwk-g", "dwk-h", "dwk-f"], "retryAt": "2026-03-01T00:10:30.000Z"},
			{"sessions": [], "retryAt": "2026-03-01T00:10:30.000Z"}]'::jsonb,
		  'oldest first, same-instant work in session order, the key held until its lease expires, the schedule kept');

SELECT * FROM finish();
ROLLBACK;
