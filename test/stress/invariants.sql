/*
 * test/stress/invariants.sql
 *	  Check the a2 store in the current database against the invariants the
 *	  contract (SPEC.md) implies, after any workload, crash or restore.
 *
 *	    psql -X -v ON_ERROR_STOP=1 -f test/stress/invariants.sql DBNAME
 *
 *	  Prints one row per invariant with its violation count and a sample of
 *	  the violating rows, then the workload's outcome counts when the stress
 *	  driver's tables (test/stress/setup.sql) are present, and fails (psql
 *	  exits 3) when any invariant is violated.
 *
 *	  Optional psql variable: max_failures (default 2), the max_failures
 *	  every a2_fail call of the workload used.
 *
 *	  With the driver's tables, it also holds the store to what the clients
 *	  saw commit (stress_seen, stress_attempts, stress_finished) and, for the
 *	  crash suite, to the client-side logs loaded into crash_client_log and
 *	  crash_client_done.  With app.audit (test/reentry/setup.sql) it also
 *	  runs the re-entrancy suite's checks, test/reentry/check.sql.
 *
 *	  The one place that counts, prints and fails on invariants: the
 *	  stress, crash, re-entrancy and Citus suites run this file, and
 *	  test/matrix/matrix.py reads the checks that need no workload tables
 *	  (those before the first \if that tests for them; it finds that line
 *	  by its text, so no comment above it may quote it).
 */
\set ON_ERROR_STOP 1
\set QUIET 1
\pset footer off
\if :{?max_failures}
\else
\set max_failures 2
\endif

SELECT to_regclass('stress_seen') IS NOT NULL AS have_stress,
	   to_regclass('stress_retire_seen') IS NOT NULL AS have_retire,
	   to_regclass('crash_client_log') IS NOT NULL AS have_crash_log,
	   to_regclass('app.audit') IS NOT NULL AS have_reentry
\gset

CREATE TEMP TABLE a2_invariant (
	id			serial,
	invariant	text	NOT NULL,
	violations	bigint	NOT NULL,
	sample		text
);

-- Record one invariant: its name and the query of its violations, each
-- violation one text row.
CREATE FUNCTION pg_temp.check_invariant(name text, violations_query text)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	n bigint;
	sample text;
BEGIN
	EXECUTE format('SELECT count(*), string_agg(v, E''\n'') FILTER (WHERE rn <= 3)'
				   '  FROM (SELECT v, row_number() OVER () AS rn FROM (%s) q(v)) x',
				   violations_query)
	   INTO n, sample;
	INSERT INTO a2_invariant (invariant, violations, sample) VALUES (name, n, sample);
END $$;

-- Each check_invariant() call prints nothing of interest.
\o /dev/null

-- Events ------------------------------------------------------------------

-- A dropped session (a2_drop_session) starts again after its high-water
-- mark in a2_retired_sessions; one never dropped starts at 1.
SELECT pg_temp.check_invariant('indexes are exactly mark+1..max per session (mark 0 if never dropped)',
$q$ SELECT format('session %s: %s events, indexes %s..%s, mark %s', e.session_id, count(*),
				  min(e.idx), max(e.idx), COALESCE(min(r.last_index), 0))
	  FROM a2_events e LEFT JOIN a2_retired_sessions r ON r.session_id = e.session_id
	 GROUP BY e.session_id
	HAVING min(e.idx) <> COALESCE(min(r.last_index), 0) + 1
		OR max(e.idx) - min(e.idx) + 1 <> count(*) $q$);

SELECT pg_temp.check_invariant('no index at or below a dropped session''s high-water mark is reused',
$q$ SELECT format('%s/%s stored, mark %s', e.session_id, e.idx, r.last_index)
	  FROM a2_events e JOIN a2_retired_sessions r ON r.session_id = e.session_id
	 WHERE e.idx <= r.last_index $q$);

SELECT pg_temp.check_invariant('event ids are unique',
$q$ SELECT format('id %s stored %s times', event_id, count(*))
	  FROM a2_events GROUP BY event_id HAVING count(*) > 1 $q$);

