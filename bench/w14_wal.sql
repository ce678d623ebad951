-- What a2_events_available costs an append and a work cycle, counted
-- rather than timed: WAL records and bytes and buffers of one a2_append,
-- a2_claim and a2_complete (EXPLAIN's WAL and BUFFERS counts include the
-- statements the functions run through SPI), with the index and then
-- without it.  Each set is preceded by a warm-up cycle so that no
-- planning is counted.  Rolled back.
--   psql -X -f bench/w14_wal.sql <a database with a2>
\pset footer off
BEGIN;
SET LOCAL a2.now = '2026-01-01 00:00:00+00';
SELECT a2_append('wal-warm1', '[{"type": "job"}]') IS NOT NULL AS warm,
	   a2_claim('wal-warm1', 'w', 30000) IS NOT NULL AS warm,
	   a2_complete('wal-warm1', 1, 1, '[{"id": "wal-warm1/done", "type": "done", "settled": true}]') IS NOT NULL AS warm;
\echo '--- with a2_events_available: append, claim, complete'
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_append('wal-a', '[{"type": "job", "payload": {"n": 1}}]');
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_claim('wal-a', 'w', 30000);
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_complete('wal-a', 1, 1, '[{"id": "wal-a/done", "type": "done", "settled": true}]');
DROP INDEX a2_events_available;
SELECT a2_append('wal-warm2', '[{"type": "job"}]') IS NOT NULL AS warm,
	   a2_claim('wal-warm2', 'w', 30000) IS NOT NULL AS warm,
	   a2_complete('wal-warm2', 1, 1, '[{"id": "wal-warm2/done", "type": "done", "settled": true}]') IS NOT NULL AS warm;
\echo '--- without a2_events_available: append, claim, complete'
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_append('wal-b', '[{"type": "job", "payload": {"n": 1}}]');
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_claim('wal-b', 'w', 30000);
EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF)
	SELECT a2_complete('wal-b', 1, 1, '[{"id": "wal-b/done", "type": "done", "settled": true}]');
ROLLBACK;
