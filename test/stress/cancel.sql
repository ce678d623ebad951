/*
 * test/stress/cancel.sql
 *	  The cancel phase of the stress suite (test/suites/20-stress.sh): a2_cancel
 *	  of single events, lists and whole sessions racing claims (a2_claim, and
 *	  a2_claim_next limited to the phase's queue), completions, failures and
 *	  renewals of short leases on four small sessions
 *	  (test/stress/cancel.pgbench), so that most cancels meet a leased,
 *	  pending or dead-lettered event that someone is about to act on.
 *
 *	  What each client saw commit is recorded in the same transaction as the
 *	  a2 call.  Every a2 call that acts on an event holds the session lock to
 *	  its commit, so a cancel or completion visible to a later statement of
 *	  the same transaction committed before the call: checked at once.
 *
 *	  The invariant "never a cancelled event processed" (docs/semantics.md,
 *	  "Cancel"), raising ZS000 on a violation:
 *	    - live: a claim never returns an event whose cancel committed, nor an
 *	      event with cancelledAt; a completion that answers "completed" is
 *	      of an event no committed cancel returned, and a cancel never
 *	      returns an event whose completion committed; a superseded
 *	      completion, failure or renewal is of an attempt that was re-claimed
 *	      or of a cancelled event; the attempt that held a cancelled event
 *	      gets "superseded" from a2_complete and a2_fail, ever after
 *	      (cstress_probe); no event is cancelled twice, completed twice or
 *	      claimed twice at the same attempt (primary keys);
 *	    - at the end (cstress_check): no event both cancelled and completed;
 *	      every cancelled event has processed_at = cancelled_at as the cancel
 *	      returned it, no processed_by_attempt, no children, no lease, and
 *	      the attempt count it had at the cancel (never claimed again); every
 *	      completion a client saw is stored; every cancelled event of the
 *	      phase is one a client saw cancelled.
 */
\set ON_ERROR_STOP 1

CREATE TABLE cstress_claims (
	client		integer NOT NULL,
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	PRIMARY KEY (session_id, idx, attempt)
);

CREATE TABLE cstress_cancelled (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,	-- attemptCount at the cancel
	cancelled_at text	NOT NULL,	-- cancelledAt as returned
	client		integer NOT NULL,
	PRIMARY KEY (session_id, idx)
);

CREATE TABLE cstress_completed (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	PRIMARY KEY (session_id, idx)
);

CREATE TABLE cstress_counts (op text PRIMARY KEY, n bigint NOT NULL DEFAULT 0);

CREATE FUNCTION cstress_count(what text) RETURNS void LANGUAGE sql AS $$
	INSERT INTO cstress_counts AS c VALUES (what, 1) ON CONFLICT (op) DO UPDATE SET n = c.n + 1;
$$;

CREATE FUNCTION cstress_fail(msg text) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'ZS000', MESSAGE = 'cancel phase: ' || msg;
END $$;

-- Events of the phase (with ids, so that completions can return them):
-- queue cxq, a lane one time in three.
CREATE FUNCTION cstress_events(n integer) RETURNS jsonb LANGUAGE sql AS $$
	SELECT jsonb_agg(jsonb_build_object('id', 'cx-' || gen_random_uuid(), 'type', 'cx', 'queue', 'cxq')
					 || CASE WHEN random() < 0.33 THEN jsonb_build_object('lane', 'L' || floor(random() * 2))
							 ELSE '{}' END)
	  FROM generate_series(1, n);
$$;