SELECT pg_temp.check_invariant('processed_by_attempt <= attempt_count',
$q$ SELECT format('%s/%s processed by attempt %s of %s', session_id, idx,
				  processed_by_attempt, attempt_count)
	  FROM a2_events
	 WHERE processed_by_attempt < 1 OR processed_by_attempt > attempt_count $q$);

-- Nothing claims a processed event, so its completing attempt stays the
-- last one handed out.
SELECT pg_temp.check_invariant('completed events were completed by their last attempt',
$q$ SELECT format('%s/%s processed by attempt %s, attempt_count %s', session_id, idx,
				  processed_by_attempt, attempt_count)
	  FROM a2_events
	 WHERE processed_by_attempt <> attempt_count $q$);

SELECT pg_temp.check_invariant('settled events: null processed_by_attempt, never claimed',
$q$ SELECT format('%s/%s processed_at %s, processed_by_attempt %s, attempt_count %s, returned %s',
				  session_id, idx, processed_at, processed_by_attempt, attempt_count,
				  returned_event_ids)
	  FROM a2_events
	 WHERE (processed_at IS NULL AND (processed_by_attempt IS NOT NULL
									  OR returned_event_ids IS NOT NULL))
		OR (processed_at IS NOT NULL AND processed_by_attempt IS NULL
			AND (attempt_count <> 0 OR returned_event_ids IS NOT NULL)
			AND (to_jsonb(a2_events) ->> 'cancelled_at') IS NULL)
		OR (processed_by_attempt IS NOT NULL AND returned_event_ids IS NULL) $q$);

-- a2_cancel (0.4.0): a cancelled event is finished by no attempt, at its
-- cancel time, and never completed afterwards.  Read through to_jsonb so
-- that the check runs on objects without the column too.
SELECT pg_temp.check_invariant('never a cancelled event processed (no attempt, no children, processed at the cancel)',
$q$ SELECT format('%s/%s cancelled_at %s, processed_at %s, processed_by_attempt %s, returned %s',
				  session_id, idx, to_jsonb(a2_events) ->> 'cancelled_at', processed_at,
				  processed_by_attempt, returned_event_ids)
	  FROM a2_events
	 WHERE (to_jsonb(a2_events) ->> 'cancelled_at') IS NOT NULL
	   AND (processed_by_attempt IS NOT NULL OR returned_event_ids IS NOT NULL
			OR processed_at IS DISTINCT FROM (to_jsonb(a2_events) ->> 'cancelled_at')::bigint) $q$);

SELECT pg_temp.check_invariant('no event both processed and dead-lettered',
$q$ SELECT format('%s/%s processed_at %s, failed_at %s', session_id, idx, processed_at, failed_at)
	  FROM a2_events
	 WHERE processed_at IS NOT NULL AND failed_at IS NOT NULL
	   -- a cancelled dead letter keeps its failed_at (docs/semantics.md, "Cancel")
	   AND (to_jsonb(a2_events) ->> 'cancelled_at') IS NULL $q$);

SELECT pg_temp.check_invariant('finished events hold no lease; lease fields go together',
$q$ SELECT format('%s/%s processed_at %s, failed_at %s, holder %s, expires %s', session_id, idx,
				  processed_at, failed_at, claim_holder, claim_expires_at)
	  FROM a2_events
	 WHERE ((processed_at IS NOT NULL OR failed_at IS NOT NULL)
			AND (claim_holder IS NOT NULL OR claim_expires_at IS NOT NULL))
		OR (claim_holder IS NULL) <> (claim_expires_at IS NULL) $q$);

