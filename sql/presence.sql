--
-- presence: a2_presence_set and a2_presence_read -- field-wise
-- last-writer-wins with tombstones and store-clock expiry (SPEC section 4,
-- "presence").
--
-- Every namespace of this file starts with "pres-".  The writers' `at`
-- values are on 2026-03-01 around 00:00; the store clock (a2.now) runs on
-- 2026-03-01 from 12:00, so an expiresAt always shows which clock it came
-- from.
--
SET timezone = 'UTC';
SET a2.now = '2026-03-01 12:00:00+00';

-- The rows a2_presence_read returns, in the order it returns them.
CREATE FUNCTION presence_rows(ns text)
RETURNS TABLE (participant text, field text, value jsonb, seen bigint,
			   at text, expires_at text)
LANGUAGE sql VOLATILE AS $$
	SELECT r->>'participant', r->>'field', r->'value', (r->>'seen')::bigint,
		   r->>'at', r->>'expiresAt'
	  FROM jsonb_array_elements(a2_presence_read(ns)) WITH ORDINALITY AS e(r, ord)
	 ORDER BY ord
$$;

--
-- 1. A first write, and the shape of a read.
--
SELECT a2_presence_set('pres-room', 'alice', '{"cursor": {"x": 1}, "name": "Alice"}',
					   '2026-03-01 00:00:10+00', 1, 60000);
SELECT jsonb_pretty(a2_presence_read('pres-room'));
SELECT DISTINCT array(SELECT k FROM jsonb_object_keys(r) k ORDER BY k COLLATE "C") AS row_keys
  FROM jsonb_array_elements(a2_presence_read('pres-room')) r;

--
-- 2. Last-writer-wins per field.  A winning write takes value, seen, at
-- and a fresh expiresAt (store clock + ttl); a losing one changes nothing.
--
-- older `at` (00:00:09 < 00:00:10): loses
SET a2.now = '2026-03-01 12:00:01+00';
SELECT a2_presence_set('pres-room', 'alice', '{"cursor": {"x": 2}}',
					   '2026-03-01 00:00:09+00', 2, 60000);
SELECT * FROM presence_rows('pres-room');
-- same `at`: the tie goes to the new write
SET a2.now = '2026-03-01 12:00:02+00';
SELECT a2_presence_set('pres-room', 'alice', '{"cursor": {"x": 3}}',
					   '2026-03-01 00:00:10+00', 3, 60000);
SELECT * FROM presence_rows('pres-room');
-- newer `at`: wins
SET a2.now = '2026-03-01 12:00:03+00';
SELECT a2_presence_set('pres-room', 'alice', '{"cursor": {"x": 4}}',
					   '2026-03-01 00:00:11+00', 4, 60000);
SELECT * FROM presence_rows('pres-room');
-- one write, decided field by field: at 00:00:10.5 is older than cursor's
-- 00:00:11 (cursor loses) and newer than name's 00:00:10 (name wins)
SET a2.now = '2026-03-01 12:00:04+00';
SELECT a2_presence_set('pres-room', 'alice', '{"cursor": {"x": 5}, "name": "Alicia"}',
					   '2026-03-01 00:00:10.5+00', 5, 60000);
SELECT * FROM presence_rows('pres-room');

--
-- 3. A null value deletes the field, under the same rule, and leaves a
-- tombstone that readers never see.
--
-- an older delete (00:00:10 < 00:00:10.5) loses: name stays
SELECT a2_presence_set('pres-room', 'alice', '{"name": null}',
					   '2026-03-01 00:00:10+00', 6, 60000);
SELECT * FROM presence_rows('pres-room');
-- a delete at the same `at` wins the tie: name is gone
SET a2.now = '2026-03-01 12:00:05+00';
SELECT a2_presence_set('pres-room', 'alice', '{"name": null}',
					   '2026-03-01 00:00:10.5+00', 7, 60000);
