-- event_ids.sql: generated event ids are RFC 9562 version 7 UUIDs (issue 20).
--
-- The 48-bit time of a generated id is the store clock of the append, the
-- reading its createdAt holds, so a2.now drives it here.  Within a backend
-- every id is greater than the one before it: in one batch, across
-- appends, when the clock stands still for many ids, and when it steps
-- back (the id then keeps the last time and counts on).  pg_prove runs
-- this file in a backend of its own, so the first id below is the
-- backend's first.
BEGIN;
SELECT plan(19);

-- The id's 48-bit millisecond time
CREATE FUNCTION pg_temp.id_ms(id text) RETURNS bigint LANGUAGE sql AS $$
	SELECT ('x' || lpad(replace(substr(id, 1, 13), '-', ''), 16, '0'))::bit(64)::bigint
$$;

-- The appended events of an a2_append result, in index order
CREATE FUNCTION pg_temp.appended(r jsonb)
RETURNS TABLE (idx bigint, id text, created_ms bigint)
LANGUAGE sql AS $$
	SELECT (e ->> 'index')::bigint, e ->> 'id', x.created_at
	  FROM jsonb_array_elements(r -> 'events') e
	  JOIN a2_events x ON x.session_id = e ->> 'sessionId' AND x.idx = (e ->> 'index')::bigint
	 ORDER BY 1
$$;

CREATE TEMP TABLE ids (n serial, idx bigint, id text, created_ms bigint);

-- A clock before 1970 cannot be written in 48 unsigned bits: time 0.
SET LOCAL a2.now = '1969-12-31 23:59:59.999+00';
INSERT INTO ids (idx, id, created_ms)
SELECT * FROM pg_temp.appended(a2_append('ids-a', '[{"type": "early"}]'));
SELECT is(pg_temp.id_ms(id), 0::bigint, 'a time before 1970 is stored as 0')
  FROM ids WHERE n = 1;

-- A batch of three at t1 = 2026-03-01 00:00:00.000 (1772323200000 ms)
SET LOCAL a2.now = '2026-03-01 00:00:00+00';
INSERT INTO ids (idx, id, created_ms)
SELECT * FROM pg_temp.appended(a2_append('ids-a',
	'[{"type": "a"}, {"type": "b", "payload": 1}, {"type": "c", "lane": "l"}]'));

SELECT is(count(*), 4::bigint, 'four generated ids so far') FROM ids;
SELECT is(count(*) FILTER (WHERE id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$'),
		  4::bigint, 'every id has the 8-4-4-4-12 form, version 7 and the RFC variant')
  FROM ids;
SELECT is(count(*) FILTER (WHERE id::uuid::text = id), 4::bigint,
		  'every id is a uuid, and its canonical text')
  FROM ids;
SELECT is(array_agg(pg_temp.id_ms(id) ORDER BY n), ARRAY[0, 1772323200000, 1772323200000, 1772323200000]::bigint[],
		  'the time of each id is its store clock reading')
  FROM ids;
SELECT is(count(*), 3::bigint, 'the time equals createdAt (after 1970)')
  FROM ids WHERE n > 1 AND pg_temp.id_ms(id) = created_ms;

-- Five milliseconds later, one more append
SET LOCAL a2.now = '2026-03-01 00:00:00.005+00';
INSERT INTO ids (idx, id, created_ms)
SELECT * FROM pg_temp.appended(a2_append('ids-a', '[{"type": "d"}]'));
SELECT is(pg_temp.id_ms(id), 1772323200005::bigint, 'a later append carries the later time')
  FROM ids WHERE n = 5;

-- The clock steps back a second: the id keeps the last time and counts on
SET LOCAL a2.now = '2026-02-28 23:59:59+00';
INSERT INTO ids (idx, id, created_ms)
SELECT * FROM pg_temp.appended(a2_append('ids-a', '[{"type": "e"}]'));
SELECT is(created_ms, 1772323199000::bigint, 'createdAt is the stepped-back clock')
  FROM ids WHERE n = 6;
SELECT is(pg_temp.id_ms(id), 1772323200005::bigint,
		  'the id after a step back keeps the last id''s time')
  FROM ids WHERE n = 6;

-- In order: by index, as text and as uuid, strictly
SELECT is(count(*), 0::bigint, 'each id is greater than the one before it, as text')
  FROM (SELECT id, lag(id) OVER (ORDER BY idx) AS prev FROM ids) t
 WHERE prev IS NOT NULL AND NOT id > prev;
SELECT is(count(*), 0::bigint, 'and as uuid')
  FROM (SELECT id::uuid AS u, lag(id::uuid) OVER (ORDER BY idx) AS prev FROM ids) t
 WHERE prev IS NOT NULL AND NOT u > prev;

-- A clock that stands still: 2,000 ids in one millisecond, in 2 sessions
SET LOCAL a2.now = '2026-03-01 00:00:01+00';
CREATE TEMP TABLE burst AS
SELECT b.*, s.k FROM generate_series(1, 2) s(k),
	LATERAL pg_temp.appended(a2_append('ids-burst-' || s.k,
		(SELECT jsonb_agg(jsonb_build_object('type', 'x')) FROM generate_series(1, 1000)))) b;
SELECT is(count(DISTINCT id), 2000::bigint, '2,000 ids in one millisecond are distinct') FROM burst;
SELECT is(count(*), 2000::bigint, 'all carry that millisecond')
  FROM burst WHERE pg_temp.id_ms(id) = 1772323201000;
SELECT is(count(*), 0::bigint, 'and ascend in the order they were made')
  FROM (SELECT id, lag(id) OVER (ORDER BY k, idx) AS prev FROM burst) t
 WHERE prev IS NOT NULL AND NOT id > prev;
SELECT is(count(*), 0::bigint, 'and differ from all earlier ids')
  FROM burst b JOIN ids USING (id);

-- Supplied ids are stored as given; a batch may mix supplied and generated
SELECT is(jsonb_path_query_array(a2_append('ids-b',
			'[{"id": "mine-1", "type": "a"}, {"type": "b"}, {"id": "mine-2", "type": "c"}]'),
		  '$.events[*].id') -> 0, '"mine-1"'::jsonb, 'a supplied id is kept');
SELECT ok(event_id ~ '^[0-9a-f]{8}-[0-9a-f]{4}-7', 'the unsupplied id of a mixed batch is generated')
  FROM a2_events WHERE session_id = 'ids-b' AND idx = 2;
SELECT is(event_id, 'mine-2', 'the second supplied id is kept')
  FROM a2_events WHERE session_id = 'ids-b' AND idx = 3;

-- Two appends without a2.now (the wall clock, later than every a2.now
-- above): ascending, and the time is the event's createdAt
RESET a2.now;
CREATE TEMP TABLE wall AS SELECT * FROM pg_temp.appended(a2_append('ids-c', '[{"type": "a"}]'));
INSERT INTO wall SELECT * FROM pg_temp.appended(a2_append('ids-c', '[{"type": "b"}]'));
SELECT ok(a.id < b.id AND pg_temp.id_ms(a.id) = a.created_ms AND pg_temp.id_ms(b.id) = b.created_ms,
		  'with the wall clock too: ascending, time = createdAt')
  FROM wall a, wall b WHERE a.idx = 1 AND b.idx = 2;

SELECT * FROM finish();
ROLLBACK;