-- A redrive (a2_redrive) resets failure_count to 0 and keeps the last
-- failure's fields, so only "failures imply a last failure" holds.
SELECT pg_temp.check_invariant('attempt and failure bookkeeping agree',
$q$ SELECT format('%s/%s attempts %s, failures %s, last failed attempt %s, first/last claimed %s/%s, failed_at %s',
				  session_id, idx, attempt_count, failure_count, last_failed_attempt,
				  first_claimed_at, last_claimed_at, failed_at)
	  FROM a2_events
	 WHERE failure_count > attempt_count
		OR last_failed_attempt > attempt_count
		OR (attempt_count = 0) <> (first_claimed_at IS NULL)
		OR (attempt_count = 0) <> (last_claimed_at IS NULL)
		OR (failure_count > 0 AND last_failed_attempt IS NULL)
		OR (last_failed_attempt IS NULL) <> (last_failed_at IS NULL) $q$);

SELECT pg_temp.check_invariant(format('dead-lettered exactly at max_failures (%s)', :'max_failures'),
format($q$ SELECT format('%%s/%%s failure_count %%s, failed_at %%s', session_id, idx,
						 failure_count, failed_at)
			 FROM a2_events
			WHERE (failed_at IS NOT NULL) <> (failure_count >= %s)
			   OR failure_count > %s
			   OR (failed_at IS NOT NULL AND failed_at IS DISTINCT FROM last_failed_at) $q$,
	   :'max_failures'::integer, :'max_failures'::integer));

-- Scheduling (SPEC 7.1) -----------------------------------------------------

-- A claim needs not_before <= now, and last_claimed_at is that claim's
-- now.  Only a2_fail with retry_after_ms moves not_before after a claim
-- (and a2_redrive clears it), so unless the current attempt is the one
-- that failed last, the last claim came after the last change of
-- not_before and must not precede it.  (The clock a2 uses need not be
-- monotonic across callers, a2.now; this holds all the same, since each
-- claim compares with its own now.)
SELECT pg_temp.check_invariant('no event was last claimed before its not_before',
$q$ SELECT format('%s/%s not_before %s, last claimed %s (attempt %s, last failed attempt %s)',
				  session_id, idx, not_before, last_claimed_at, attempt_count, last_failed_attempt)
	  FROM a2_events
	 WHERE not_before IS NOT NULL AND attempt_count > 0
	   AND last_claimed_at < not_before
	   AND last_failed_attempt IS DISTINCT FROM attempt_count $q$);

-- Durable waits (docs/semantics.md, "Waits"): a claimed event that waited
-- was ended by a later event of an awaited type of its session, appended
-- before its timeout, or was claimed at or after its timeout (each claim
-- compares with its own now).  A wait without timeout is never claimed
-- without its result.  (Read through to_jsonb, so that the check also
-- runs on objects older than 0.4.0, which have no wait columns.)
SELECT pg_temp.check_invariant('no waiting event was claimed before its condition',
$q$ SELECT format('%s/%s wait_for %s, wait_result %s, first claimed %s; ending event %s',
				  w.session_id, w.idx, j.wf, j.wr, w.first_claimed_at, to_jsonb(s))
	  FROM a2_events w
	  CROSS JOIN LATERAL (SELECT to_jsonb(w)->'wait_for' AS wf, to_jsonb(w)->'wait_result' AS wr) j
	  LEFT JOIN a2_events s ON s.session_id = w.session_id AND s.idx = (j.wr->>'index')::bigint
	 WHERE w.attempt_count > 0 AND jsonb_typeof(j.wf) = 'object'
	   AND CASE WHEN jsonb_typeof(j.wr) = 'object'
				THEN s.idx IS NULL OR s.idx <= w.idx
					 OR NOT (j.wf->'types') ? s.event_type OR s.event_type IS DISTINCT FROM j.wr->>'type'
					 OR (j.wf ? 'until' AND s.created_at >= (j.wf->>'until')::bigint)
				ELSE NOT j.wf ? 'until' OR w.first_claimed_at < (j.wf->>'until')::bigint END $q$);

-- Causes and completions ----------------------------------------------------