SELECT * FROM presence_rows('pres-room');
-- the tombstone is not a row of a2_presence (what a TypeScript reader lists)
SELECT count(*) AS name_rows_in_a2_presence FROM a2_presence
 WHERE ns = 'pres-room' AND participant = 'alice' AND field = 'name';
-- an older write arriving after the delete cannot bring the field back
SELECT a2_presence_set('pres-room', 'alice', '{"name": "Old"}',
					   '2026-03-01 00:00:10.4+00', 8, 60000);
SELECT * FROM presence_rows('pres-room');
SELECT count(*) AS name_rows_in_a2_presence FROM a2_presence
 WHERE ns = 'pres-room' AND participant = 'alice' AND field = 'name';
-- a newer write does
SET a2.now = '2026-03-01 12:00:06+00';
SELECT a2_presence_set('pres-room', 'alice', '{"name": "New"}',
					   '2026-03-01 00:00:12+00', 9, 60000);
SELECT * FROM presence_rows('pres-room');

-- Deleting a field that was never written still leaves a tombstone: the
-- older write it overtook (reordered in transit) loses when it arrives;
-- a write at the tombstone's own `at` wins the tie.
SELECT a2_presence_set('pres-room', 'bob', '{"status": null}',
					   '2026-03-01 00:00:20+00', 1, 60000);
SELECT a2_presence_set('pres-room', 'bob', '{"status": "away"}',
					   '2026-03-01 00:00:19+00', 2, 60000);
SELECT * FROM presence_rows('pres-room') WHERE participant = 'bob';
SELECT a2_presence_set('pres-room', 'bob', '{"status": "here"}',
					   '2026-03-01 00:00:20+00', 3, 60000);
SELECT * FROM presence_rows('pres-room') WHERE participant = 'bob';

--
-- 4. Tombstones expire like values: once expired, an older write is
-- accepted again.
--
SET a2.now = '2026-03-01 12:01:00+00';
SELECT a2_presence_set('pres-room', 'carol', '{"mood": "ok"}',
					   '2026-03-01 00:00:30+00', 1, 60000);
-- the tombstone lives 5 s: until 12:01:05
SELECT a2_presence_set('pres-room', 'carol', '{"mood": null}',
					   '2026-03-01 00:00:31+00', 2, 5000);
SET a2.now = '2026-03-01 12:01:04.999+00';
SELECT a2_presence_set('pres-room', 'carol', '{"mood": "stale"}',
					   '2026-03-01 00:00:30.5+00', 3, 60000);
SELECT * FROM presence_rows('pres-room') WHERE participant = 'carol';
SET a2.now = '2026-03-01 12:01:05+00';
SELECT a2_presence_set('pres-room', 'carol', '{"mood": "stale"}',
					   '2026-03-01 00:00:30.5+00', 4, 60000);
SELECT * FROM presence_rows('pres-room') WHERE participant = 'carol';

--
-- 5. Expiry runs on the store clock: expiresAt = a2.now + ttl_ms, whatever
-- `at` says (far past or far future), and a row is gone once
-- expires_at <= now.
--
SET a2.now = '2026-03-01 12:02:00+00';
SELECT a2_presence_set('pres-ttl', 'dave', '{"typing": true}',
					   '2020-01-01 00:00:00+00', 1, 1000);
SELECT a2_presence_set('pres-ttl', 'erin', '{"typing": true}',
					   '2030-01-01 00:00:00+00', 1, 1000);
-- ttl 0: expires at once
SELECT a2_presence_set('pres-ttl', 'fred', '{"typing": true}',
					   '2026-03-01 00:00:00+00', 1, 0);
SELECT * FROM presence_rows('pres-ttl');
SET a2.now = '2026-03-01 12:02:00.999+00';
SELECT participant FROM presence_rows('pres-ttl');
SET a2.now = '2026-03-01 12:02:01+00';
SELECT participant FROM presence_rows('pres-ttl');

