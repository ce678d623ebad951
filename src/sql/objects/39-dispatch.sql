-- Dispatch control (0.4.0): queues, priorities, concurrency and rate
-- limits per key, pause and resume (docs/semantics.md, "Queues, priorities
-- and limits"; docs/functions.md).  The columns are a2_events.queue,
-- priority and concurrency_key (10-tables.sql); the claim side is C
-- (src/limits.c, src/dispatch_walk.c).

-- Queues an operator has paused.  A queue needs no row to exist: an event
-- names it.  Claims skip a paused queue; nothing else changes.
CREATE TABLE a2_queues (
	queue		text	PRIMARY KEY,
	paused		boolean NOT NULL DEFAULT false,
	paused_at	bigint,
	CHECK (pg_catalog.octet_length(queue) BETWEEN 1 AND 1024)
);
SELECT pg_catalog.pg_extension_config_dump('a2_queues', '');

COMMENT ON TABLE a2_queues IS
'Queues with a setting (paused); a2_pause_queue/a2_resume_queue write it.  A queue without a row is not paused.';

-- The limits per concurrency key.  max_leased: at most this many events
-- with the key are leased (lease live) at any instant.  rate_max per
-- rate_per_ms: at most rate_max claims of events with the key start in any
-- window (t - rate_per_ms, t] of the store clock.
CREATE TABLE a2_limits (
	key			text	PRIMARY KEY,
	max_leased	integer CHECK (max_leased >= 1),
	rate_max	integer CHECK (rate_max >= 1),
	rate_per_ms bigint	CHECK (rate_per_ms >= 1),
	CHECK ((rate_max IS NULL) = (rate_per_ms IS NULL)),
	CHECK (max_leased IS NOT NULL OR rate_max IS NOT NULL),
	CHECK (pg_catalog.octet_length(key) BETWEEN 1 AND 1024)
);
SELECT pg_catalog.pg_extension_config_dump('a2_limits', '');

COMMENT ON TABLE a2_limits IS
'Concurrency and rate limits per concurrency key (a2_set_concurrency_limit, a2_set_rate_limit).';

-- Every claim reads the paused queues, and a claim of an event with a key
-- reads the key's limits: readable by PUBLIC (settings, no payloads), so
-- a worker role granted the 0.3.0 set by hand keeps claiming after the
-- update.  Writing them takes the table privileges (the owner's, or what
-- an operator grants).
GRANT SELECT ON a2_queues, a2_limits TO PUBLIC;

-- The claims that started, per rate-limited key, in the last window: the
-- claim writes one row per event it claims with such a key and removes
-- the rows that left the window (src/limits.c).
CREATE TABLE a2_rate_claims (
	key			text	NOT NULL,
	claimed_at	bigint	NOT NULL
);
CREATE INDEX a2_rate_claims_key ON a2_rate_claims (key, claimed_at);

COMMENT ON TABLE a2_rate_claims IS
'When each recent claim of an event with a rate-limited key started (kept for one window; src/limits.c).';

-- The store clock (docs/semantics.md "Clock"; a2.now when set), in epoch
-- milliseconds, for the SQL functions below.
CREATE FUNCTION a2_now_ms()
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_now_ms'
LANGUAGE C VOLATILE PARALLEL SAFE;

COMMENT ON FUNCTION a2_now_ms() IS
'One reading of the store clock in epoch milliseconds: a2.now when set, else the wall clock.';

-- Called by the claim statements only (src/claim.c): whether the event
-- with this key may be claimed now, within its key's limits.  Takes the
-- key's try-lock; outside a claim it raises 55000.
CREATE FUNCTION a2_admit(key text, now_ms bigint)
RETURNS boolean
AS 'MODULE_PATHNAME', 'a2_admit'
LANGUAGE C VOLATILE PARALLEL UNSAFE COST 10000;

COMMENT ON FUNCTION a2_admit(text, bigint) IS
'Internal: called by a2_claim and a2_claim_next for each eligible event with a concurrency key; not for direct use.';

-- The controls and schedules are single-node only (docs/distributed.md): a
-- paused queue and a limit would have to be seen by claims on every node.
CREATE FUNCTION a2_refuse_distributed(caller text)
RETURNS void
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF @extschema@.a2_is_distributed() THEN
		RAISE EXCEPTION '% is not supported in distributed mode', caller
			USING ERRCODE = '0A000', DETAIL = 'Queues, priorities, limits and schedules are single-node features; see docs/distributed.md.';
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_refuse_distributed(text) IS
'Internal: raises 0A000 in distributed mode, naming the caller.';

CREATE FUNCTION a2_check_queue_name(queue text)
RETURNS void
LANGUAGE plpgsql IMMUTABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF queue IS NULL THEN
		RAISE EXCEPTION 'argument "queue" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(queue) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "queue" must be a non-empty string of at most 1024 bytes'
			USING ERRCODE = '22023';
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_check_queue_name(text) IS
'Internal: raises 22004 for a NULL queue name, 22023 for an empty one or one over 1024 bytes.';

CREATE FUNCTION a2_pause_queue(queue text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	was boolean;
BEGIN
	PERFORM @extschema@.a2_check_queue_name(queue);
	PERFORM @extschema@.a2_refuse_distributed('a2_pause_queue');
	SELECT q.paused INTO was FROM @extschema@.a2_queues q WHERE q.queue OPERATOR(pg_catalog.=) a2_pause_queue.queue;
	INSERT INTO @extschema@.a2_queues AS q (queue, paused, paused_at)
	VALUES (a2_pause_queue.queue, true, @extschema@.a2_now_ms())
	ON CONFLICT ON CONSTRAINT a2_queues_pkey DO UPDATE
		SET paused = true, paused_at = COALESCE(q.paused_at, excluded.paused_at);
	RETURN pg_catalog.jsonb_build_object('queue', queue, 'paused', true,
										 'changed', NOT COALESCE(was, false));
END
$fn$;

COMMENT ON FUNCTION a2_pause_queue(text) IS
'Pause a queue: a2_claim and a2_claim_next skip its events until a2_resume_queue; appends, renewals, completions and failures go on.  Idempotent; returns {queue, paused, changed}.';

CREATE FUNCTION a2_resume_queue(queue text)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	was boolean;
	now_ms bigint := @extschema@.a2_now_ms();
	r record;
	announced integer := 0;
BEGIN
	PERFORM @extschema@.a2_check_queue_name(queue);
	PERFORM @extschema@.a2_refuse_distributed('a2_resume_queue');
	DELETE FROM @extschema@.a2_queues q WHERE q.queue OPERATOR(pg_catalog.=) a2_resume_queue.queue
	RETURNING q.paused INTO was;
	IF COALESCE(was, false) THEN
		-- a due announcement per session with work available now, oldest
		-- first, at most 100 (a worker that hears one claims with
		-- a2_claim_next, which finds the rest)
		FOR r IN
			SELECT e.session_id, pg_catalog.max(e.idx) AS idx
			  FROM (SELECT x.session_id, x.idx FROM @extschema@.a2_events x
					 WHERE x.lane_ready AND x.processed_at IS NULL AND x.failed_at IS NULL
					   AND (x.queue IS NOT NULL OR x.priority IS NOT NULL)
					   AND x.queue IS NOT DISTINCT FROM NULLIF(a2_resume_queue.queue, 'default')
					   AND COALESCE(x.claim_expires_at, GREATEST(x.not_before, x.created_at)) OPERATOR(pg_catalog.<=) now_ms
					UNION ALL
					SELECT x.session_id, x.idx FROM @extschema@.a2_events x
					 WHERE x.lane_ready AND x.processed_at IS NULL AND x.failed_at IS NULL
					   AND x.queue IS NULL AND x.priority IS NULL
					   AND a2_resume_queue.queue OPERATOR(pg_catalog.=) 'default'
					   AND COALESCE(x.claim_expires_at, GREATEST(x.not_before, x.created_at)) OPERATOR(pg_catalog.<=) now_ms
					 LIMIT 1000) e
			 GROUP BY e.session_id
			 LIMIT 100
		LOOP
			PERFORM pg_catalog.pg_notify('a2_events',
				pg_catalog.format('{"sessionId": %s, "index": %s}', pg_catalog.to_json(r.session_id), r.idx));
			announced := announced OPERATOR(pg_catalog.+) 1;
		END LOOP;
	END IF;
	RETURN pg_catalog.jsonb_build_object('queue', queue, 'paused', false,
										 'changed', COALESCE(was, false), 'announced', announced);
END
$fn$;

COMMENT ON FUNCTION a2_resume_queue(text) IS
'Resume a paused queue: its work is claimable at once, and a due announcement (NOTIFY a2_events) goes out at commit for each of up to 100 sessions with work available in it.  Idempotent; returns {queue, paused, changed, announced}.';

-- Any change to a2_limits (by the setters below or by hand) ends every
-- parked key at the commit (src/key_park.c): a changed limit is applied
-- by the next claim.
CREATE FUNCTION a2_limits_changed()
RETURNS trigger
AS 'MODULE_PATHNAME', 'a2_limits_changed'
LANGUAGE C VOLATILE PARALLEL UNSAFE;

COMMENT ON FUNCTION a2_limits_changed() IS
'Internal: the statement trigger of a2_limits; a changed limit applies to the claims that start after the commit.  Not for direct use.';

CREATE TRIGGER a2_limits_changed
	AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON a2_limits
	FOR EACH STATEMENT EXECUTE FUNCTION @extschema@.a2_limits_changed();

CREATE FUNCTION a2_set_concurrency_limit(key text, max_leased integer)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM @extschema@.a2_refuse_distributed('a2_set_concurrency_limit');
	IF key IS NULL THEN
		RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(key) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "key" must be a non-empty string of at most 1024 bytes' USING ERRCODE = '22023';
	END IF;
	IF max_leased IS NOT NULL AND max_leased < 1 THEN
		RAISE EXCEPTION 'argument "max_leased" must be at least 1, not %', max_leased USING ERRCODE = '22023',
			HINT = 'Pass NULL to remove the limit.';
	END IF;
	IF max_leased IS NULL THEN
		DELETE FROM @extschema@.a2_limits l
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_concurrency_limit.key AND l.rate_max IS NULL;
		UPDATE @extschema@.a2_limits l SET max_leased = NULL WHERE l.key OPERATOR(pg_catalog.=) a2_set_concurrency_limit.key;
	ELSE
		INSERT INTO @extschema@.a2_limits AS l (key, max_leased) VALUES (key, max_leased)
		ON CONFLICT ON CONSTRAINT a2_limits_pkey DO UPDATE SET max_leased = excluded.max_leased;
	END IF;
	RETURN pg_catalog.jsonb_build_object('key', key, 'maxLeased', max_leased);
END
$fn$;

COMMENT ON FUNCTION a2_set_concurrency_limit(text, integer) IS
'At most max_leased events with this concurrency key are leased at any instant; claims skip the rest.  NULL removes the limit.  Returns {key, maxLeased}.';

CREATE FUNCTION a2_set_rate_limit(key text, max_claims integer, per_ms bigint)
RETURNS jsonb
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	PERFORM @extschema@.a2_refuse_distributed('a2_set_rate_limit');
	IF key IS NULL THEN
		RAISE EXCEPTION 'argument "key" must not be null' USING ERRCODE = '22004';
	END IF;
	IF pg_catalog.octet_length(key) NOT BETWEEN 1 AND 1024 THEN
		RAISE EXCEPTION 'argument "key" must be a non-empty string of at most 1024 bytes' USING ERRCODE = '22023';
	END IF;
	IF (max_claims IS NULL) <> (per_ms IS NULL) THEN
		RAISE EXCEPTION 'arguments "max_claims" and "per_ms" must both be null or both be set' USING ERRCODE = '22004',
			HINT = 'Pass NULL for both to remove the limit.';
	END IF;
	IF max_claims IS NOT NULL AND max_claims < 1 THEN
		RAISE EXCEPTION 'argument "max_claims" must be at least 1, not %', max_claims USING ERRCODE = '22023';
	END IF;
	IF per_ms IS NOT NULL AND per_ms < 1 THEN
		RAISE EXCEPTION 'argument "per_ms" must be at least 1, not %', per_ms USING ERRCODE = '22023';
	END IF;
	IF max_claims IS NULL THEN
		DELETE FROM @extschema@.a2_limits l
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_rate_limit.key AND l.max_leased IS NULL;
		UPDATE @extschema@.a2_limits l SET rate_max = NULL, rate_per_ms = NULL
		 WHERE l.key OPERATOR(pg_catalog.=) a2_set_rate_limit.key;
	ELSE
		INSERT INTO @extschema@.a2_limits AS l (key, rate_max, rate_per_ms) VALUES (key, max_claims, per_ms)
		ON CONFLICT ON CONSTRAINT a2_limits_pkey DO UPDATE
			SET rate_max = excluded.rate_max, rate_per_ms = excluded.rate_per_ms;
	END IF;
	RETURN pg_catalog.jsonb_build_object('key', key, 'maxClaims', max_claims, 'perMs', per_ms);
END
$fn$;

COMMENT ON FUNCTION a2_set_rate_limit(text, integer, bigint) IS
'At most max_claims claims of events with this concurrency key start in any window of per_ms milliseconds of the store clock; claims skip the rest.  NULL, NULL removes the limit.  Returns {key, maxClaims, perMs}.';

-- One row per queue that has unfinished work or a setting; counts from the
-- partial indexes of unfinished events (the cost of a2_metrics).
CREATE FUNCTION a2_list_queues()
RETURNS TABLE (queue text, paused boolean, available bigint, leased bigint,
			   scheduled bigint, oldest_available_at timestamptz, keys_at_limit text[])
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	WITH now AS (SELECT @extschema@.a2_now_ms() AS ms),
	w AS (
		SELECT COALESCE(e.queue, 'default') AS queue, e.concurrency_key,
			   e.claim_expires_at, e.not_before, e.created_at
		  FROM @extschema@.a2_events e
		 WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL
	), lim AS (
		SELECT l.key FROM @extschema@.a2_limits l, now
		 WHERE l.max_leased IS NOT NULL
		   AND (SELECT pg_catalog.count(*) FROM @extschema@.a2_events k
				 WHERE k.concurrency_key OPERATOR(pg_catalog.=) l.key AND k.processed_at IS NULL
				   AND k.failed_at IS NULL AND k.claim_expires_at IS NOT NULL
				   AND k.claim_expires_at OPERATOR(pg_catalog.>) now.ms) OPERATOR(pg_catalog.>=) l.max_leased
	), per AS (
		SELECT w.queue,
			   pg_catalog.count(*) FILTER (WHERE COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)) OPERATOR(pg_catalog.<=) now.ms) AS available,
			   pg_catalog.count(*) FILTER (WHERE w.claim_expires_at OPERATOR(pg_catalog.>) now.ms) AS leased,
			   pg_catalog.count(*) FILTER (WHERE w.claim_expires_at IS NULL AND w.not_before OPERATOR(pg_catalog.>) now.ms) AS scheduled,
			   pg_catalog.min(COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)))
				 FILTER (WHERE COALESCE(w.claim_expires_at, GREATEST(w.not_before, w.created_at)) OPERATOR(pg_catalog.<=) now.ms) AS oldest,
			   pg_catalog.array_agg(DISTINCT w.concurrency_key) FILTER (WHERE w.concurrency_key IN (SELECT lim.key FROM lim)) AS keys
		  FROM w, now GROUP BY w.queue
	)
	SELECT COALESCE(per.queue, q.queue), COALESCE(q.paused, false),
		   COALESCE(per.available, 0), COALESCE(per.leased, 0), COALESCE(per.scheduled, 0),
		   pg_catalog.to_timestamp(per.oldest / 1000.0), COALESCE(per.keys, '{}')
	  FROM per FULL JOIN @extschema@.a2_queues q ON q.queue OPERATOR(pg_catalog.=) per.queue
	 ORDER BY 1