SELECT pg_temp.check_invariant('every cause names an earlier event at an attempt it had',
$q$ SELECT format('%s/%s cause %s; parent %s', c.session_id, c.idx, c.cause,
				  COALESCE(format('at %s, attempt_count %s', p.idx, p.attempt_count), 'missing'))
	  FROM a2_events c
	  LEFT JOIN a2_events p
		ON p.session_id = c.session_id
	   AND jsonb_typeof(c.cause->'index') = 'number'
	   AND p.idx = (c.cause->>'index')::numeric
	 WHERE c.cause IS NOT NULL
	   AND (p.idx IS NULL OR p.idx >= c.idx
			OR jsonb_typeof(c.cause->'attempt') IS DISTINCT FROM 'number'
			OR (c.cause->>'attempt')::numeric < 1
			OR (c.cause->>'attempt')::numeric > p.attempt_count
			OR (c.cause - 'index' - 'attempt' - 'batchSize') <> '{}') $q$);

-- A completion stores its children at consecutive indexes after the
-- parent, caused by {parent index, completing attempt}, created by the
-- same clock reading that marked the parent processed.
SELECT pg_temp.check_invariant('returned_event_ids are the completion''s children',
$q$ SELECT format('%s/%s attempt %s returned %s: child #%s %s', p.session_id, p.idx,
				  p.processed_by_attempt, p.returned_event_ids, r.ord,
				  CASE WHEN c.idx IS NULL THEN 'missing'
					   ELSE format('at %s/%s cause %s created %s (parent processed %s)',
								   c.session_id, c.idx, c.cause, c.created_at, p.processed_at) END)
	  FROM a2_events p
	 CROSS JOIN LATERAL jsonb_array_elements_text(
		   CASE jsonb_typeof(p.returned_event_ids) WHEN 'array' THEN p.returned_event_ids
				ELSE '["<not an array>"]' END) WITH ORDINALITY AS r(id, ord)
	  LEFT JOIN a2_events c ON c.session_id = p.session_id AND c.event_id = r.id
	  LEFT JOIN LATERAL (
		   SELECT f.idx AS first_idx FROM a2_events f
			WHERE f.session_id = p.session_id
			  AND f.event_id = p.returned_event_ids->>0) f ON true
	 WHERE p.returned_event_ids IS NOT NULL
	   AND (c.idx IS NULL
			OR c.session_id <> p.session_id
			OR c.cause IS DISTINCT FROM jsonb_build_object('index', p.idx,
														   'attempt', p.processed_by_attempt)
			OR c.idx <= p.idx
			OR c.idx <> f.first_idx + r.ord - 1
			OR c.created_at <> p.processed_at) $q$);

-- Lanes ---------------------------------------------------------------------

-- A dead-lettered event stays unprocessed and lane-ready: it keeps its lane
-- blocked, so it counts here too.
SELECT pg_temp.check_invariant('at most one lane-ready unprocessed event per (session, lane)',
$q$ SELECT format('session %s lane %s: lane-ready unprocessed %s', session_id, lane,
				  array_agg(idx ORDER BY idx))
	  FROM a2_events
	 WHERE lane IS NOT NULL AND lane_ready AND processed_at IS NULL
	 GROUP BY session_id, lane HAVING count(*) > 1 $q$);

SELECT pg_temp.check_invariant('the oldest unprocessed event of each lane is lane-ready (no stuck lane)',
$q$ SELECT format('%s/%s lane %s is not lane-ready', e.session_id, e.idx, e.lane)
	  FROM a2_events e
	 WHERE e.processed_at IS NULL AND NOT e.lane_ready
	   AND (e.lane IS NULL
			OR NOT EXISTS (SELECT 1 FROM a2_events o
							WHERE o.session_id = e.session_id AND o.lane = e.lane
							  AND o.processed_at IS NULL AND o.idx < e.idx)) $q$);

-- Snapshots and pins --------------------------------------------------------

