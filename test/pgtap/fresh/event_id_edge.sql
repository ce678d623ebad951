--
-- Generated event ids at the edge of their 48-bit time field
-- (src/uuid7.c): with the store clock at the last millisecond a version-7
-- id can hold (10889-08-02T05:31:50.655Z), one backend makes more ids than
-- the 18-bit counter holds.  Every id must still sort after the one before
-- it, as text and as uuid; the time field must never wrap to 1970.  And
-- past that millisecond (the clock runs to 275760) ids keep that time and
-- keep their order.
--
\set ON_ERROR_STOP 1
\set QUIET 1
\pset format unaligned
\pset tuples_only true
\pset pager off

BEGIN;
CREATE EXTENSION IF NOT EXISTS pgtap;
CREATE EXTENSION IF NOT EXISTS a2;
SELECT plan(5);

SET a2.now = '10889-08-02 05:31:50.655+00';
-- 27 batches of 10,000: more than 2^18 ids, so the counter overflows
DO $$
BEGIN
	FOR i IN 1 .. 27 LOOP
		PERFORM a2_append('edge:s1',
						  (SELECT jsonb_agg(jsonb_build_object('type', 'tick', 'settled', true))
							 FROM generate_series(1, 10000)));
	END LOOP;
END
$$;

SELECT is((SELECT count(*) FROM a2_events WHERE session_id = 'edge:s1'), 270000::bigint,
		  'the 270,000 events were appended');
SELECT is((SELECT count(*) FROM (
			SELECT event_id, lag(event_id) OVER (ORDER BY idx) AS prev
			  FROM a2_events WHERE session_id = 'edge:s1') x
		   WHERE x.prev >= x.event_id), 0::bigint,
		  'each generated id sorts after the one before it, as text');
SELECT is((SELECT count(*) FROM (
			SELECT event_id::uuid AS id, lag(event_id::uuid) OVER (ORDER BY idx) AS prev
			  FROM a2_events WHERE session_id = 'edge:s1') x
		   WHERE x.prev >= x.id), 0::bigint,
		  '... and as uuid');
SELECT is((SELECT count(DISTINCT left(event_id, 13)) FROM a2_events WHERE session_id = 'edge:s1'),
		  1::bigint, 'every id keeps the last millisecond: the time never wraps');

SET a2.now = '275760-09-13 00:00:00+00';
DO $$
BEGIN
	FOR i IN 1 .. 3 LOOP
		PERFORM a2_append('edge:s2', '[{"type": "tick"}, {"type": "tock"}]');
	END LOOP;
END
$$;
SELECT is((SELECT count(*) FROM (
			SELECT event_id, lag(event_id) OVER (ORDER BY idx) AS prev
			  FROM a2_events WHERE session_id = 'edge:s2') x
		   WHERE x.prev >= x.event_id OR left(x.event_id, 13) <> 'ffffffff-ffff'), 0::bigint,
		  'past the last millisecond ids keep it, in order');

SELECT * FROM finish();
ROLLBACK;
