/*
 * test/matrix/fixture.sql
 *	  The starting state of every isolation-matrix case (test/matrix/matrix.py),
 *	  one call per session: matrix_fixture(sid).
 *
 *	  At 2026-01-01 00:00 (T0) session sid gets
 *	    idx 1  sid:e1  lane L  claimed by w0 at T0 for 60 s (attempt 1): the
 *	                           lease has expired by the time the cases run
 *	                           (01:00), so a claim takes it at attempt 2 and
 *	                           attempt 1 is stale
 *	    idx 2  sid:e2  lane L  behind e1, not lane-ready
 *	    idx 3  sid:d3          claimed and failed twice (max_failures 2):
 *	                           dead-lettered, for a2_redrive
 *	  a snapshot head of reducer r at index 2 and a history checkpoint at 1
 *	  that e1 pins, and in namespace sid:ns a live participant "p" and an
 *	  expired one "old" (the read's sweep deletes it; the cases write it).
 *	  a2.now is T0 during the call and the caller's value again afterwards.
 */
CREATE FUNCTION matrix_fixture(sid text) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t0 constant text := '2026-01-01T00:00:00.000Z';
	caller_now text := current_setting('a2.now', true);
BEGIN
	PERFORM set_config('a2.now', t0, true);
	PERFORM a2_append(sid, jsonb_build_array(
		jsonb_build_object('id', sid || ':e1', 'type', 't', 'lane', 'L'),
		jsonb_build_object('id', sid || ':e2', 'type', 't', 'lane', 'L'),
		jsonb_build_object('id', sid || ':d3', 'type', 't')));
	PERFORM a2_claim(sid, 'w0', 60000);				-- idx 1 and 3, attempt 1
	PERFORM a2_fail(sid, 3, 1, 'boom', 2);
	PERFORM a2_claim(sid, 'w0', 60000);				-- idx 3, attempt 2
	PERFORM a2_fail(sid, 3, 2, 'boom', 2);			-- dead-lettered
	PERFORM a2_put_snapshots(sid, 'r', '[{"index": 1, "state": {"n": 1}, "pinEventIndexes": [1]},
										 {"index": 2, "state": {"n": 2}}]');
	PERFORM a2_presence_set(sid || ':ns', 'p', '{"f": 0}', t0::timestamptz, 1, 86400000);
	PERFORM a2_presence_set(sid || ':ns', 'old', '{"f": 0}', t0::timestamptz, 1, 1000);
	PERFORM set_config('a2.now', COALESCE(caller_now, ''), true);
END $$;

/*
 * A case's fixture is a copy of one built through a2 (matrix_fixture) for
 * the template session "@tpl": matrix_prepare() builds it once, and
 * matrix_setup(sids) copies its rows for each session id (ids and
 * namespaces follow), which costs a few inserts instead of nine a2 calls.
 */
CREATE FUNCTION matrix_prepare() RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	t text;
BEGIN
	PERFORM matrix_clear();
	PERFORM matrix_fixture('@tpl');
	FOREACH t IN ARRAY matrix_tables() LOOP
		EXECUTE format('DROP TABLE IF EXISTS %I', 'matrix_tpl_' || t);
		EXECUTE format('CREATE TABLE %I AS SELECT * FROM %I', 'matrix_tpl_' || t, t);
	END LOOP;
	PERFORM matrix_clear();
END $$;

