-- What one a2_append, a2_claim, a2_complete and a2_claim_next cost in WAL
-- and buffers, counted rather than timed (EXPLAIN's WAL and BUFFERS counts
-- include the statements the functions run through SPI; commit records are
-- not included).  bench/w17.sh runs it in a database with the scheduling
-- objects of issue 17 and in one without them (a2 before issue 17), so the
-- difference is their cost.  A warm-up cycle first, so that no planning is
-- counted.  Rolled back.
--   psql -X -f bench/w17_wal.sql <a database with a2>
\pset footer off
BEGIN;
SET LOCAL a2.now = '2026-01-01 00:00:00+00';
SELECT a2_append('wal-warm1', '[{"type": "job"}]') IS NOT NULL AS warm,
	   a2_claim('wal-warm1', 'w', 30000) IS NOT NULL AS warm,
	   a2_complete('wal-warm1', 1, 1, '[{"id": "wal-warm1/done", "type": "done", "settled": true}]') IS NOT NULL AS warm,
	   a2_append('wal-warm2', '[{"type": "job"}]') IS NOT NULL AS warm,
	   a2_claim_next('w', 30000, 1) IS NOT NULL AS warm;
\echo '--- append, claim, complete, claim_next'
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_append('wal-a', '[{"type": "job", "payload": {"n": 1}}]');
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_claim('wal-a', 'w', 30000);
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_complete('wal-a', 1, 1, '[{"id": "wal-a/done", "type": "done", "settled": true}]');
SELECT a2_append('wal-b', '[{"type": "job", "payload": {"n": 1}}]') IS NOT NULL AS appended;
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_claim_next('w', 30000, 1);
ROLLBACK;