CREATE FUNCTION cstress_append(r integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM a2_append('cx-' || (1 + r % 4), cstress_events(1 + r % 3));
	PERFORM cstress_count('append');
END $$;

-- Whether the event's current state explains a "superseded": a later
-- attempt, or a cancel (read under the session lock the call took).
CREATE FUNCTION cstress_superseded_ok(sess text, i bigint, att integer) RETURNS boolean
LANGUAGE sql AS $$
	SELECT attempt_count > att OR cancelled_at IS NOT NULL
	  FROM a2_events WHERE session_id = sess AND idx = i;
$$;

CREATE FUNCTION cstress_claim(c integer, r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	holder text := 'cc' || c;
	ttl bigint := (ARRAY[50, 200, 1000, 2000, 3000, 5000])[1 + r % 6];
	res jsonb;
	claims jsonb;
	cl jsonb;
	ev jsonb;
BEGIN
	IF r % 3 = 0 AND NOT a2_is_distributed() THEN
		res := a2_claim_next(holder, ttl, 2, NULL, ARRAY['cxq']);
		claims := res->'claims';
	ELSE
		res := a2_claim('cx-' || (1 + (r / 3) % 4), holder, ttl, NULL, '{}',
						CASE WHEN r % 2 = 0 THEN ARRAY['cxq'] END);
		claims := CASE WHEN res->>'outcome' = 'claimed'
					   THEN jsonb_build_array(jsonb_build_object('sessionId', 'cx-' || (1 + (r / 3) % 4),
																 'events', res->'events'))
					   ELSE '[]' END;
	END IF;
	FOR cl IN SELECT * FROM jsonb_array_elements(claims) LOOP
		FOR ev IN SELECT * FROM jsonb_array_elements(cl->'events') LOOP
			IF ev ? 'cancelledAt' OR ev->'processedAt' <> 'null' OR ev->>'queue' IS DISTINCT FROM 'cxq'
			   OR EXISTS (SELECT 1 FROM cstress_cancelled x
						   WHERE x.session_id = ev->>'sessionId' AND x.idx = (ev->>'index')::bigint) THEN
				PERFORM cstress_fail(format('a claim returned a cancelled or finished event: %s', ev));
			END IF;
			INSERT INTO cstress_claims VALUES (c, ev->>'sessionId', (ev->>'index')::bigint,
											   (ev->>'attemptCount')::integer);
		END LOOP;
	END LOOP;
	PERFORM cstress_count(CASE WHEN claims = '[]' THEN 'claim: none' ELSE 'claim' END);
END $$;

-- Act on one attempt this client claimed: complete (with a child now and
-- then), fail, renew or walk away.
CREATE FUNCTION cstress_work(c integer, r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	cl cstress_claims;
	res jsonb;
	p integer := r % 20;
BEGIN
	SELECT * INTO cl FROM cstress_claims WHERE client = c ORDER BY random() LIMIT 1;
	IF NOT FOUND THEN
		PERFORM cstress_count('work: nothing held');
		RETURN;
	END IF;
	IF p < 10 THEN
		res := a2_complete(cl.session_id, cl.idx, cl.attempt,
						   CASE WHEN p < 2 THEN cstress_events(1) END);
		IF res->>'outcome' = 'completed' THEN
			IF EXISTS (SELECT 1 FROM cstress_cancelled x WHERE x.session_id = cl.session_id AND x.idx = cl.idx) THEN
				PERFORM cstress_fail(format('%s/%s attempt %s completed after its cancel committed',
											cl.session_id, cl.idx, cl.attempt));
			END IF;
			INSERT INTO cstress_completed VALUES (cl.session_id, cl.idx, cl.attempt);
		ELSIF res->>'outcome' <> 'superseded' OR NOT cstress_superseded_ok(cl.session_id, cl.idx, cl.attempt) THEN
			PERFORM cstress_fail(format('%s/%s attempt %s: complete returned %s', cl.session_id, cl.idx,
										cl.attempt, res));
		END IF;
		PERFORM cstress_count('complete: ' || (res->>'outcome'));
	ELSIF p < 15 THEN
		res := a2_fail(cl.session_id, cl.idx, cl.attempt, 'cx failure', 2);
		IF res->>'outcome' NOT IN ('failed', 'dead_lettered', 'superseded')
		   OR (res->>'outcome' = 'superseded' AND NOT cstress_superseded_ok(cl.session_id, cl.idx, cl.attempt)) THEN
			PERFORM cstress_fail(format('%s/%s attempt %s: fail returned %s', cl.session_id, cl.idx,
										cl.attempt, res));
		END IF;
		PERFORM cstress_count('fail: ' || (res->>'outcome'));
	ELSIF p < 18 THEN
		res := a2_renew(cl.session_id, 'cc' || c,
						jsonb_build_array(jsonb_build_object('index', cl.idx, 'attempt', cl.attempt)), 500);
		IF res->'superseded' = jsonb_build_array(cl.idx)
		   AND NOT cstress_superseded_ok(cl.session_id, cl.idx, cl.attempt) THEN
			PERFORM cstress_fail(format('%s/%s attempt %s: renew returned %s', cl.session_id, cl.idx,
										cl.attempt, res));
		END IF;
		PERFORM cstress_count(CASE WHEN res->'superseded' = '[]' THEN 'renew: not superseded'
								   ELSE 'renew: superseded' END);
		RETURN;
	ELSE
		PERFORM cstress_count('work: walked away');
	END IF;
	DELETE FROM cstress_claims x WHERE x.session_id = cl.session_id AND x.idx = cl.idx AND x.attempt = cl.attempt;
END $$;

-- Cancel one unfinished event (often a leased one), a few listed events
-- (finished ones among them), or the whole session.
CREATE FUNCTION cstress_cancel(c integer, r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	sess text := 'cx-' || (1 + r % 4);
	p integer := (r / 4) % 50;
	idxs bigint[];
	res jsonb;
	ev jsonb;
BEGIN
	IF p = 0 THEN
		idxs := NULL;
	ELSIF p < 25 THEN
		-- a leased one, if any: its holder is about to act
		SELECT ARRAY[e.idx] INTO idxs FROM a2_events e
		 WHERE e.session_id = sess AND e.processed_at IS NULL AND e.claim_holder IS NOT NULL
		 ORDER BY random() LIMIT 1;
	ELSIF p < 40 THEN
		SELECT ARRAY[e.idx] INTO idxs FROM a2_events e
		 WHERE e.session_id = sess AND e.processed_at IS NULL ORDER BY random() LIMIT 1;
	ELSE
		SELECT array_agg(DISTINCT 1 + floor(random() * m)::bigint) INTO idxs
		  FROM (SELECT max(e.idx) AS m FROM a2_events e WHERE e.session_id = sess) x,
			   generate_series(1, 3);
	END IF;
	IF p <> 0 AND idxs IS NULL THEN
		PERFORM cstress_count('cancel: nothing to cancel');
		RETURN;
	END IF;
	res := a2_cancel(sess, idxs, 'cx by c' || c);
	FOR ev IN SELECT * FROM jsonb_array_elements(res->'cancelled') LOOP
		IF ev->>'cancelledAt' IS NULL OR ev->'processedAt' IS DISTINCT FROM ev->'cancelledAt'
		   OR ev->'processedByAttempt' <> 'null' OR ev->'claimHolder' <> 'null'
		   OR ev->>'cancelReason' IS DISTINCT FROM 'cx by c' || c
		   OR ev->>'sessionId' IS DISTINCT FROM sess
		   OR (idxs IS NOT NULL AND NOT (ev->>'index')::bigint = ANY (idxs)) THEN
			PERFORM cstress_fail(format('cancel of %s in %s returned %s', idxs, sess, ev));
		END IF;
		IF EXISTS (SELECT 1 FROM cstress_completed x WHERE x.session_id = sess AND x.idx = (ev->>'index')::bigint) THEN
			PERFORM cstress_fail(format('%s/%s cancelled after its completion committed', sess, ev->>'index'));
		END IF;
		INSERT INTO cstress_cancelled VALUES (sess, (ev->>'index')::bigint, (ev->>'attemptCount')::integer,
											  ev->>'cancelledAt', c);
	END LOOP;
	-- idempotent: again, nothing
	IF p % 5 = 1 AND a2_cancel(sess, idxs, 'again')->'cancelled' <> '[]' THEN
		PERFORM cstress_fail(format('a second cancel of %s in %s cancelled again', idxs, sess));
	END IF;
	PERFORM cstress_count(CASE WHEN res->'cancelled' = '[]' THEN 'cancel: all finished already'
							   WHEN idxs IS NULL THEN 'cancel: session'
							   ELSE 'cancel: cancelled' END);
END $$;

-- The attempt that held a cancelled event is fenced for good.
CREATE FUNCTION cstress_probe(r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	x cstress_cancelled;
	res jsonb;
BEGIN
	SELECT * INTO x FROM cstress_cancelled WHERE attempt >= 1 ORDER BY random() LIMIT 1;
	IF NOT FOUND THEN
		PERFORM cstress_count('probe: none yet');
		RETURN;
	END IF;
	IF r % 2 = 0 THEN
		res := a2_complete(x.session_id, x.idx, x.attempt, CASE WHEN r % 4 = 0 THEN cstress_events(1) END);
	ELSE
		res := a2_fail(x.session_id, x.idx, x.attempt, 'late', 1, (r % 3) * 100);
	END IF;
	IF res->>'outcome' IS DISTINCT FROM 'superseded' THEN
		PERFORM cstress_fail(format('%s/%s: the attempt %s that held it when it was cancelled got %s',
									x.session_id, x.idx, x.attempt, res));
	END IF;
	PERFORM cstress_count('probe: superseded');
END $$;

CREATE FUNCTION cstress_check() RETURNS text LANGUAGE plpgsql AS $$
DECLARE
	v text[];
BEGIN
	SELECT array_agg(x) INTO v FROM (
		SELECT format('%s/%s both cancelled and completed (attempt %s)', k.session_id, k.idx, d.attempt) AS x
		  FROM cstress_cancelled k JOIN cstress_completed d USING (session_id, idx)
		UNION ALL
		SELECT format('%s/%s cancelled at %s by attempt count %s; stored %s', k.session_id, k.idx,
					  k.cancelled_at, k.attempt, COALESCE(to_jsonb(e)::text, 'nothing'))
		  FROM cstress_cancelled k
		  LEFT JOIN a2_events e ON e.session_id = k.session_id AND e.idx = k.idx
		 WHERE e.idx IS NULL OR e.cancelled_at IS NULL
			OR e.cancelled_at <> (extract(epoch FROM k.cancelled_at::timestamptz) * 1000)::bigint
			OR e.processed_at IS DISTINCT FROM e.cancelled_at
			OR e.processed_by_attempt IS NOT NULL OR e.returned_event_ids IS NOT NULL
			OR e.claim_holder IS NOT NULL OR e.attempt_count <> k.attempt
		UNION ALL
		SELECT format('%s/%s completed by attempt %s; stored processed by %s, cancelled_at %s',
					  d.session_id, d.idx, d.attempt, e.processed_by_attempt, e.cancelled_at)
		  FROM cstress_completed d
		  LEFT JOIN a2_events e ON e.session_id = d.session_id AND e.idx = d.idx
		 WHERE e.processed_by_attempt IS DISTINCT FROM d.attempt OR e.cancelled_at IS NOT NULL
		UNION ALL
		SELECT format('%s/%s is cancelled, but no client saw its cancel', e.session_id, e.idx)
		  FROM a2_events e
		 WHERE e.session_id LIKE 'cx-%' AND e.cancelled_at IS NOT NULL
		   AND NOT EXISTS (SELECT 1 FROM cstress_cancelled k WHERE k.session_id = e.session_id AND k.idx = e.idx)
	) z;
	IF v IS NOT NULL THEN
		RAISE EXCEPTION 'cancel phase: % violations of "never a cancelled event processed": %',
			cardinality(v), array_to_string(v[1:5], '; ') USING ERRCODE = 'ZS000';
	END IF;
	RETURN (SELECT format('%s events, %s cancelled (%s of them while leased or after a claim), %s completed; %s',
						  count(*), count(*) FILTER (WHERE cancelled_at IS NOT NULL),
						  count(*) FILTER (WHERE cancelled_at IS NOT NULL AND attempt_count > 0),
						  count(*) FILTER (WHERE processed_by_attempt IS NOT NULL),
						  (SELECT string_agg(op || ' ' || n, ', ' ORDER BY op) FROM cstress_counts))
			  FROM a2_events WHERE session_id LIKE 'cx-%');
END $$;

SELECT a2_append('cx-' || s, cstress_events(20)) IS NOT NULL FROM generate_series(1, 4) s;