SELECT pg_temp.check_invariant('no pin on a finished or missing event',
$q$ SELECT format('pin %s/%s on %s@%s: event %s', p.session_id, p.event_index, p.reducer_name,
				  p.up_to_index, CASE WHEN e.idx IS NULL THEN 'missing'
									  WHEN e.processed_at IS NOT NULL THEN 'processed'
									  ELSE 'dead-lettered' END)
	  FROM a2_snapshot_pins p
	  LEFT JOIN a2_events e ON e.session_id = p.session_id AND e.idx = p.event_index
	 WHERE e.idx IS NULL OR e.processed_at IS NOT NULL OR e.failed_at IS NOT NULL $q$);

SELECT pg_temp.check_invariant('every pin names a stored checkpoint (head or history)',
$q$ SELECT format('pin %s/%s on %s@%s', p.session_id, p.event_index, p.reducer_name, p.up_to_index)
	  FROM a2_snapshot_pins p
	 WHERE NOT EXISTS (SELECT 1 FROM a2_snapshots s
						WHERE s.session_id = p.session_id AND s.reducer_name = p.reducer_name
						  AND s.up_to_index = p.up_to_index)
	   AND NOT EXISTS (SELECT 1 FROM a2_snapshot_history h
						WHERE h.session_id = p.session_id AND h.reducer_name = p.reducer_name
						  AND h.up_to_index = p.up_to_index) $q$);

SELECT pg_temp.check_invariant('no history row without a pin',
$q$ SELECT format('history %s %s@%s', h.session_id, h.reducer_name, h.up_to_index)
	  FROM a2_snapshot_history h
	 WHERE NOT EXISTS (SELECT 1 FROM a2_snapshot_pins p
						WHERE p.session_id = h.session_id AND p.reducer_name = h.reducer_name
						  AND p.up_to_index = h.up_to_index) $q$);

-- The head only moves forward, and only older checkpoints go to history.
SELECT pg_temp.check_invariant('history rows are older than their head',
$q$ SELECT format('history %s %s@%s, head %s', h.session_id, h.reducer_name, h.up_to_index,
				  s.up_to_index)
	  FROM a2_snapshot_history h
	  LEFT JOIN a2_snapshots s ON s.session_id = h.session_id AND s.reducer_name = h.reducer_name
	 WHERE s.up_to_index IS NULL OR h.up_to_index >= s.up_to_index $q$);

-- What the clients saw ------------------------------------------------------

\if :have_stress
SELECT pg_temp.check_invariant('every event id a client saw committed is stored where it saw it',
$q$ SELECT format('%s seen at %s/%s, stored %s', s.event_id, s.session_id, s.idx,
				  COALESCE(e.session_id || '/' || e.idx, 'nowhere'))
	  FROM stress_seen s
	  LEFT JOIN a2_events e ON e.event_id = s.event_id
	 WHERE e.session_id IS DISTINCT FROM s.session_id OR e.idx IS DISTINCT FROM s.idx $q$);

-- The first claim of an event precedes every failure, so the notBefore
-- the client stored it with (append or completion) governed it.
SELECT pg_temp.check_invariant('no event was first claimed before the notBefore it was stored with',
$q$ SELECT format('%s/%s stored with notBefore %s, first claimed %s', e.session_id, e.idx,
				  s.not_before, e.first_claimed_at)
	  FROM stress_seen s
	  JOIN a2_events e ON e.event_id = s.event_id
	 WHERE s.not_before IS NOT NULL AND e.first_claimed_at < s.not_before $q$);

