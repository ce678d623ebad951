/*
 * test/reentry/check.sql
 *	  What the triggers of test/reentry/setup.sql did must be exactly what
 *	  a2 did, in the same transactions.  Not run on its own:
 *	  test/stress/invariants.sql includes it, after the store's invariants,
 *	  when the database has app.audit (test/suites/25-reentrancy.sh runs
 *	  that file after test/reentry/driver.py), and reports its checks with
 *	  the rest, each named "reentry: ...".
 *
 *	  Each check is one pg_temp.check_invariant(name, query of the
 *	  violations, one text row each) call; invariants.sql counts, prints
 *	  and fails on them.
 *
 *	  Worker sessions are a<k>-s<j> (audit workers: the bare-name audit
 *	  insert ran) and p<k>-s<j>; the nested calls write the mirrors fan:<s>
 *	  and fan:<ns>.
 */

-- The bare-name insert ran with the caller's search_path ------------------

SELECT pg_temp.check_invariant('reentry: every audit row saw the caller''s search_path (app, public)',
$q$ SELECT format('%s %s at depth %s saw %L', tbl, op, depth, search_path)
	  FROM app.audit WHERE replace(search_path, ' ', '') <> 'app,public' $q$);

SELECT pg_temp.check_invariant('reentry: each a2_events row of an audit session has exactly one INSERT audit row',
$q$ SELECT format('%s/%s (%s): %s audit rows', e.session_id, e.idx, e.event_id, count(a.id))
	  FROM a2_events e
	  LEFT JOIN app.audit a ON a.tbl = 'a2_events' AND a.op = 'INSERT'
					   AND a.key = e.session_id AND a.event_id = e.event_id AND a.idx = e.idx
	 WHERE e.session_id ~ '^(fan:)?a[0-9]+-s'
	 GROUP BY e.session_id, e.idx, e.event_id
	HAVING count(a.id) <> 1 $q$);

SELECT pg_temp.check_invariant('reentry: an audited a2_events insert whose row is gone was audited as deleted',
$q$ SELECT format('%s/%s (%s) inserted, not stored, no DELETE row', a.key, a.idx, a.event_id)
	  FROM app.audit a
	 WHERE a.tbl = 'a2_events' AND a.op = 'INSERT'
	   AND NOT EXISTS (SELECT 1 FROM a2_events e WHERE e.event_id = a.event_id)
	   AND NOT EXISTS (SELECT 1 FROM app.audit d WHERE d.tbl = 'a2_events' AND d.op = 'DELETE'
						  AND d.event_id = a.event_id AND d.xid >= a.xid) $q$);

-- Depth 1: the worker's call wrote the row; depth 2: a nested call did (the
-- mirrors' snapshots pin nothing, so they write no history and no pins).
SELECT pg_temp.check_invariant('reentry: the audit trigger wrote rows for every a2 table the workload writes (depth 1) and the nested calls write (depth 2)',
$q$ SELECT format('%s at depth %s: no audit row', t, d)
	  FROM (VALUES ('a2_events', 2), ('a2_snapshots', 2), ('a2_snapshot_history', 1),
				   ('a2_snapshot_pins', 1), ('a2_presence', 2), ('a2_presence_tombstones', 2),
				   ('a2_retired_sessions', 2)) w(t, deepest),
		   generate_series(1, deepest) d
	 WHERE NOT EXISTS (SELECT 1 FROM app.audit a WHERE a.tbl = t AND a.op !~ '^STATEMENT' AND a.depth = d) $q$);

SELECT pg_temp.check_invariant('reentry: statement-level audit rows exist for a2_events inserts and updates',
$q$ SELECT format('no %s row', o)
	  FROM unnest(ARRAY['STATEMENT_INSERT', 'STATEMENT_UPDATE', 'STATEMENT_DELETE']) o
	 WHERE NOT EXISTS (SELECT 1 FROM app.audit a WHERE a.tbl = 'a2_events' AND a.op = o) $q$);

