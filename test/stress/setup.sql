/*
 * test/stress/setup.sql
 *	  Tables and plpgsql steps for the a2 stress driver (test/stress/run.sh).
 *
 *	  Run once in a fresh database that already has the a2 extension.
 *	  Each pgbench transaction (test/stress/worker.pgbench) calls exactly one
 *	  stress_* step, and every step makes at most one mutating a2 call per
 *	  transaction (except the handler path, which appends a caused event and
 *	  completes its parent in one transaction, both under the same session
 *	  lock), so any deadlock pgbench reports is an a2 bug and not one of the
 *	  driver's own making.
 *
 *	  Expected errors are caught here, per path, and only where the contract
 *	  allows them:
 *	    Z2002  a caused append whose parent was re-claimed meanwhile (racy);
 *	    Z2001, Z2002, Z2003 on probes that must fail (a foreign id, a partial
 *	           replay, a stale cause, a missing parent), where *success* is
 *	           the failure.
 *	  Anything else propagates, and so does every broken expectation, raised
 *	  as SQLSTATE ZS000: pgbench then reports the transaction as failed or
 *	  aborts the client, and run.sh fails the run.
 *
 *	  What a client saw committed is recorded in the same transaction as the
 *	  a2 call (stress_seen, stress_attempts, stress_finished), so
 *	  test/stress/invariants.sql can hold the store to it.  (Rows written in
 *	  the same transaction prove atomicity, not durability; the crash suite
 *	  keeps client-side logs for that.)
 */
\set ON_ERROR_STOP 1

-- Per client, operation and outcome: how often each happened.
CREATE TABLE stress_outcomes (
	client		integer NOT NULL,
	op			text	NOT NULL,
	outcome		text	NOT NULL,
	n			bigint	NOT NULL DEFAULT 0,
	PRIMARY KEY (client, op, outcome)
);

-- Every event id a client saw committed, where it was stored, and the
-- notBefore it was stored with (epoch ms; NULL: none), which governed its
-- first claim (a fail with backoff can move it only after that).
CREATE TABLE stress_seen (
	event_id	text	PRIMARY KEY,
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	client		integer NOT NULL,
	not_before	bigint
);

