# shellcheck shell=bash
#
# test/lib/a2-data.sh: a database full of a2 state, its fingerprint, and
# the protocol run on it afterwards.  Sourced (not run) by the suites that
# move a2 data somewhere and check that it arrived: 50-dump-restore.sh
# (pg_dump/pg_restore) and test/versions/cross-version.sh (pg_upgrade and
# dump/restore across server versions).  Uses psql from PATH and the PG*
# connection settings of the caller.
#
#   a2_fill DB [CREATE EXTENSION clause]   create a2 in DB and fill it
#   a2_fingerprint DB                      "table rows md5" per a2 table
#   a2_protocol_checks DB                  "ok - ..." / "not ok - ..." lines

# Fill database $1; $2 = schema clause for CREATE EXTENSION.
a2_fill() {
	psql -X -q -v ON_ERROR_STOP=1 -d "$1" <<EOF
CREATE SCHEMA IF NOT EXISTS a2_elsewhere;
CREATE EXTENSION a2 ${2:-};
SELECT set_config('search_path', n.nspname || ', public', false)
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'a2' \gset
SET a2.now = '2026-05-01 00:00:00+00';
DO \$\$
DECLARE
	r jsonb;
BEGIN
	-- d:s1: lanes, a settled event, processed, failed, dead-lettered, leased
	r := a2_append('d:s1', '[{"id":"d:1","type":"a","payload":{"n":1}},{"id":"d:2","type":"b","lane":"L"},
							 {"id":"d:3","type":"c","lane":"L"},{"id":"d:4","type":"d","settled":true},
							 {"id":"d:5","type":"e","lane":"M"},{"id":"d:6","type":"f","lane":"M"},
							 {"id":"d:7","type":"g","payload":[1,2.50,"x\\\\y",null,{"deep":{"er":[true]}}]}]');
	r := a2_claim('d:s1', 'w1', 60000);
	ASSERT jsonb_path_query_array(r, '\$.events[*].index') = '[1, 2, 5, 7]', r::text;
	r := a2_complete('d:s1', 1, 1, '[{"id":"d:1c","type":"child","payload":"done"}]');
	r := a2_complete('d:s1', 2, 1);                   -- promotes 3 in lane L
	r := a2_fail('d:s1', 5, 1, 'fatal', 1);           -- dead-letters 5, lane M stays blocked
	r := a2_fail('d:s1', 7, 1, 'retry me', 5);        -- failed once, re-claimable
	r := a2_claim('d:s1', 'w2', 60000);               -- 3, 7 (attempt 2), 8
	ASSERT jsonb_path_query_array(r, '\$.events[*].index') = '[3, 7, 8]', r::text;

	-- d:s2: snapshots with a head, history rows and pins
	r := a2_append('d:s2', '[{"id":"d:21","type":"a"},{"id":"d:22","type":"b"},{"id":"d:23","type":"c"}]');
	PERFORM a2_put_snapshots('d:s2', 'r1', '[{"index":1,"state":{"n":1},"pinEventIndexes":[2,3]}]');
	PERFORM a2_put_snapshots('d:s2', 'r1', '[{"index":2,"state":{"n":2},"pinEventIndexes":[3]},{"index":0,"state":{"n":0},"pinEventIndexes":[3]}]');
	PERFORM a2_put_snapshots('d:s2', 'r2', '[{"index":3,"state":"three"}]');
	r := a2_claim('d:s2', 'w1', 60000);

	-- d:s3: a child appended under the fence, with batchSize
	r := a2_append('d:s3', '[{"id":"d:31","type":"a"}]');
	r := a2_claim('d:s3', 'w3', 1000);
	r := a2_append('d:s3', '[{"id":"d:32","type":"b","cause":{"index":1,"attempt":1,"batchSize":2}}]');

	-- awkward names
	r := a2_append('d:ü😀 ' || chr(1) || '''"\\', '[{"type":"ü","lane":"é😀"}]');
	r := a2_append(repeat('s', 1024), jsonb_build_array(jsonb_build_object('type', 't', 'id', repeat('i', 1024))));

	-- presence: values, a deleted field (tombstone), another participant
	PERFORM a2_presence_set('d:ns', 'p1', '{"status":"on","cursor":1}', '2026-05-01 00:00:00+00', 1, 3600000);
	PERFORM a2_presence_set('d:ns', 'p1', '{"cursor":null}', '2026-05-01 00:00:10+00', 2, 3600000);
	PERFORM a2_presence_set('d:ns', 'p2', '{"status":{"away":true}}', '2026-05-01 00:00:05+00', 7, 3600000);

	-- a recurring schedule (0.4.0 on), paused so that no scheduler fires it meanwhile
	IF to_regproc('a2_schedule') IS NOT NULL THEN
		PERFORM a2_schedule('d:sched', '0 9 * * mon-fri', 'd:s4', '{"type":"standup","payload":{"n":1}}',
							'{"timezone":"Europe/Berlin","missed":"backfill","paused":true}');
	END IF;
END \$\$;
SELECT 'rows: ' || (SELECT count(*) FROM a2_events) || ' events, '
	|| (SELECT count(*) FROM a2_snapshots) || ' snapshots, '
	|| (SELECT count(*) FROM a2_snapshot_history) || ' history, '
	|| (SELECT count(*) FROM a2_snapshot_pins) || ' pins, '
	|| (SELECT count(*) FROM a2_presence) || ' presence, '
	|| (SELECT count(*) FROM a2_presence_tombstones) || ' tombstones' AS summary \gset
\echo :summary
EOF
}

# Per a2 table: name, row count and an md5 of every row in a fixed order.
a2_fingerprint() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" <<'EOF'
DO $$
DECLARE
	t record;
	n bigint;
	h text;
BEGIN
	CREATE TEMP TABLE fp (tbl text, n bigint, h text);
	FOR t IN SELECT c.oid::regclass AS rel, c.relname
			   FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
			  WHERE d.classid = 'pg_class'::regclass AND d.refclassid = 'pg_extension'::regclass
				AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
				AND d.deptype = 'e' AND c.relkind = 'r'
			  ORDER BY c.relname LOOP
		EXECUTE format($q$SELECT count(*), md5(coalesce(string_agg(x::text, '|' ORDER BY x::text COLLATE "C"), ''))
							 FROM %s AS x$q$, t.rel) INTO n, h;
		INSERT INTO fp VALUES (t.relname, n, h);
	END LOOP;
END $$;
SELECT tbl || ' ' || n || ' ' || h FROM fp ORDER BY tbl;
EOF
}

# The protocol on restored data.  Prints one "ok"/"not ok" line per check.
a2_protocol_checks() {
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" <<'EOF'
SELECT set_config('search_path', n.nspname || ', public', false)
  FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace WHERE e.extname = 'a2' \gset
SET a2.now = '2026-05-01 00:00:30+00';
CREATE TEMP TABLE checks (n serial, label text, ok boolean);
CREATE FUNCTION pg_temp.chk(label text, ok boolean) RETURNS void LANGUAGE sql
	AS $$ INSERT INTO checks (label, ok) VALUES (label, coalesce(ok, false)) $$;
-- the SQLSTATE a statement raises, or 'ok'
CREATE FUNCTION pg_temp.outcome(sql text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END $$;
\o /dev/null

SELECT pg_temp.chk('append continues at the next index',
	jsonb_path_query_array(a2_append('d:s1', '[{"id":"d:9","type":"new"},{"id":"d:10","type":"new2","lane":"L"}]'), '$.events[*].index') = '[9, 10]');
SELECT pg_temp.chk('the new lane-L event waits behind the restored unprocessed one',
	NOT (SELECT lane_ready FROM a2_events WHERE session_id = 'd:s1' AND idx = 10));
SELECT pg_temp.chk('replaying a batch stored before the dump returns it',
	jsonb_path_query_array(a2_append('d:s2', '[{"id":"d:21","type":"a"},{"id":"d:22","type":"b"},{"id":"d:23","type":"c"}]'), '$.events[*].index') = '[1, 2, 3]');
SELECT pg_temp.chk('... and writes nothing', (SELECT count(*) FROM a2_events WHERE session_id = 'd:s2') = 3);
SELECT pg_temp.chk('an id stored before the dump is still taken in every session',
	pg_temp.outcome($$SELECT a2_append('d:other', '[{"id":"d:1","type":"a"}]')$$) = 'Z2001');
SELECT pg_temp.chk('claim takes only the new event: not the leased ones, nothing behind the dead letter of lane M',
	jsonb_path_query_array(a2_claim('d:s1', 'w4', 60000), '$.events[*].index') = '[9]');
SELECT pg_temp.chk('claim reports busy until the restored leases expire',
	a2_claim('d:s1', 'w4', 60000) = '{"outcome": "busy", "retryAt": "2026-05-01T00:01:00.000Z"}');
SELECT pg_temp.chk('leases taken before the dump are renewed for their holder',
	a2_renew('d:s1', 'w2', '[{"index":3,"attempt":1},{"index":7,"attempt":2},{"index":8,"attempt":1}]', 60000)
	= '{"renewed": [3, 7, 8], "superseded": []}');
SELECT pg_temp.chk('a stale attempt is reported superseded',
	a2_renew('d:s1', 'w2', '[{"index":7,"attempt":1}]', 60000) = '{"renewed": [], "superseded": [7]}');
SELECT pg_temp.chk('complete of an attempt leased before the dump',
	a2_complete('d:s1', 3, 1, '[{"id":"d:3c","type":"child"}]')->'events'->0
	@> '{"index": 11, "cause": {"index": 3, "attempt": 1}}');
SELECT pg_temp.chk('completing it promoted the next event of lane L',
	(SELECT lane_ready FROM a2_events WHERE session_id = 'd:s1' AND idx = 10));
SELECT pg_temp.chk('completing a stale attempt is superseded',
	a2_complete('d:s1', 7, 1) = '{"outcome": "superseded"}');
SELECT pg_temp.chk('fail counts on top of the restored failure count',
	a2_fail('d:s1', 7, 2, 'again', 5) = '{"outcome": "failed", "failureCount": 2}');
SELECT pg_temp.chk('the dead-lettered event stays dead-lettered',
	a2_fail('d:s1', 5, 1, 'x', 1) = '{"outcome": "dead_lettered", "failureCount": 1}');
SELECT pg_temp.chk('the append fence sees restored attempts',
	pg_temp.outcome($$SELECT a2_append('d:s3', '[{"type":"late","cause":{"index":1,"attempt":2}}]')$$) = 'Z2002');
SELECT pg_temp.chk('a restored completion is replayed idempotently',
	a2_complete('d:s1', 1, 1, '[{"id":"d:1c","type":"child","payload":"done"}]')->'events'->0->>'index' = '8');
SELECT pg_temp.chk('read_state: the restored head',
	a2_read_state('d:s2', 'r1') = '{"headIndex": 2, "snapshot": {"index": 2, "state": {"n": 2}}, "events": [{"id": "d:23", "type": "c", "index": 3, "payload": null, "createdAt": "2026-05-01T00:00:00.000Z", "sessionId": "d:s2"}]}');
SELECT pg_temp.chk('read_state: restored history rows at 1 and 0',
	jsonb_path_query_array(a2_read_states('[{"sessionId":"d:s2","snapshotThroughIndex":1},{"sessionId":"d:s2","snapshotThroughIndex":0}]', 'r1'),
						   '$[*].snapshot.index') = '[1, 0]');
SELECT pg_temp.chk('complete an event that pins restored checkpoints',
	a2_complete('d:s2', 3, 1)->>'outcome' = 'completed');
SELECT pg_temp.chk('... released its pins and collected history 0 only, which only it pinned',
	(SELECT jsonb_agg(up_to_index ORDER BY up_to_index) FROM a2_snapshot_history WHERE session_id = 'd:s2') = '[1]'
	AND (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'd:s2' AND event_index = 3) = 0);
SELECT pg_temp.chk('presence: the restored live fields',
	jsonb_path_query_array(a2_presence_read('d:ns'), '$[*].participant') = '["p1", "p2"]'
	AND jsonb_path_query_array(a2_presence_read('d:ns'), '$[*].field') = '["status", "status"]');
SELECT a2_presence_set('d:ns', 'p1', '{"cursor":99}', '2026-05-01 00:00:05+00', 3, 3600000);
SELECT pg_temp.chk('presence: the restored tombstone still beats an older write',
	NOT a2_presence_read('d:ns') @> '[{"field":"cursor"}]');
SELECT a2_presence_set('d:ns', 'p1', '{"cursor":100}', '2026-05-01 00:00:20+00', 4, 3600000);
SELECT pg_temp.chk('presence: a newer write wins over the tombstone',
	a2_presence_read('d:ns') @> '[{"participant":"p1","field":"cursor","value":100}]');
SELECT pg_temp.chk('awkward session names survive',
	a2_read('d:ü😀 ' || chr(1) || '''"\')->0->>'lane' = 'é😀'
	AND a2_read(repeat('s', 1024))->0->>'id' = repeat('i', 1024));

\o
SELECT CASE WHEN ok THEN 'ok - ' ELSE 'not ok - ' END || label FROM checks ORDER BY n;
EOF
}