-- Every claim of the workload recorded its attempts (primary key: none
-- twice), in the claim's transaction: together they must be 1..attempt_count.
-- (The workload's sessions: the stress suite's later phases use others.)
SELECT pg_temp.check_invariant('claims handed out attempts 1..attempt_count, each once',
$q$ SELECT format('%s/%s attempt_count %s, attempts claimed: %s', e.session_id, e.idx,
				  e.attempt_count, a.attempts)
	  FROM a2_events e
	  LEFT JOIN LATERAL (
		   SELECT array_agg(t.attempt ORDER BY t.attempt) AS attempts
			 FROM stress_attempts t
			WHERE t.session_id = e.session_id AND t.idx = e.idx) a ON true
	 WHERE e.session_id LIKE 'stress-%'
	   AND COALESCE(a.attempts, '{}') <> ARRAY(SELECT generate_series(1, e.attempt_count))
	UNION ALL
	SELECT format('%s/%s attempt %s claimed, event missing', t.session_id, t.idx, t.attempt)
	  FROM stress_attempts t
	 WHERE NOT EXISTS (SELECT 1 FROM a2_events e
						WHERE e.session_id = t.session_id AND e.idx = t.idx)
	   -- a dropped session's events are gone: up to its mark
	   AND t.idx > COALESCE((SELECT r.last_index FROM a2_retired_sessions r
							  WHERE r.session_id = t.session_id), 0) $q$);

SELECT pg_temp.check_invariant('completions and dead-letterings a client saw are stored',
$q$ SELECT format('%s/%s attempt %s %s; stored: processed by %s, failed_at %s, last failed attempt %s, attempts %s',
				  f.session_id, f.idx, f.attempt, f.outcome, e.processed_by_attempt,
				  e.failed_at, e.last_failed_attempt, e.attempt_count)
	  FROM stress_finished f
	  LEFT JOIN a2_events e ON e.session_id = f.session_id AND e.idx = f.idx
	 WHERE CASE f.outcome
		   WHEN 'completed' THEN e.processed_by_attempt IS DISTINCT FROM f.attempt
		   ELSE e.failed_at IS NULL OR e.last_failed_attempt IS DISTINCT FROM f.attempt
				OR e.attempt_count IS DISTINCT FROM f.attempt
		   END $q$);

-- A redrive a client saw commit put the event back at that attempt count:
-- it is not dead-lettered there any more (it may have died again later).
SELECT pg_temp.check_invariant('redriven events are not dead-lettered at the redriven attempt',
$q$ SELECT format('%s/%s redriven at attempt %s; stored: attempts %s, failed_at %s, last failed attempt %s',
				  r.session_id, r.idx, r.attempt, e.attempt_count, e.failed_at, e.last_failed_attempt)
	  FROM stress_redrives r
	  LEFT JOIN a2_events e ON e.session_id = r.session_id AND e.idx = r.idx
	 WHERE e.idx IS NULL
		OR e.attempt_count < r.attempt
		OR (e.failed_at IS NOT NULL AND e.last_failed_attempt <= r.attempt) $q$);

-- A cancel a client saw commit stays: the event is cancelled (or its
-- session was dropped since).
SELECT pg_temp.check_invariant('cancels a client saw are stored',
$q$ SELECT format('%s/%s cancelled; stored: %s', x.session_id, x.idx,
				  COALESCE(to_jsonb(e)::text, 'no row'))
	  FROM stress_cancels x
	  LEFT JOIN a2_events e ON e.session_id = x.session_id AND e.idx = x.idx
	 WHERE CASE WHEN e.idx IS NULL
				THEN x.idx > COALESCE((SELECT r.last_index FROM a2_retired_sessions r
									   WHERE r.session_id = x.session_id), 0)
				ELSE (to_jsonb(e) ->> 'cancelled_at') IS NULL END $q$);

\if :have_retire
SELECT pg_temp.check_invariant('retire: every event a client saw appended is stored where it saw it, or was dropped',
$q$ SELECT format('%s seen at %s/%s, stored %s, mark %s', s.event_id, s.session_id, s.idx,
				  COALESCE(e.session_id || '/' || e.idx, 'nowhere'), r.last_index)
	  FROM stress_retire_seen s
	  LEFT JOIN a2_events e ON e.event_id = s.event_id
	  LEFT JOIN a2_retired_sessions r ON r.session_id = s.session_id
	 WHERE CASE WHEN e.event_id IS NULL THEN s.idx > COALESCE(r.last_index, 0)
				ELSE e.session_id <> s.session_id OR e.idx <> s.idx END $q$);