-- Static statements (planned once per connection); through each row's text
-- form, so every column is copied whatever its type.
CREATE FUNCTION matrix_setup(sids text[]) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO a2_events SELECT (replace(x::text, '@tpl', s)::a2_events).*
	  FROM matrix_tpl_a2_events x, unnest(sids) s;
	INSERT INTO a2_snapshots SELECT (replace(x::text, '@tpl', s)::a2_snapshots).*
	  FROM matrix_tpl_a2_snapshots x, unnest(sids) s;
	INSERT INTO a2_snapshot_history SELECT (replace(x::text, '@tpl', s)::a2_snapshot_history).*
	  FROM matrix_tpl_a2_snapshot_history x, unnest(sids) s;
	INSERT INTO a2_snapshot_pins SELECT (replace(x::text, '@tpl', s)::a2_snapshot_pins).*
	  FROM matrix_tpl_a2_snapshot_pins x, unnest(sids) s;
	INSERT INTO a2_presence SELECT (replace(x::text, '@tpl', s)::a2_presence).*
	  FROM matrix_tpl_a2_presence x, unnest(sids) s;
	INSERT INTO a2_presence_tombstones SELECT (replace(x::text, '@tpl', s)::a2_presence_tombstones).*
	  FROM matrix_tpl_a2_presence_tombstones x, unnest(sids) s;
	INSERT INTO a2_retired_sessions SELECT (replace(x::text, '@tpl', s)::a2_retired_sessions).*
	  FROM matrix_tpl_a2_retired_sessions x, unnest(sids) s;
END $$;

CREATE FUNCTION matrix_tables() RETURNS text[]
LANGUAGE sql IMMUTABLE AS $$
SELECT ARRAY['a2_events', 'a2_snapshots', 'a2_snapshot_history', 'a2_snapshot_pins',
			 'a2_presence', 'a2_presence_tombstones', 'a2_retired_sessions']
$$;

/*
 * The state of the given sessions (and their namespaces) as one json text,
 * every table in key order: what a case left behind.  Presence rows and
 * tombstones that have expired at live_at (epoch ms) are left out: they
 * count as absent everywhere, and whether a read has swept them yet is not
 * part of the contract.
 */
CREATE FUNCTION matrix_state(sids text[], live_at bigint) RETURNS text
LANGUAGE plpgsql AS $$
BEGIN
	RETURN jsonb_build_object(
	'events', (SELECT jsonb_agg(to_jsonb(e) ORDER BY e.session_id, e.idx)
				 FROM a2_events e WHERE e.session_id = ANY (sids)),
	'heads', (SELECT jsonb_agg(to_jsonb(s) ORDER BY s.session_id, s.reducer_name)
				FROM a2_snapshots s WHERE s.session_id = ANY (sids)),
	'history', (SELECT jsonb_agg(to_jsonb(h) ORDER BY h.session_id, h.reducer_name, h.up_to_index)
				  FROM a2_snapshot_history h WHERE h.session_id = ANY (sids)),
	'pins', (SELECT jsonb_agg(to_jsonb(p) ORDER BY p.session_id, p.event_index, p.reducer_name, p.up_to_index)
			   FROM a2_snapshot_pins p WHERE p.session_id = ANY (sids)),
	'presence', (SELECT jsonb_agg(to_jsonb(p) ORDER BY p.ns, p.participant, p.field)
				   FROM a2_presence p
				  WHERE p.ns IN (SELECT s || ':ns' FROM unnest(sids) s) AND p.expires_at > live_at),
	'tombstones', (SELECT jsonb_agg(to_jsonb(t) ORDER BY t.ns, t.participant, t.field)
					 FROM a2_presence_tombstones t
					WHERE t.ns IN (SELECT s || ':ns' FROM unnest(sids) s) AND t.expires_at > live_at),
	'retired', (SELECT jsonb_agg(jsonb_build_object('session_id', r.session_id, 'last_index', r.last_index)
								 ORDER BY r.session_id)
				  FROM a2_retired_sessions r WHERE r.session_id = ANY (sids)))::text;
END $$;

-- Empty every a2 table between cases (each case starts from its fixture).
CREATE FUNCTION matrix_clear() RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	DELETE FROM a2_events;
	DELETE FROM a2_snapshots;
	DELETE FROM a2_snapshot_history;
	DELETE FROM a2_snapshot_pins;
	DELETE FROM a2_presence;
	DELETE FROM a2_presence_tombstones;
	DELETE FROM a2_retired_sessions;
END $$;