-- Every attempt a claim handed out.  The primary key turns a second claim
-- of the same attempt (SPEC: "Concurrent claimers never claim the same
-- attempt twice") into a unique violation, which fails the run.
CREATE TABLE stress_attempts (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	client		integer NOT NULL,
	PRIMARY KEY (session_id, idx, attempt)
);

-- Completions and dead-letterings a client saw committed.
CREATE TABLE stress_finished (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	outcome		text	NOT NULL CHECK (outcome IN ('completed', 'dead_lettered')),
	PRIMARY KEY (session_id, idx, attempt)
);

-- Redrives a client saw commit, with the attempt count at the redrive:
-- the redriven attempt (and every earlier one) is never current again.
CREATE TABLE stress_redrives (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	client		integer NOT NULL
);

-- A client's memory of the attempts it holds (or held): the worker acts on
-- them in later transactions, so leases expire and others re-claim between
-- the claim and the completion.  done: completed, kept for an idempotent
-- retry with the same children.
CREATE TABLE stress_claims (
	client		integer NOT NULL,
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL,
	done		boolean NOT NULL DEFAULT false,
	children	jsonb,
	seq			bigserial,
	PRIMARY KEY (client, session_id, idx, attempt)
);
CREATE INDEX stress_claims_client_seq ON stress_claims (client, seq);

-- Events a client saw a2_cancel cancel (commit).
CREATE TABLE stress_cancels (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	PRIMARY KEY (session_id, idx)
);

-- Batches a client appended, for exact replays and duplicate-id probes.
CREATE TABLE stress_batches (
	seq			bigserial PRIMARY KEY,
	client		integer NOT NULL,
	session_id	text	NOT NULL,
	batch		jsonb	NOT NULL,
	indexes		bigint[] NOT NULL
);
CREATE INDEX stress_batches_client_seq ON stress_batches (client, seq);

-- Broken expectation: fail the transaction (and so the run).
CREATE FUNCTION stress_fail(msg text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	RAISE EXCEPTION USING ERRCODE = 'ZS000', MESSAGE = 'stress: ' || msg;
END $$;

CREATE FUNCTION stress_count(c integer, op text, outcome text) RETURNS void
LANGUAGE sql AS $$
	INSERT INTO stress_outcomes AS o (client, op, outcome, n)
	VALUES (c, op, outcome, 1)
	ON CONFLICT (client, op, outcome) DO UPDATE SET n = o.n + 1;
$$;

CREATE FUNCTION stress_session(s integer) RETURNS text
LANGUAGE sql IMMUTABLE AS $$ SELECT 'stress-' || s $$;

-- The store's clock in this transaction: a2.now when a step set it, else
-- the wall clock (what a2 uses then).
CREATE FUNCTION stress_now() RETURNS timestamptz
LANGUAGE sql VOLATILE AS $$
	SELECT COALESCE(nullif(current_setting('a2.now', true), '')::timestamptz, clock_timestamp())
$$;

-- A time as a2 prints it: ISO-8601 in UTC, milliseconds.
CREATE FUNCTION stress_iso(t timestamptz) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')
$$;

-- One new event: in one of four lanes four times in five, settled one
-- time in five.  A dead-lettered event blocks its lane for good, so lane
-- names change every 10 s: a long soak keeps live lanes.  About one in
-- four is scheduled (SPEC 7.1): in the past, exactly now (when the step
-- set a2.now), due within 3 s, or, rarely, a day ahead (never due in the
-- run: it holds its lane, like a dead letter).  Some wait for another
-- event (waitFor).
CREATE FUNCTION stress_new_event(c integer, kind text) RETURNS jsonb
LANGUAGE plpgsql AS $$
DECLARE
	ev jsonb := jsonb_build_object(
		'id', 'c' || c || '-' || gen_random_uuid(),
		'type', kind,
		'payload', jsonb_build_object('c', c, 'r', floor(random() * 1000)));
	lane_no integer := floor(random() * 5);
	r float8 := random();
	now_t timestamptz := stress_now();
BEGIN
	IF lane_no > 0 THEN
		ev := ev || jsonb_build_object('lane', format('lane-%s-%s', lane_no,
			floor(extract(epoch FROM clock_timestamp()) / 10)));
	END IF;
	IF random() < 0.2 THEN
		ev := ev || '{"settled": true}';
	END IF;
	IF r < 0.06 THEN
		ev := ev || jsonb_build_object('notBefore', stress_iso(now_t - random() * interval '60 s'));
	ELSIF r < 0.11 THEN
		ev := ev || jsonb_build_object('notBefore', stress_iso(now_t));
	ELSIF r < 0.245 THEN
		ev := ev || jsonb_build_object('notBefore', stress_iso(now_t + random() * interval '3 s'));
	ELSIF r < 0.25 THEN
		ev := ev || jsonb_build_object('notBefore', stress_iso(now_t + interval '1 day'));
	END IF;
	-- about one unsettled event in twelve waits (docs/semantics.md, "Waits")
	-- for a 'plain' or 'child' event of its session, mostly with a timeout
	-- of up to 3 s, sometimes without one; never in distributed mode, which
	-- refuses waits (test/citus runs this driver)
	IF ev->'settled' IS NULL AND random() < 0.08 AND NOT a2_is_distributed() THEN
		ev := ev || jsonb_build_object('waitFor',
			jsonb_build_object('types', jsonb_build_array(CASE WHEN random() < 0.5 THEN 'plain' ELSE 'child' END))
			|| CASE WHEN random() < 0.85 THEN jsonb_build_object('timeoutMs', floor(random() * 3000)::integer)
					ELSE '{}'::jsonb END);
	END IF;
	RETURN ev;
END $$;

-- n new events (for appends, or children of a completion).
CREATE FUNCTION stress_new_events(c integer, kind text, n integer) RETURNS jsonb
LANGUAGE sql AS $$
	SELECT COALESCE(jsonb_agg(stress_new_event(c, kind)), '[]')
	  FROM generate_series(1, n);
$$;

-- 0, 1 or 2 children, fewer on average than one so the backlog drains.
CREATE FUNCTION stress_children(c integer) RETURNS jsonb
LANGUAGE sql AS $$
	SELECT stress_new_events(c, 'child',
		CASE WHEN r < 0.5 THEN 0 WHEN r < 0.85 THEN 1 ELSE 2 END)
	  FROM (SELECT random() AS r) x;
$$;

-- Check that the events a2 stored for `batch` are the batch, at consecutive
-- indexes, then remember them as seen.  Returns their indexes.  Not fresh:
-- a replay, whose unsettled events may have been processed since.
CREATE FUNCTION stress_record_events(c integer, sess text, batch jsonb,
									 stored jsonb, cause jsonb,
									 fresh boolean DEFAULT true)
RETURNS bigint[]
LANGUAGE plpgsql AS $$
DECLARE
	n integer := jsonb_array_length(batch);
	idxs bigint[] := '{}';
	ev jsonb;
BEGIN
	IF jsonb_array_length(stored) <> n THEN
		PERFORM stress_fail(format('session %s: %s events sent, %s returned',
								   sess, n, jsonb_array_length(stored)));
	END IF;
	FOR i IN 0 .. n - 1 LOOP
		ev := stored -> i;
		IF ev->>'id' IS DISTINCT FROM batch->i->>'id'
		   OR ev->>'sessionId' IS DISTINCT FROM sess
		   OR ev->>'type' IS DISTINCT FROM batch->i->>'type'
		   OR ev->'lane' IS DISTINCT FROM COALESCE(batch->i->'lane', 'null')
		   OR (cause IS NOT NULL AND ev->'cause' IS DISTINCT FROM cause)
		   OR (i > 0 AND (ev->>'index')::bigint <> idxs[i] + 1)
		   OR (COALESCE((batch->i->>'settled')::boolean, false)
			   AND ev->'processedAt' = 'null')
		   OR (fresh AND NOT COALESCE((batch->i->>'settled')::boolean, false)
			   AND ev->'processedAt' <> 'null')
		   -- stored as sent (milliseconds, UTC), shown only when set; a
		   -- replay shows the current one (a backoff may have moved it)
		   OR (fresh AND ev->'notBefore' IS DISTINCT FROM batch->i->'notBefore')
		THEN
			PERFORM stress_fail(format('session %s: stored event %s does not match sent event %s',
									   sess, ev, batch->i));
		END IF;
		idxs := idxs || (ev->>'index')::bigint;
		INSERT INTO stress_seen (event_id, session_id, idx, client, not_before)
		VALUES (ev->>'id', sess, (ev->>'index')::bigint, c,
				(extract(epoch FROM (batch->i->>'notBefore')::timestamptz) * 1000)::bigint)
		ON CONFLICT (event_id) DO NOTHING;
	END LOOP;
	RETURN idxs;
END $$;

-- Claim every eligible event of a session and remember the attempts.
CREATE FUNCTION stress_claim(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	holder text := 'c' || c;
	-- most leases expire under the load; some outlive a few steps
	ttl bigint := (ARRAY[1, 3, 10, 30, 100, 1000, 5000, 5000])[1 + floor(random() * 8)];
	excl bigint[] := '{}';
	res jsonb;
	ev jsonb;
	prev bigint := 0;
	keep_from bigint;
BEGIN
	-- a skewed clock now and then: leases that look live to their holder
	-- are taken over
	IF random() < 0.15 THEN
		PERFORM set_config('a2.now',
			(clock_timestamp() + random() * interval '50 ms')::text, true);
	END IF;
	IF random() < 0.1 THEN
		excl := ARRAY[1 + floor(random() * 20)::bigint];
	END IF;

	res := a2_claim(sess, holder, ttl, NULL, excl);
	CASE res->>'outcome'
	WHEN 'claimed' THEN
		FOR ev IN SELECT * FROM jsonb_array_elements(res->'events') LOOP
			IF ev->>'claimHolder' IS DISTINCT FROM holder
			   OR ev->'processedAt' <> 'null' OR ev->'failedAt' <> 'null'
			   OR (ev->>'attemptCount')::integer < 1
			   OR (ev->>'index')::bigint <= prev
			   OR (ev->>'index')::bigint = ANY (excl)
			   -- never before it is due (lastClaimedAt: this claim's now)
			   OR (ev->>'notBefore')::timestamptz > (ev->>'lastClaimedAt')::timestamptz
			THEN
				PERFORM stress_fail(format('session %s: bad claimed event %s', sess, ev));
			END IF;
			prev := (ev->>'index')::bigint;
			INSERT INTO stress_attempts (session_id, idx, attempt, client)
			VALUES (sess, prev, (ev->>'attemptCount')::integer, c);
			INSERT INTO stress_claims (client, session_id, idx, attempt)
			VALUES (c, sess, prev, (ev->>'attemptCount')::integer);
		END LOOP;
		IF prev = 0 THEN
			PERFORM stress_fail(format('session %s: "claimed" with no events', sess));
		END IF;
		PERFORM stress_count(c, 'claim', 'claimed');
	WHEN 'busy' THEN
		IF res->>'retryAt' IS NULL THEN
			PERFORM stress_fail(format('session %s: busy without retryAt: %s', sess, res));
		END IF;
		PERFORM stress_count(c, 'claim', 'busy');
	WHEN 'settled' THEN
		PERFORM stress_count(c, 'claim', 'settled');
	ELSE
		PERFORM stress_fail(format('session %s: claim returned %s', sess, res));
	END CASE;

	-- a bounded memory: forget the oldest claims (their leases expire)
	SELECT seq INTO keep_from FROM stress_claims WHERE client = c
	 ORDER BY seq DESC OFFSET 40 LIMIT 1;
	IF keep_from IS NOT NULL THEN
		DELETE FROM stress_claims WHERE client = c AND seq <= keep_from;
	END IF;
END $$;

-- Claim the eligible work of up to three sessions, whichever they are, and
-- remember the attempts.  Every claimed event must be this holder's, at a
-- fresh attempt (stress_attempts' key), and no session may appear twice.
CREATE FUNCTION stress_claim_next(c integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	holder text := 'c' || c;
	ttl bigint := (ARRAY[1, 3, 10, 30, 100, 1000, 5000, 5000])[1 + floor(random() * 8)];
	maxs integer := 1 + floor(random() * 3)::integer;
	res jsonb;
	cl jsonb;
	ev jsonb;
	sess text;
	prev bigint;
	n integer := 0;
BEGIN
	-- distributed mode refuses a2_claim_next (it spans sessions)
	IF a2_is_distributed() THEN
		RETURN;
	END IF;
	IF random() < 0.15 THEN
		PERFORM set_config('a2.now',
			(clock_timestamp() + random() * interval '50 ms')::text, true);
	END IF;
	res := a2_claim_next(holder, ttl, maxs);
	IF jsonb_array_length(res->'claims') > maxs
	   OR (SELECT count(DISTINCT x->>'sessionId') FROM jsonb_array_elements(res->'claims') x)
		  <> jsonb_array_length(res->'claims')
	   -- a time, or the far-future gate of a wait without timeout (docs/
	   -- semantics.md, "Waits"), which timestamptz cannot parse
	   OR (CASE WHEN res->'retryAt' = 'null' OR res->>'retryAt' = '+275760-09-13T00:00:00.000Z'
				THEN false ELSE (res->>'retryAt')::timestamptz IS NULL END) THEN
		PERFORM stress_fail(format('claim_next(%s) returned %s', maxs, res));
	END IF;
	FOR cl IN SELECT * FROM jsonb_array_elements(res->'claims') LOOP
		sess := cl->>'sessionId';
		prev := 0;
		IF jsonb_array_length(cl->'events') = 0 THEN
			PERFORM stress_fail(format('claim_next: session %s with no events', sess));
		END IF;
		FOR ev IN SELECT * FROM jsonb_array_elements(cl->'events') LOOP
			IF ev->>'claimHolder' IS DISTINCT FROM holder
			   OR ev->>'sessionId' IS DISTINCT FROM sess
			   OR ev->'processedAt' <> 'null' OR ev->'failedAt' <> 'null'
			   OR (ev->>'attemptCount')::integer < 1
			   OR (ev->>'index')::bigint <= prev
			   OR (ev->>'notBefore')::timestamptz > (ev->>'lastClaimedAt')::timestamptz
			THEN
				PERFORM stress_fail(format('claim_next: bad claimed event %s', ev));
			END IF;
			prev := (ev->>'index')::bigint;
			INSERT INTO stress_attempts (session_id, idx, attempt, client)
			VALUES (sess, prev, (ev->>'attemptCount')::integer, c);
			-- The retire pool's sessions may be dropped under us: claiming
			-- their work is fine (the lease just expires), but it is not
			-- handed to stress_work, whose checks assume sessions stay.
			CONTINUE WHEN sess LIKE 'stress-retire-%';
			INSERT INTO stress_claims (client, session_id, idx, attempt)
			VALUES (c, sess, prev, (ev->>'attemptCount')::integer);
		END LOOP;
		n := n + 1;
	END LOOP;
	PERFORM stress_count(c, 'claim_next', CASE WHEN n = 0 THEN 'none' ELSE n || ' sessions' END);
END $$;

-- Redrive one dead letter of a session (or all of them).  A redrive that
-- lost a race (the event was redriven, re-claimed and finished or failed
-- again meanwhile) is refused with Z2004, the one error allowed here.
CREATE FUNCTION stress_redrive(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	dead bigint;
	res jsonb;
	evs jsonb;
	ev jsonb;
BEGIN
	SELECT e.idx INTO dead FROM a2_events e
	 WHERE e.session_id = sess AND e.failed_at IS NOT NULL AND e.processed_at IS NULL
	 ORDER BY random() LIMIT 1;
	IF random() < 0.3 THEN
		evs := a2_redrive(sess)->'events';
		PERFORM stress_count(c, 'redrive_session', jsonb_array_length(evs) || ' events');
	ELSIF dead IS NULL THEN
		PERFORM stress_count(c, 'redrive', 'nothing dead');
		RETURN;
	ELSE
		BEGIN
			res := a2_redrive(sess, dead);
		EXCEPTION WHEN SQLSTATE 'Z2004' THEN
			PERFORM stress_count(c, 'redrive', 'Z2004');
			RETURN;
		END;
		IF res->>'outcome' NOT IN ('redriven', 'already_redriven') THEN
			PERFORM stress_fail(format('redrive returned %s', res));
		END IF;
		PERFORM stress_count(c, 'redrive', res->>'outcome');
		IF res->>'outcome' = 'already_redriven' THEN
			RETURN;
		END IF;
		evs := jsonb_build_array(res->'event');
	END IF;
	FOR ev IN SELECT * FROM jsonb_array_elements(evs) LOOP
		IF ev->'failedAt' <> 'null' OR (ev->>'failureCount')::integer <> 0
		   OR ev->'processedAt' <> 'null' OR ev->'claimHolder' <> 'null'
		   OR ev->>'sessionId' IS DISTINCT FROM sess THEN
			PERFORM stress_fail(format('redrive returned the event %s', ev));
		END IF;
		-- no longer dead-lettered: the client's record of the death goes
		DELETE FROM stress_finished f
		 WHERE f.session_id = sess AND f.idx = (ev->>'index')::bigint
		   AND f.outcome = 'dead_lettered';
		INSERT INTO stress_redrives (session_id, idx, attempt, client)
		VALUES (sess, (ev->>'index')::bigint, (ev->>'attemptCount')::integer, c);
	END LOOP;
END $$;

-- The attempt count of an event, read after an a2 call that locked its row
-- in this transaction (so nobody can have changed it since).
CREATE FUNCTION stress_attempt_count(sess text, i bigint) RETURNS integer
LANGUAGE sql AS $$
	SELECT attempt_count FROM a2_events WHERE session_id = sess AND idx = i;
$$;

-- Whether a2_cancel cancelled the event (read like stress_attempt_count):
-- its live attempt is superseded without a later claim.
CREATE FUNCTION stress_cancelled(sess text, i bigint) RETURNS boolean
LANGUAGE sql AS $$
	SELECT cancelled_at IS NOT NULL FROM a2_events WHERE session_id = sess AND idx = i;
$$;

-- A completion the client saw commit.
CREATE FUNCTION stress_check_completed(c integer, cl stress_claims,
									   children jsonb, res jsonb)
RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	PERFORM stress_record_events(c, cl.session_id, children, res->'events',
		jsonb_build_object('index', cl.idx, 'attempt', cl.attempt), NOT cl.done);
	INSERT INTO stress_finished (session_id, idx, attempt, outcome)
	VALUES (cl.session_id, cl.idx, cl.attempt, 'completed')
	ON CONFLICT DO NOTHING;
END $$;

-- Act on one remembered attempt: complete, fail, renew, append a caused
-- event and complete, probe with a stale attempt, or walk away.
CREATE FUNCTION stress_work(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	cl stress_claims;
	r float8 := random();
	res jsonb;
	kids jsonb;
	caused jsonb;
	appended boolean;
	probe integer;
	backoff bigint;
	now_t timestamptz;
BEGIN
	SELECT * INTO cl FROM stress_claims WHERE client = c ORDER BY random() LIMIT 1;
	IF NOT FOUND THEN
		PERFORM stress_claim(c, s);
		RETURN;
	END IF;

	IF cl.done THEN
		-- idempotent retry of a committed completion: same children back
		res := a2_complete(cl.session_id, cl.idx, cl.attempt, cl.children);
		IF res->>'outcome' <> 'completed' THEN
			PERFORM stress_fail(format('%s/%s attempt %s: retry of a committed completion returned %s',
									   cl.session_id, cl.idx, cl.attempt, res));
		END IF;
		PERFORM stress_check_completed(c, cl, cl.children, res);
		DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
		PERFORM stress_count(c, 'complete', 'retried');
		RETURN;
	END IF;

	IF r < 0.40 THEN
		kids := stress_children(c);
		res := a2_complete(cl.session_id, cl.idx, cl.attempt, kids);
		IF res->>'outcome' = 'completed' THEN
			PERFORM stress_check_completed(c, cl, kids, res);
			IF random() < 0.3 THEN
				UPDATE stress_claims SET done = true, children = kids
				 WHERE client = c AND seq = cl.seq;
			ELSE
				DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
			END IF;
			PERFORM stress_count(c, 'complete', 'completed');
		ELSIF res->>'outcome' = 'superseded' THEN
			-- only a later claim supersedes an attempt nobody else knows
			IF stress_attempt_count(cl.session_id, cl.idx) <= cl.attempt
			   AND NOT stress_cancelled(cl.session_id, cl.idx) THEN
				PERFORM stress_fail(format('%s/%s attempt %s: superseded but still current',
										   cl.session_id, cl.idx, cl.attempt));
			END IF;
			DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
			PERFORM stress_count(c, 'complete', 'superseded');
		ELSE
			PERFORM stress_fail(format('complete returned %s', res));
		END IF;

	ELSIF r < 0.55 THEN
		-- backoff (SPEC 7.1) now and then: NULL and 0 re-offer at once, a
		-- failed outcome with more is due at exactly now + retry_after_ms
		backoff := (ARRAY[NULL, NULL, 0, 1, 10, 100, 1000, 3000])[1 + floor(random() * 8)];
		IF backoff > 0 THEN
			now_t := date_trunc('milliseconds', clock_timestamp());
			PERFORM set_config('a2.now', now_t::text, true);
		END IF;
		res := a2_fail(cl.session_id, cl.idx, cl.attempt, 'stress failure', 2, backoff);
		IF res->>'outcome' = 'failed' AND backoff > 0
		   AND (SELECT e.not_before FROM a2_events e WHERE e.session_id = cl.session_id AND e.idx = cl.idx)
			   IS DISTINCT FROM (extract(epoch FROM now_t) * 1000)::bigint + backoff THEN
			PERFORM stress_fail(format('%s/%s attempt %s: failed with retry_after_ms %s at %s, not_before %s',
									   cl.session_id, cl.idx, cl.attempt, backoff, now_t,
									   (SELECT e.not_before FROM a2_events e
										 WHERE e.session_id = cl.session_id AND e.idx = cl.idx)));
		END IF;
		CASE res->>'outcome'
		WHEN 'failed', 'dead_lettered' THEN
			IF res->>'outcome' = 'dead_lettered' THEN
				INSERT INTO stress_finished (session_id, idx, attempt, outcome)
				VALUES (cl.session_id, cl.idx, cl.attempt, 'dead_lettered');
			END IF;
		WHEN 'superseded' THEN
			IF stress_attempt_count(cl.session_id, cl.idx) <= cl.attempt
			   AND NOT stress_cancelled(cl.session_id, cl.idx) THEN
				PERFORM stress_fail(format('%s/%s attempt %s: fail superseded but still current',
										   cl.session_id, cl.idx, cl.attempt));
			END IF;
		ELSE
			PERFORM stress_fail(format('fail returned %s', res));
		END CASE;
		DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
		PERFORM stress_count(c, 'fail', res->>'outcome');

	ELSIF r < 0.65 THEN
		res := a2_renew(cl.session_id, 'c' || c,
						jsonb_build_array(jsonb_build_object('index', cl.idx, 'attempt', cl.attempt)),
						(ARRAY[1, 10, 100, 1000])[1 + floor(random() * 4)]);
		IF res->'renewed' = jsonb_build_array(cl.idx) AND res->'superseded' = '[]' THEN
			PERFORM stress_count(c, 'renew', 'renewed');
		ELSIF res->'superseded' = jsonb_build_array(cl.idx) AND res->'renewed' = '[]' THEN
			IF stress_attempt_count(cl.session_id, cl.idx) <= cl.attempt
			   AND NOT stress_cancelled(cl.session_id, cl.idx) THEN
				PERFORM stress_fail(format('%s/%s attempt %s: renew superseded but still current',
										   cl.session_id, cl.idx, cl.attempt));
			END IF;
			DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
			PERFORM stress_count(c, 'renew', 'superseded');
		ELSIF res = '{"renewed": [], "superseded": []}' THEN
			-- lease expired but not re-claimed: still completable
			PERFORM stress_count(c, 'renew', 'expired');
		ELSE
			PERFORM stress_fail(format('renew returned %s', res));
		END IF;

	ELSIF r < 0.80 THEN
		-- a handler: append a caused event, then complete, one transaction
		caused := jsonb_build_array(stress_new_event(c, 'caused')
			|| jsonb_build_object('cause', jsonb_build_object('index', cl.idx, 'attempt', cl.attempt)));
		BEGIN
			res := a2_append(cl.session_id, caused);
			PERFORM stress_record_events(c, cl.session_id, caused, res->'events',
				jsonb_build_object('index', cl.idx, 'attempt', cl.attempt));
			appended := true;
			PERFORM stress_count(c, 'append_caused', 'appended');
		EXCEPTION WHEN SQLSTATE 'Z2002' THEN
			appended := false;
			PERFORM stress_count(c, 'append_caused', 'Z2002');
		END;
		kids := stress_children(c);
		res := a2_complete(cl.session_id, cl.idx, cl.attempt, kids);
		IF res->>'outcome' = 'completed' AND appended THEN
			PERFORM stress_check_completed(c, cl, kids, res);
			PERFORM stress_count(c, 'complete_after_append', 'completed');
		ELSIF res->>'outcome' = 'superseded' AND NOT appended THEN
			PERFORM stress_count(c, 'complete_after_append', 'superseded');
		ELSIF res->>'outcome' = 'superseded' AND stress_cancelled(cl.session_id, cl.idx) THEN
			-- the append fence checks the attempt only (as after a
			-- completion): a cancelled event's attempt passes it, and its
			-- completion is superseded (docs/semantics.md, "Cancel")
			PERFORM stress_count(c, 'complete_after_append', 'cancelled');
		ELSE
			-- the append passed the fence and holds the row, so the attempt
			-- is current and must complete; a refused one (Z2002) is never
			-- current again, so it must not
			PERFORM stress_fail(format('%s/%s attempt %s: complete after append returned %s',
									   cl.session_id, cl.idx, cl.attempt, res));
		END IF;
		DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;

	ELSIF r < 0.88 AND cl.attempt > 1 THEN
		-- an older attempt of an event this client re-claimed is never
		-- current again: every fenced call must refuse it
		probe := floor(random() * 3);
		IF probe = 0 THEN
			res := a2_complete(cl.session_id, cl.idx, cl.attempt - 1, '[]');
			IF res->>'outcome' <> 'superseded' THEN
				PERFORM stress_fail(format('%s/%s: complete by stale attempt %s returned %s',
										   cl.session_id, cl.idx, cl.attempt - 1, res));
			END IF;
			PERFORM stress_count(c, 'stale_complete', 'superseded');
		ELSIF probe = 1 THEN
			res := a2_fail(cl.session_id, cl.idx, cl.attempt - 1, 'stale', 3,
						   (ARRAY[NULL, 0, 5000])[1 + floor(random() * 3)]::bigint);
			IF res->>'outcome' <> 'superseded' THEN
				PERFORM stress_fail(format('%s/%s: fail by stale attempt %s returned %s',
										   cl.session_id, cl.idx, cl.attempt - 1, res));
			END IF;
			PERFORM stress_count(c, 'stale_fail', 'superseded');
		ELSE
			BEGIN
				res := a2_append(cl.session_id, jsonb_build_array(
					stress_new_event(c, 'stale') || jsonb_build_object('cause',
						jsonb_build_object('index', cl.idx, 'attempt', cl.attempt - 1))));
				PERFORM stress_fail(format('%s/%s: append caused by stale attempt %s passed the fence: %s',
										   cl.session_id, cl.idx, cl.attempt - 1, res));
			EXCEPTION WHEN SQLSTATE 'Z2002' THEN
				PERFORM stress_count(c, 'stale_append', 'Z2002');
			END;
		END IF;

	ELSE
		-- walk away: the lease expires and someone else re-claims
		DELETE FROM stress_claims WHERE client = c AND seq = cl.seq;
		PERFORM stress_count(c, 'abandon', 'abandoned');
	END IF;
END $$;

-- Append to a session: plain batches, caused events racing the parent's
-- next claim, exact replays, and probes that must be refused.
CREATE FUNCTION stress_append(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	r float8 := random();
	b stress_batches;
	batch jsonb;
	res jsonb;
	parent record;
	cause jsonb;
	idxs bigint[];
	low bigint;
BEGIN
	-- now and then a fixed store clock: then "notBefore = now" is exact
	IF random() < 0.25 THEN
		PERFORM set_config('a2.now', date_trunc('milliseconds', clock_timestamp())::text, true);
	END IF;
	IF r < 0.14 THEN
		SELECT * INTO b FROM stress_batches WHERE client = c
		 ORDER BY seq DESC OFFSET floor(random() * 8) LIMIT 1;
		IF FOUND THEN
			IF r < 0.06 THEN
				-- exact replay (even with a stale cause): the stored events
				res := a2_append(b.session_id, b.batch);
				IF ARRAY(SELECT (e->>'index')::bigint
						   FROM jsonb_array_elements(res->'events') e) <> b.indexes
				   OR ARRAY(SELECT e->>'id' FROM jsonb_array_elements(res->'events') e)
					  <> ARRAY(SELECT e->>'id' FROM jsonb_array_elements(b.batch) e)
				THEN
					PERFORM stress_fail(format('replay of %s in %s returned %s',
											   b.batch, b.session_id, res));
				END IF;
				PERFORM stress_count(c, 'append', 'replayed');
			ELSIF r < 0.09 AND NOT a2_is_distributed() THEN
				-- a stored id sent to another session (distributed mode
				-- accepts it: ids are unique per session there)
				BEGIN
					res := a2_append(stress_session(1 + (s % 8)) || '-other',
									 jsonb_build_array(b.batch->0));
					PERFORM stress_fail(format('id %s appended to a second session: %s',
											   b.batch->0->>'id', res));
				EXCEPTION WHEN SQLSTATE 'Z2001' THEN
					PERFORM stress_count(c, 'foreign_id', 'Z2001');
				END;
			ELSE
				-- a stored event next to a fresh one: a partial replay
				BEGIN
					res := a2_append(b.session_id, jsonb_build_array(b.batch->0,
									 stress_new_event(c, 'fresh')));
					PERFORM stress_fail(format('partial replay accepted in %s: %s',
											   b.session_id, res));
				EXCEPTION WHEN SQLSTATE 'Z2001' THEN
					PERFORM stress_count(c, 'partial_replay', 'Z2001');
				END;
			END IF;
			RETURN;
		END IF;
	ELSIF r < 0.17 THEN
		-- a cause naming no event
		BEGIN
			res := a2_append(sess, jsonb_build_array(stress_new_event(c, 'orphan')
				|| '{"cause": {"index": 1000000000000, "attempt": 1}}'));
			PERFORM stress_fail(format('append caused by a missing event accepted: %s', res));
		EXCEPTION WHEN SQLSTATE 'Z2003' THEN
			PERFORM stress_count(c, 'missing_parent', 'Z2003');
		END;
		RETURN;
	ELSIF r < 0.35 THEN
		-- caused by the current attempt of a random claimed event, read
		-- without a lock: a claim in between makes it stale (Z2002)
		SELECT floor(random() * COALESCE(max(m.idx), 0)) INTO low
		  FROM a2_events m WHERE m.session_id = sess;
		SELECT e.idx, e.attempt_count INTO parent FROM a2_events e
		 WHERE e.session_id = sess AND e.attempt_count > 0 AND e.idx >= low
		 ORDER BY e.idx LIMIT 1;
		IF FOUND THEN
			cause := jsonb_build_object('index', parent.idx, 'attempt', parent.attempt_count);
			IF random() < 0.3 THEN
				cause := cause || '{"batchSize": 2}';
			END IF;
			batch := jsonb_build_array(stress_new_event(c, 'caused') || jsonb_build_object('cause', cause));
			BEGIN
				res := a2_append(sess, batch);
				idxs := stress_record_events(c, sess, batch, res->'events', cause);
				INSERT INTO stress_batches (client, session_id, batch, indexes)
				VALUES (c, sess, batch, idxs);
				PERFORM stress_count(c, 'append_caused', 'appended');
			EXCEPTION WHEN SQLSTATE 'Z2002' THEN
				PERFORM stress_count(c, 'append_caused', 'Z2002');
			END;
			RETURN;
		END IF;
	END IF;

	batch := stress_new_events(c, 'plain', 1 + floor(random() * 3)::integer);
	res := a2_append(sess, batch);
	idxs := stress_record_events(c, sess, batch, res->'events', NULL);
	IF NOT (res->>'hasPending')::boolean
	   AND EXISTS (SELECT 1 FROM jsonb_array_elements(batch) e
				    WHERE NOT COALESCE((e->>'settled')::boolean, false)) THEN
		PERFORM stress_fail(format('hasPending false after appending unsettled events: %s', res));
	END IF;
	INSERT INTO stress_batches (client, session_id, batch, indexes)
	VALUES (c, sess, batch, idxs);
	PERFORM stress_count(c, 'append', 'appended');
END $$;

-- Reducer checkpoints pinned by unfinished (and some finished or missing)
-- events, around the head.
CREATE FUNCTION stress_snapshot(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	reducer text := 'r' || (1 + floor(random() * 2));
	mx bigint;
	writes jsonb := '[]';
	pins jsonb;
	idx bigint;
	top bigint := -1;
	head jsonb;
	bad bigint;
BEGIN
	SELECT COALESCE(max(e.idx), 0) INTO mx FROM a2_events e WHERE e.session_id = sess;
	FOR w IN 1 .. 1 + floor(random() * 3)::integer LOOP
		idx := greatest(0, mx - floor(random() * 8)::bigint + 1);
		CONTINUE WHEN writes @> jsonb_build_array(jsonb_build_object('index', idx));
		SELECT COALESCE(jsonb_agg(p.idx), '[]') INTO pins FROM (
			SELECT e.idx FROM a2_events e
			 WHERE e.session_id = sess AND e.processed_at IS NULL AND e.failed_at IS NULL
			 ORDER BY random() LIMIT floor(random() * 4)::integer) p;
		IF random() < 0.2 THEN
			pins := pins || to_jsonb(1 + floor(random() * greatest(mx, 1))::bigint);
		END IF;
		IF random() < 0.1 THEN
			pins := pins || to_jsonb(mx + 100);
		END IF;
		writes := writes || jsonb_build_object('index', idx,
			'state', jsonb_build_object('by', c, 'at', idx),
			'pinEventIndexes', pins);
		top := greatest(top, idx);
	END LOOP;

	PERFORM a2_put_snapshots(sess, reducer, writes);

	-- the session lock is ours until commit: nothing can finish meanwhile
	head := a2_read_state(sess, reducer, NULL, NULL);
	IF (head->>'headIndex')::bigint < top THEN
		PERFORM stress_fail(format('%s/%s: head %s after writing %s', sess, reducer,
								   head->>'headIndex', writes));
	END IF;
	SELECT count(*) INTO bad FROM a2_snapshot_pins p
	  LEFT JOIN a2_events e ON e.session_id = p.session_id AND e.idx = p.event_index
	 WHERE p.session_id = sess
	   AND (e.idx IS NULL OR e.processed_at IS NOT NULL OR e.failed_at IS NOT NULL);
	IF bad > 0 THEN
		PERFORM stress_fail(format('%s: %s pins on finished or missing events after put_snapshots %s',
								   sess, bad, writes));
	END IF;
	PERFORM stress_count(c, 'put_snapshots', 'ok');
END $$;

-- Reads: a committed prefix of a session is dense, and a state read
-- resumes right after its checkpoint.
CREATE FUNCTION stress_read(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	mx bigint;
	after bigint;
	res jsonb;
	snap bigint;
	through bigint;
BEGIN
	SELECT COALESCE(max(e.idx), 0) INTO mx FROM a2_events e WHERE e.session_id = sess;
	after := floor(random() * (mx + 1));
	res := a2_read(sess, after, NULL, 50);
	IF EXISTS (SELECT 1 FROM jsonb_array_elements(res) WITH ORDINALITY AS x(e, n)
				WHERE (e->>'index')::bigint <> after + n OR e->>'sessionId' <> sess) THEN
		PERFORM stress_fail(format('%s: read after %s is not dense: %s', sess, after,
								   (SELECT jsonb_agg(e->'index') FROM jsonb_array_elements(res) e)));
	END IF;
	IF mx > after AND jsonb_array_length(res) = 0 THEN
		PERFORM stress_fail(format('%s: read after %s is empty below %s', sess, after, mx));
	END IF;

	through := CASE WHEN random() < 0.5 THEN NULL ELSE floor(random() * (mx + 2)) END;
	res := a2_read_states(jsonb_build_array(
		jsonb_build_object('sessionId', sess, 'throughIndex', through),
		jsonb_build_object('sessionId', sess || '-none')), 'r' || (1 + floor(random() * 2)));
	IF jsonb_array_length(res) <> 2 OR res->1 <> '{"headIndex": null, "snapshot": null, "events": []}' THEN
		PERFORM stress_fail(format('%s: read_states returned %s', sess, res));
	END IF;
	res := res->0;
	snap := COALESCE((res->'snapshot'->>'index')::bigint, 0);
	IF (through IS NOT NULL AND snap > through)
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(res->'events') WITH ORDINALITY AS x(e, n)
				   WHERE (e->>'index')::bigint <> snap + n
				      OR (through IS NOT NULL AND (e->>'index')::bigint > through)) THEN
		PERFORM stress_fail(format('%s: read_state through %s does not resume after its snapshot: %s',
								   sess, through, res));
	END IF;
	PERFORM stress_count(c, 'read', 'ok');
END $$;

-- Retiring sessions (issue 10) ---------------------------------------------
--
-- A small pool of sessions of their own ('stress-retire-0..2'), appended
-- to, claimed, completed and dropped (a2_drop_session with and without
-- force, a2_drop_finished_sessions) by every client at once.  Their store
-- clock runs 30 years behind the wall clock (a2.now, transaction-local),
-- so the batch drop's idle cutoff selects only them, never the main
-- sessions, while its walk still visits every session.

-- Every event a client saw appended to a retire session.  UNIQUE (session,
-- idx): an index handed out twice, across drops, fails the run at once.
CREATE TABLE stress_retire_seen (
	event_id	text	PRIMARY KEY,
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	client		integer NOT NULL,
	UNIQUE (session_id, idx)
);

-- Every drop a client saw commit, with the mark it reported.
CREATE TABLE stress_drops (
	seq			bigserial PRIMARY KEY,
	client		integer NOT NULL,
	session_id	text	NOT NULL,
	last_index	bigint,
	forced		boolean NOT NULL
);

CREATE SEQUENCE stress_retire_ids;

CREATE FUNCTION stress_retire(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := 'stress-retire-' || (s % 3);
	r double precision := random();
	res jsonb;
	ev jsonb;
	mark bigint;
	n bigint;
BEGIN
	PERFORM set_config('a2.now', (clock_timestamp() - interval '30 years')::text, true);
	IF r < 0.35 THEN
		res := a2_append(sess, jsonb_build_array(
			jsonb_build_object('id', 'sr-' || nextval('stress_retire_ids'), 'type', 'r',
							   'settled', random() < 0.3),
			jsonb_build_object('id', 'sr-' || nextval('stress_retire_ids'), 'type', 'r',
							   'settled', true)));
		-- under the session lock this append holds, no drop can commit
		-- in between: the mark read now is the one the append saw
		mark := COALESCE(a2_retired_last_index(sess), 0);
		FOR ev IN SELECT e FROM jsonb_array_elements(res->'events') e LOOP
			IF (ev->>'index')::bigint <= mark THEN
				PERFORM stress_fail(format('%s: append got index %s, at or below the mark %s',
										   sess, ev->>'index', mark));
			END IF;
			INSERT INTO stress_retire_seen VALUES (ev->>'id', sess, (ev->>'index')::bigint, c);
		END LOOP;
		PERFORM stress_count(c, 'retire_append', 'ok');
	ELSIF r < 0.50 THEN
		-- short leases, left to expire or be completed by the next branch
		res := a2_claim(sess, 'retire-' || c, 200);
		-- recorded like the main claims: none twice, even across drops
		INSERT INTO stress_attempts (session_id, idx, attempt, client)
		SELECT sess, (e->>'index')::bigint, (e->>'attemptCount')::int, c
		  FROM jsonb_array_elements(res->'events') e;
		PERFORM stress_count(c, 'retire_claim', res->>'outcome');
	ELSIF r < 0.70 THEN
		-- complete some leased event; a drop may remove it after the read
		SELECT e INTO ev FROM jsonb_array_elements(a2_read(sess)) e
		 WHERE e->>'processedAt' IS NULL AND e->>'failedAt' IS NULL
		   AND (e->>'attemptCount')::int > 0
		 ORDER BY random() LIMIT 1;
		IF ev IS NULL THEN
			PERFORM stress_count(c, 'retire_complete', 'nothing');
			RETURN;
		END IF;
		BEGIN
			res := a2_complete(sess, (ev->>'index')::bigint, (ev->>'attemptCount')::int);
			PERFORM stress_count(c, 'retire_complete', res->>'outcome');
		EXCEPTION WHEN SQLSTATE 'Z2003' THEN
			PERFORM stress_count(c, 'retire_complete', 'Z2003');
		END;
	ELSIF r < 0.85 THEN
		BEGIN
			res := a2_drop_session(sess);
			INSERT INTO stress_drops (client, session_id, last_index, forced)
			VALUES (c, sess, (res->>'lastIndex')::bigint, false);
			PERFORM stress_count(c, 'retire_drop', 'dropped');
		EXCEPTION WHEN SQLSTATE 'Z2010' THEN
			PERFORM stress_count(c, 'retire_drop', 'Z2010');
		END;
	ELSIF r < 0.95 AND NOT a2_is_distributed() THEN
		-- (distributed mode refuses it: it spans sessions)
		n := a2_drop_finished_sessions(0, 2);
		PERFORM stress_count(c, 'retire_drop_finished', n::text);
	ELSE
		res := a2_drop_session(sess, true);
		INSERT INTO stress_drops (client, session_id, last_index, forced)
		VALUES (c, sess, (res->>'lastIndex')::bigint, true);
		PERFORM stress_count(c, 'retire_drop', 'forced');
	END IF;
END $$;

-- Cancel one unfinished event of the session (once in 30 calls all of them):
-- what comes back is cancelled by no attempt at the cancel time, and a
-- second cancel of the same event changes nothing.
CREATE FUNCTION stress_cancel(c integer, s integer) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
	sess text := stress_session(s);
	target bigint;
	res jsonb;
	ev jsonb;
BEGIN
	SELECT e.idx INTO target FROM a2_events e
	 WHERE e.session_id = sess AND e.processed_at IS NULL
	 ORDER BY random() LIMIT 1;
	BEGIN
		IF random() < 0.03 THEN
			res := a2_cancel(sess, NULL, 'stress: all');
		ELSIF target IS NULL THEN
			PERFORM stress_count(c, 'cancel', 'nothing unfinished');
			RETURN;
		ELSE
			res := a2_cancel(sess, ARRAY[target], 'stress: c' || c);
		END IF;
	EXCEPTION WHEN SQLSTATE 'Z2003' THEN
		-- the session was dropped since the event was picked
		PERFORM stress_count(c, 'cancel', 'Z2003');
		RETURN;
	END;
	FOR ev IN SELECT * FROM jsonb_array_elements(res->'cancelled') LOOP
		IF ev->>'cancelledAt' IS NULL OR ev->>'processedAt' IS DISTINCT FROM ev->>'cancelledAt'
		   OR ev->'processedByAttempt' <> 'null' OR ev->'returnedEventIds' <> 'null'
		   OR ev->'claimHolder' <> 'null' OR ev->>'sessionId' IS DISTINCT FROM sess THEN
			PERFORM stress_fail(format('cancel returned the event %s', ev));
		END IF;
		INSERT INTO stress_cancels (session_id, idx) VALUES (sess, (ev->>'index')::bigint);
	END LOOP;
	IF target IS NOT NULL AND random() < 0.3
	   AND a2_cancel(sess, ARRAY[target], 'again')->'cancelled' <> '[]' THEN
		PERFORM stress_fail(format('%s/%s: a second cancel cancelled again', sess, target));
	END IF;
	PERFORM stress_count(c, 'cancel', CASE WHEN res->'cancelled' = '[]' THEN 'finished already'
										   WHEN target IS NULL OR jsonb_array_length(res->'cancelled') > 1
										   THEN 'cancelled all' ELSE 'cancelled' END);
END $$;
