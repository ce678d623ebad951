/*
 * test/stress/limits.sql
 *	  The dispatch-control phase of the stress suite (test/suites/20-stress.sh,
 *	  after the main run): queues, priorities, concurrency and rate limits
 *	  and pause/resume under concurrent claimers (test/stress/limits.pgbench),
 *	  with the invariant "never over a concurrency limit" checked after
 *	  every claim, by every client, with a fresh snapshot of the committed
 *	  state, and at the end.
 *
 *	  Keys lk-1 .. lk-4 have concurrency limits 1 .. 4 (lk-2 also a rate
 *	  limit of 5 claims per 200 ms); events sit in queues lq-a, lq-b and
 *	  the default queue, at priorities -1 .. 2.  Leases are short (50 ..
 *	  300 ms of the wall clock) so that expiry frees slots while claims run.
 *	  A violation raises ZS000 (pgbench then fails the run).
 */
\set ON_ERROR_STOP 1

CREATE TABLE lstress_max (key text PRIMARY KEY, max_leased integer NOT NULL);
INSERT INTO lstress_max VALUES ('lk-1', 1), ('lk-2', 2), ('lk-3', 3), ('lk-4', 4);
SELECT a2_set_concurrency_limit(key, max_leased) FROM lstress_max;
SELECT a2_set_rate_limit('lk-2', 5, 200);

-- the worst committed count seen per key, for the summary
CREATE TABLE lstress_seen (key text PRIMARY KEY, worst integer NOT NULL DEFAULT 0);
INSERT INTO lstress_seen SELECT key, 0 FROM lstress_max;

-- Live leases per key now, against the limits; raises ZS000 when over.
CREATE FUNCTION lstress_check() RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	r record;
BEGIN
	FOR r IN
		SELECT m.key, m.max_leased,
			   (SELECT count(*) FROM a2_events e
				 WHERE e.concurrency_key = m.key AND e.processed_at IS NULL AND e.failed_at IS NULL
				   AND e.claim_expires_at > a2_now_ms()) AS leased
		  FROM lstress_max m
	LOOP
		IF r.leased > r.max_leased THEN
			RAISE EXCEPTION 'key % has % live leases, limit %', r.key, r.leased, r.max_leased
				USING ERRCODE = 'ZS000';
		END IF;
	END LOOP;
END $$;

-- Keep work coming: a session with a few keyed and unkeyed events.
CREATE FUNCTION lstress_append(s integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM a2_append('ls-' || s, jsonb_build_array(
		jsonb_build_object('type', 't', 'queue', (ARRAY['lq-a', 'lq-b', 'default'])[1 + s % 3],
						   'priority', (s % 4) - 1, 'concurrencyKey', 'lk-' || (1 + s % 4)),
		jsonb_build_object('type', 'u', 'queue', (ARRAY['lq-a', 'lq-b', 'default'])[1 + (s + 1) % 3],
						   'concurrencyKey', 'lk-' || (1 + (s + 1) % 4)),
		jsonb_build_object('type', 'v', 'queue', 'lq-b', 'lane', 'L')));
END $$;

-- Claim in a random subset of queues, then check the invariant in a new
-- statement (READ COMMITTED: a fresh snapshot that includes this claim).
-- The default queue holds the main run's work too: every attempt is
-- recorded in stress_attempts (setup.sql), whose primary key fails a claim
-- of an attempt twice and which the invariant checker holds the store to.
CREATE FUNCTION lstress_claim(c integer, r integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	qs text[] := CASE r % 4 WHEN 0 THEN NULL WHEN 1 THEN ARRAY['lq-a'] WHEN 2 THEN ARRAY['lq-b', 'default']
				 ELSE ARRAY['lq-a', 'lq-b'] END;
	res jsonb;
BEGIN
	res := a2_claim_next('lc-' || c, 50 + (r % 6) * 50, 1 + r % 3, NULL, qs);
	INSERT INTO stress_attempts (session_id, idx, attempt, client)
	SELECT cl->>'sessionId', (e->>'index')::bigint, (e->>'attemptCount')::integer, c
	  FROM jsonb_array_elements(res->'claims') cl, jsonb_array_elements(cl->'events') e;
END $$;

-- Complete every live lease this client holds in one session (one session
-- lock per transaction, as the main stress driver does).
CREATE FUNCTION lstress_complete(c integer) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
	e record;
BEGIN
	SELECT x.session_id, x.idx, x.attempt_count INTO e FROM a2_events x
	 WHERE x.claim_holder = 'lc-' || c AND x.processed_at IS NULL AND x.claim_expires_at > a2_now_ms()
	 LIMIT 1;
	IF FOUND THEN
		PERFORM a2_complete(e.session_id, e.idx, e.attempt_count, '[]');
	END IF;
EXCEPTION WHEN SQLSTATE 'Z2003' THEN
	NULL;	-- not expected, but the session may have been dropped: nothing else drops here
END $$;

CREATE FUNCTION lstress_pause(r integer) RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	IF r % 2 = 0 THEN
		PERFORM a2_pause_queue('lq-a');
	ELSE
		PERFORM a2_resume_queue('lq-a');
	END IF;
END $$;

CREATE FUNCTION lstress_probe() RETURNS void LANGUAGE plpgsql AS $$
BEGIN
	PERFORM lstress_check();
	UPDATE lstress_seen s SET worst = GREATEST(s.worst, (
		SELECT count(*) FROM a2_events e
		 WHERE e.concurrency_key = s.key AND e.processed_at IS NULL AND e.failed_at IS NULL
		   AND e.claim_expires_at > a2_now_ms()))
	 WHERE s.key = 'lk-' || (1 + (pg_backend_pid() % 4));
END $$;

SELECT lstress_append(s) FROM generate_series(1, 40) s;
