-- jit.sql: a2's kept plans are never JIT-compiled (src/plan_floor.c).
--
-- With jit_above_cost = 0 every plan PostgreSQL makes would be compiled.
-- auto_explain writes each plan a2's calls run, with its "JIT:" section
-- when it was compiled, to the server log, which this file reads back
-- (the clusters of scripts/cluster.sh log to <data directory>/../log).
-- The calls' own top-level statements show that JIT is on and working;
-- the statements a2 runs inside them must show no JIT section.
BEGIN;
SELECT plan(4);

SELECT regexp_replace(current_setting('data_directory'), '/[^/]*$', '') || '/log' AS log \gset
SELECT (pg_stat_file(:'log')).size AS log_before \gset

SET LOCAL a2.now = '2026-03-01 00:00:00+00';
-- planned before JIT is forced, as a worker's first call would be
SELECT a2_append('jit-warm', '[{"type":"t"}]') IS NOT NULL AS warm \gset

LOAD 'auto_explain';
SET LOCAL auto_explain.log_min_duration = 0;
SET LOCAL auto_explain.log_analyze = on;
SET LOCAL auto_explain.log_timing = off;
SET LOCAL auto_explain.log_nested_statements = on;
SET LOCAL jit = on;
SET LOCAL jit_above_cost = 0;
SET LOCAL jit_inline_above_cost = -1;
SET LOCAL jit_optimize_above_cost = -1;
-- a2 plans its statements again after these settings (a new session's
-- first call): discard what this session has planned so far
DISCARD PLANS;

SELECT a2_append('jit-1', '[{"type":"t"}]') IS NOT NULL AS appended \gset
SELECT a2_claim('jit-1', 'w', 30000) ->> 'outcome' AS claimed \gset
SELECT a2_complete('jit-1', 1, 1, '[]') ->> 'outcome' AS completed \gset

RESET jit_above_cost;
RESET auto_explain.log_min_duration;

-- one log entry per plan, from "duration: ... plan:" to the next
CREATE TEMP TABLE jit_plans AS
SELECT p AS entry
  FROM regexp_split_to_table(
		pg_read_file(:'log', :log_before, (pg_stat_file(:'log')).size - :log_before),
		'LOG:  duration: ') AS p
 WHERE p LIKE '%plan:%';

SELECT ok(EXISTS (SELECT FROM jit_plans WHERE entry LIKE '%Query Text: SELECT a2_claim(%' AND entry LIKE '%JIT:%')
		  OR NOT pg_jit_available(),
		  'the caller''s own statement is JIT-compiled (JIT is on and works here)');
SELECT ok(EXISTS (SELECT FROM jit_plans WHERE entry LIKE '%Query Text: SELECT e.idx, e.attempt_count,%FOR UPDATE%'),
		  'the claim statement a2 runs is in the log');
SELECT is((SELECT count(*) FROM jit_plans
			WHERE entry NOT LIKE '%Query Text: SELECT a2_%' AND entry LIKE '%JIT:%'),
		  0::bigint, 'no statement a2 ran was JIT-compiled');
SELECT cmp_ok((SELECT count(*) FROM jit_plans WHERE entry NOT LIKE '%Query Text: SELECT a2_%'),
			  '>=', 3::bigint, 'the statements of the append, the claim and the completion were all logged');

SELECT * FROM finish();
ROLLBACK;