$fn$;

COMMENT ON FUNCTION a2_list_queues() IS
'Each queue with unfinished work or a setting: whether it is paused, its available, leased and scheduled lane-ready events, the oldest available time, and the concurrency keys of its work that are at their limit.';

CREATE FUNCTION a2_list_limits()
RETURNS TABLE (key text, max_leased integer, leased bigint, rate_max integer, rate_per_ms bigint,
			   claims_in_window bigint, at_limit boolean)
LANGUAGE sql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
	WITH now AS (SELECT @extschema@.a2_now_ms() AS ms)
	SELECT l.key, l.max_leased, c.leased, l.rate_max, l.rate_per_ms, r.claims,
		   (l.max_leased IS NOT NULL AND c.leased OPERATOR(pg_catalog.>=) l.max_leased)
		   OR (l.rate_max IS NOT NULL AND r.claims OPERATOR(pg_catalog.>=) l.rate_max)
	  FROM @extschema@.a2_limits l CROSS JOIN now
	  CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS leased FROM @extschema@.a2_events k
		 WHERE k.concurrency_key OPERATOR(pg_catalog.=) l.key AND k.processed_at IS NULL
		   AND k.failed_at IS NULL AND k.claim_expires_at IS NOT NULL
		   AND k.claim_expires_at OPERATOR(pg_catalog.>) now.ms) c
	  CROSS JOIN LATERAL (
		SELECT pg_catalog.count(*) AS claims FROM @extschema@.a2_rate_claims x
		 WHERE l.rate_per_ms IS NOT NULL AND x.key OPERATOR(pg_catalog.=) l.key
		   AND x.claimed_at OPERATOR(pg_catalog.>) (now.ms OPERATOR(pg_catalog.-) l.rate_per_ms)) r
	 ORDER BY l.key
$fn$;

COMMENT ON FUNCTION a2_list_limits() IS
'Each concurrency key with a limit: the limits, its live leases, its claims in the current rate window, and whether it is at a limit now.';