-- The nested a2 calls did their part, atomically with the outer one -------

SELECT pg_temp.check_invariant('reentry: every worker event has its mirror fan:<id> at the same index of fan:<session>',
$q$ SELECT format('%s/%s (%s): mirror %s', e.session_id, e.idx, e.event_id,
				  COALESCE(m.session_id || '/' || m.idx, 'missing'))
	  FROM a2_events e
	  LEFT JOIN a2_events m ON m.event_id = 'fan:' || e.event_id
	 WHERE e.session_id !~ '^fan:'
	   AND (m.event_id IS NULL OR m.session_id <> 'fan:' || e.session_id OR m.idx <> e.idx) $q$);

SELECT pg_temp.check_invariant('reentry: every mirror event has its origin',
$q$ SELECT format('%s/%s (%s): no origin', m.session_id, m.idx, m.event_id)
	  FROM a2_events m
	 WHERE m.session_id ~ '^fan:'
	   AND NOT EXISTS (SELECT 1 FROM a2_events e
						WHERE 'fan:' || e.event_id = m.event_id
						  AND 'fan:' || e.session_id = m.session_id AND e.idx = m.idx) $q$);

SELECT pg_temp.check_invariant('reentry: no mirror of a mirror (the depth guard held)',
$q$ SELECT format('%s/%s', session_id, idx) FROM a2_events WHERE session_id ~ '^fan:fan:'
	 UNION ALL SELECT format('snapshot %s', session_id) FROM a2_snapshots WHERE session_id ~ '^fan:fan:'
	 UNION ALL SELECT format('presence %s', ns) FROM a2_presence WHERE ns ~ '^fan:fan:' $q$);

SELECT pg_temp.check_invariant('reentry: every worker snapshot head has a mirror head at the same index',
$q$ SELECT format('%s %s head %s: mirror %s', s.session_id, s.reducer_name, s.up_to_index,
				  COALESCE(m.up_to_index::text, 'missing'))
	  FROM a2_snapshots s
	  LEFT JOIN a2_snapshots m ON m.session_id = 'fan:' || s.session_id
							  AND m.reducer_name = s.reducer_name
	 WHERE s.session_id !~ '^fan:' AND m.up_to_index IS DISTINCT FROM s.up_to_index $q$);

SELECT pg_temp.check_invariant('reentry: every live worker presence field has its mirror with the same value and time',
$q$ SELECT format('%s %s %s = %s at %s: mirror %s at %s', p.ns, p.participant, p.field, p.value, p.at,
				  m.value, m.at)
	  FROM a2_presence p
	  LEFT JOIN a2_presence m ON m.ns = 'fan:' || p.ns AND m.participant = p.participant
							 AND m.field = p.field
	 WHERE p.ns !~ '^fan:' AND (m.value IS DISTINCT FROM p.value OR m.at IS DISTINCT FROM p.at) $q$);

SELECT pg_temp.check_invariant('reentry: the mirrors were claimed and completed inside the triggers (some mirror event is processed)',
$q$ SELECT 'no processed mirror event'
	 WHERE NOT EXISTS (SELECT 1 FROM a2_events WHERE session_id ~ '^fan:' AND processed_at IS NOT NULL) $q$);

-- Maintenance left nothing behind ------------------------------------------

SELECT pg_temp.check_invariant('reentry: no a2 table keeps the column the DDL thread added',
$q$ SELECT format('%s.%s', attrelid::regclass, attname)
	  FROM pg_attribute WHERE attname = 'reentry_extra' AND NOT attisdropped $q$);

SELECT pg_temp.check_invariant('reentry: every index of an a2 table is valid (no REINDEX CONCURRENTLY leftovers)',
$q$ SELECT format('%s on %s', i.indexrelid::regclass, i.indrelid::regclass)
	  FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid
	 WHERE c.relname ~ '^a2_' AND c.relnamespace = 'public'::regnamespace
	   AND (NOT i.indisvalid OR NOT i.indisready) $q$);
