-- walk_plans.sql: a2_claim_next's probes of a2_events_default_available read
-- that index whatever the statistics say (A2Statement.index,
-- src/plan_floor.c).
--
-- Under a snapshot held open for minutes, ANALYZE once counted the live
-- rows of a2_events as few and the index's entries as many, and the walk's
-- probes were planned over a2_events_dispatch_ready with a sort, reading
-- every version of every pending event (bench/RESULTS.md, "Walk marks").
-- Here a rival index with the same definition, built after 5,000 entries
-- of a2_events_default_available were deleted, is smaller, so a planner
-- free to choose takes the rival.  auto_explain writes the plans a2's
-- call runs to the server log, which this file reads back (as jit.sql
-- does).
BEGIN;
SELECT plan(10);
-- The statements' plans: with direct writes on, the walk reads its
-- indexes itself, by name (direct_walk.c, direct_queue_walk.c), and runs
-- no probe statement; the statements run with the setting off.
SET LOCAL a2.direct_writes = off;

SELECT regexp_replace(current_setting('data_directory'), '/[^/]*$', '') || '/log' AS log \gset
SET LOCAL a2.now = '2026-03-01 00:00:00+00';
SELECT count(a2_append('wp-bulk-' || i, '[{"type":"t"}]')) AS appended FROM generate_series(1, 5000) i \gset
DELETE FROM a2_events WHERE session_id LIKE 'wp-bulk-%';
SELECT count(a2_append('wp-' || i, '[{"type":"t"}]')) AS appended FROM generate_series(1, 20) i \gset
CREATE INDEX wp_rival ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL AND queue IS NULL AND priority IS NULL;
SELECT ok(pg_relation_size('wp_rival') < pg_relation_size('a2_events_default_available'),
		  'the rival index is the smaller one');
SELECT (pg_stat_file(:'log')).size AS log_before \gset

LOAD 'auto_explain';
SET LOCAL auto_explain.log_min_duration = 0;
SET LOCAL auto_explain.log_nested_statements = on;
-- a2 plans its statements again, with these statistics
DISCARD PLANS;
SELECT a2_claim_next('wp', 30000, 2) -> 'claims' AS claims \gset
RESET auto_explain.log_min_duration;

-- The plans auto_explain wrote to the log after byte `since`.
CREATE FUNCTION pg_temp.plans_since(log text, since bigint) RETURNS SETOF text
LANGUAGE sql AS $$
	SELECT p FROM regexp_split_to_table(
			pg_read_file(log, since, (pg_stat_file(log)).size - since),
			'LOG:  duration: ') AS p
	 WHERE p LIKE '%plan:%'
$$;

CREATE TEMP TABLE wp_plans AS
SELECT pg_temp.plans_since(:'log', :log_before) AS entry;

SELECT is(jsonb_array_length(:'claims'::jsonb), 2, 'claim_next claimed two sessions');
-- the walk's probe: greater-than on (key, session), ordered, LIMIT 1
SELECT ok(EXISTS (SELECT FROM wp_plans
				   WHERE entry LIKE '%Query Text: SELECT e.session_id, COALESCE(%OPERATOR(pg_catalog.<=) $1%'),
		  'the walk''s probe is in the log');
SELECT is((SELECT count(*) FROM wp_plans
			WHERE entry LIKE '%Query Text: SELECT e.session_id, COALESCE(%OPERATOR(pg_catalog.<=) $1%'
			  AND entry NOT LIKE '%Index Scan using a2_events_default_available%'),
		  0::bigint, 'every walk probe reads a2_events_default_available');
SELECT is((SELECT count(*) FROM wp_plans
			WHERE entry LIKE '%Query Text: SELECT COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)) AS available_at FROM public.a2_events e WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.queue IS NULL AND e.priority IS NULL%'
			  AND entry NOT LIKE '%Index Scan using a2_events_default_available%'),
		  0::bigint, 'the retryAt probe reads a2_events_default_available');


-- The queue walk's probes read their own indexes too: a call for some
-- queues a2_events_queue_available, led by the queue; a call for every
-- queue a2_events_level_available, led by the priority.  Each could serve
-- the other's statement (a planner free to choose takes the level index
-- for a queue's probe), so each names its index.
SELECT count(a2_append('wq-' || i, jsonb_build_array(jsonb_build_object(
		'type', 't', 'queue', 'jobs', 'priority', i % 2)))) AS appended
  FROM generate_series(1, 20) i \gset
SELECT (pg_stat_file(:'log')).size AS log_before \gset
SET LOCAL auto_explain.log_min_duration = 0;
DISCARD PLANS;
SELECT a2_claim_next('wq', 30000, 2, NULL, '{jobs}') -> 'claims' AS queue_claims \gset
SELECT a2_claim_next('wq', 30000, 2) -> 'claims' AS every_claims \gset
RESET auto_explain.log_min_duration;

CREATE TEMP TABLE wq_plans AS
SELECT pg_temp.plans_since(:'log', :log_before) AS entry;

SELECT is(jsonb_array_length(:'queue_claims'::jsonb) + jsonb_array_length(:'every_claims'::jsonb),
		  4, 'the two calls claimed two sessions each');
SELECT ok(EXISTS (SELECT FROM wq_plans
				   WHERE entry LIKE '%Query Text: SELECT e.session_id, COALESCE(%e.queue OPERATOR(pg_catalog.=) $1%'),
		  'a queue''s head probe is in the log');
SELECT is((SELECT count(*) FROM wq_plans
			WHERE entry LIKE '%Query Text: SELECT %e.queue OPERATOR(pg_catalog.=) $1%'
			  AND entry NOT LIKE '%Scan%using a2_events_queue_available %'),
		  0::bigint, 'every probe of one queue reads a2_events_queue_available');
SELECT ok(EXISTS (SELECT FROM wq_plans
				   WHERE entry LIKE '%Query Text: SELECT e.session_id, COALESCE(%COALESCE(e.queue, ''default'') OPERATOR(pg_catalog.<>) ALL ($6)%'),
		  'a head probe of a call for every queue is in the log');
SELECT is((SELECT count(*) FROM wq_plans
			WHERE entry LIKE '%Query Text: SELECT e.session_id, COALESCE(%COALESCE(e.queue, ''default'') OPERATOR(pg_catalog.<>) ALL ($6)%'
			  AND entry NOT LIKE '%Scan%using a2_events_level_available %'),
		  0::bigint, 'every head probe of a call for every queue reads a2_events_level_available');

SELECT * FROM finish();
ROLLBACK;