SELECT pg_temp.check_invariant('retire: a high-water mark never moves back',
$q$ SELECT format('drop %s of %s reported mark %s, stored mark %s', d.seq, d.session_id,
				  d.last_index, r.last_index)
	  FROM stress_drops d
	  LEFT JOIN a2_retired_sessions r ON r.session_id = d.session_id
	 WHERE d.last_index IS NOT NULL AND (r.last_index IS NULL OR r.last_index < d.last_index) $q$);
\endif
\endif

\if :have_crash_log
SELECT pg_temp.check_invariant('every id in the client-side logs survived the crash',
$q$ SELECT format('%s logged as committed to %s, stored %s', l.event_id, l.session_id,
				  COALESCE(e.session_id, 'nowhere'))
	  FROM crash_client_log l
	  LEFT JOIN a2_events e ON e.event_id = l.event_id
	 WHERE e.session_id IS DISTINCT FROM l.session_id $q$);

SELECT pg_temp.check_invariant('every completion in the client-side logs survived the crash',
$q$ SELECT format('%s/%s logged completed by attempt %s, stored processed by %s',
				  d.session_id, d.idx, d.attempt, e.processed_by_attempt)
	  FROM crash_client_done d
	  LEFT JOIN a2_events e ON e.session_id = d.session_id AND e.idx = d.idx
	 WHERE e.processed_by_attempt IS DISTINCT FROM d.attempt $q$);
\endif

-- What the re-entrancy suite's triggers did (test/suites/25-reentrancy.sh).
\if :have_reentry
\ir ../reentry/check.sql
\endif

\o

-- Report ------------------------------------------------------------------

\echo
\echo 'a2 store:'
SELECT count(DISTINCT session_id) AS sessions,
	   count(*) AS events,
	   count(*) FILTER (WHERE processed_by_attempt IS NOT NULL) AS completed,
	   count(*) FILTER (WHERE processed_at IS NOT NULL AND processed_by_attempt IS NULL
						  AND (to_jsonb(a2_events) ->> 'cancelled_at') IS NULL) AS settled,
	   count(*) FILTER (WHERE (to_jsonb(a2_events) ->> 'cancelled_at') IS NOT NULL) AS cancelled,
	   count(*) FILTER (WHERE failed_at IS NOT NULL AND processed_at IS NULL) AS dead_lettered,
	   count(*) FILTER (WHERE processed_at IS NULL AND failed_at IS NULL) AS unfinished,
	   COALESCE(sum(attempt_count), 0) AS attempts,
	   (SELECT count(*) FROM a2_snapshots) AS heads,
	   (SELECT count(*) FROM a2_snapshot_history) AS history,
	   (SELECT count(*) FROM a2_snapshot_pins) AS pins
  FROM a2_events;

\if :have_stress
\echo 'workload outcomes (all clients):'
SELECT op, outcome, sum(n) AS count
  FROM stress_outcomes GROUP BY op, outcome ORDER BY op, outcome;
SELECT COALESCE(sum(n), 0) AS operations_total FROM stress_outcomes;
\endif

\echo 'invariants:'
SELECT id AS "#", invariant, violations,
	   CASE WHEN violations = 0 THEN 'ok' ELSE 'VIOLATED' END AS status
  FROM a2_invariant ORDER BY id;

SELECT count(*) AS checked, count(*) FILTER (WHERE violations > 0) AS violated,
	   COALESCE(bool_or(violations > 0), false) AS any_violated
  FROM a2_invariant
\gset inv_
\echo :inv_checked 'invariants checked,' :inv_violated 'violated'

\if :inv_any_violated
\echo 'sample violations (up to 3 per invariant):'
SELECT invariant, sample FROM a2_invariant WHERE violations > 0 ORDER BY id;
DO $$
BEGIN
	RAISE EXCEPTION 'a2 invariants violated: %',
		(SELECT string_agg(invariant || ' (' || violations || ')', '; ' ORDER BY id)
		   FROM a2_invariant WHERE violations > 0);
END $$;
\endif