-- An expired row is absent for last-writer-wins too: an older write
-- replaces it.
SET a2.now = '2026-03-01 12:03:00+00';
SELECT a2_presence_set('pres-ttl', 'gina', '{"x": "newer"}',
					   '2026-03-01 00:01:00+00', 1, 1000);
SET a2.now = '2026-03-01 12:03:02+00';
SELECT a2_presence_set('pres-ttl', 'gina', '{"x": "older"}',
					   '2026-03-01 00:00:59+00', 2, 1000);
SELECT * FROM presence_rows('pres-ttl');

--
-- 6. Reads list live rows ordered by participant, then field, whatever the
-- write order; values are any JSON but null.
--
SET a2.now = '2026-03-01 12:04:00+00';
SELECT a2_presence_set('pres-order', 'zoe', '{"b": 0, "a": false}',
					   '2026-03-01 00:00:00+00', 1, 60000);
SELECT a2_presence_set('pres-order', 'amy', '{"c": [1, "two"], "b": {"k": null}}',
					   '2026-03-01 00:00:00+00', 2, 60000);
SELECT a2_presence_set('pres-order', 'max', '{"a": "text"}',
					   '2026-03-01 00:00:00+00', 3, 60000);
SELECT a2_presence_set('pres-order', 'amy', '{"a": 1.5}',
					   '2026-03-01 00:00:00+00', 4, 60000);
SELECT * FROM presence_rows('pres-order');

--
-- 7. Namespaces are independent: same participant and field, separate
-- registers and separate tombstones.
--
SELECT a2_presence_set('pres-ns1', 'alice', '{"cursor": {"x": 1}}',
					   '2026-03-01 00:00:10+00', 1, 60000);
-- older than pres-ns1's value, but another namespace: written
SELECT a2_presence_set('pres-ns2', 'alice', '{"cursor": {"x": 2}}',
					   '2026-03-01 00:00:05+00', 2, 60000);
-- a delete in pres-ns1 leaves pres-ns2 alone ...
SELECT a2_presence_set('pres-ns1', 'alice', '{"cursor": null}',
					   '2026-03-01 00:00:20+00', 3, 60000);
-- ... and its tombstone does not block an older write in pres-ns2
SELECT a2_presence_set('pres-ns2', 'alice', '{"cursor": {"x": 3}}',
					   '2026-03-01 00:00:15+00', 4, 60000);
SELECT * FROM presence_rows('pres-ns1');
SELECT * FROM presence_rows('pres-ns2');
-- an unknown namespace reads []
SELECT a2_presence_read('pres-nobody');
-- no stored row of this file holds a null value (a TypeScript reader
-- lists every live a2_presence row)
SELECT count(*) AS null_rows FROM a2_presence WHERE ns LIKE 'pres-%' AND value = 'null';

--
-- 8. An empty values object is a no-op: no row written or refreshed.
--
CREATE TEMP TABLE pres_before AS SELECT * FROM a2_presence WHERE ns LIKE 'pres-%';
SET a2.now = '2026-03-01 12:04:30+00';
SELECT a2_presence_set('pres-order', 'amy', '{}', '2026-03-01 23:00:00+00', 99, 60000);
SELECT a2_presence_set('pres-empty', 'nobody', '{}', '2026-03-01 23:00:00+00', 99, 60000);
SELECT NOT EXISTS (
	(SELECT * FROM a2_presence WHERE ns LIKE 'pres-%' EXCEPT SELECT * FROM pres_before)
	UNION ALL
	(SELECT * FROM pres_before EXCEPT SELECT * FROM a2_presence WHERE ns LIKE 'pres-%')
) AS unchanged;
SELECT a2_presence_read('pres-empty');

--
-- 9. A read works in a READ ONLY transaction, where no sweep can run, and
-- still hides expired rows (gina's row in pres-ttl expired at 12:03:03 and
-- no read has run there since).
--
BEGIN READ ONLY;
SELECT * FROM presence_rows('pres-ttl');
SELECT participant, field, value FROM presence_rows('pres-order');
COMMIT;

DROP FUNCTION presence_rows(text);
