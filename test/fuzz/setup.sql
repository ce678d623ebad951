-- test/fuzz/setup.sql: the fuzz harness (run by test/suites/40-fuzz.sh).
--
-- Creates a2 and the schema a2_fuzz: the case and result tables, the
-- runner a2_fuzz.run(first, last), the result checker and a small seeded
-- population the generated calls act on (sessions fz:s1..fz:s3 with
-- processed, failed, dead-lettered, leased and laned events, snapshots
-- with history and pins, presence), plus one planted corrupt row in
-- session fz:corrupt (the only place XX001 is acceptable).

\set ON_ERROR_STOP 1
SET client_min_messages = warning;
SET TimeZone = 'UTC';

CREATE EXTENSION IF NOT EXISTS a2;
CREATE SCHEMA a2_fuzz;

CREATE TABLE a2_fuzz.cases (
	id		integer PRIMARY KEY,
	fn		text NOT NULL,
	args	text[] NOT NULL,	-- SQL expressions of the parameter types
	expect	text[] NOT NULL,	-- acceptable outcomes: ok, SQLSTATEs, cast
	now		text NOT NULL,		-- a2.now for this call
	label	text NOT NULL		-- what was mutated
);

CREATE TABLE a2_fuzz.results (
	id		integer PRIMARY KEY REFERENCES a2_fuzz.cases,
	fn		text NOT NULL,
	outcome	text NOT NULL,		-- ok, a SQLSTATE, or cast:SQLSTATE
	message	text,
	passed	boolean NOT NULL,
	problem	text,
	writes	bigint,				-- rows the call inserted/updated/deleted, even if rolled back
	session	text,				-- for appends and completions that added events:
	notify_index bigint,		-- the session and its greatest new index
	ms			numeric				-- how long the call took
);

-- Every tick a case's a2_fire_schedules returned (report.sql: none twice).
CREATE TABLE a2_fuzz.fired (
	id			integer NOT NULL,
	name		text	NOT NULL,
	tick_at		timestamptz NOT NULL,
	session_id	text	NOT NULL,
	event_index bigint	NOT NULL,
	event_id	text	NOT NULL
);

-- The a2 tables: whatever CREATE EXTENSION made.
CREATE FUNCTION a2_fuzz.a2_tables() RETURNS oid[]
LANGUAGE sql STABLE AS $$
	SELECT array_agg(c.oid ORDER BY c.relname)
	  FROM pg_catalog.pg_depend d
	  JOIN pg_catalog.pg_class c ON c.oid = d.objid
	 WHERE d.classid = 'pg_catalog.pg_class'::regclass
	   AND d.refclassid = 'pg_catalog.pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_catalog.pg_extension WHERE extname = 'a2')
	   AND d.deptype = 'e' AND c.relkind = 'r'
$$;

-- Rows this transaction has inserted, updated or deleted in the a2 tables,
-- counting those of rolled-back subtransactions too: a call that fails
-- must not move it (SPEC 5: bad input is rejected before anything is
-- written).
CREATE FUNCTION a2_fuzz.writes(tables oid[]) RETURNS bigint
LANGUAGE sql VOLATILE AS $$
	SELECT coalesce(sum(pg_catalog.pg_stat_get_xact_tuples_inserted(t)
						+ pg_catalog.pg_stat_get_xact_tuples_updated(t)
						+ pg_catalog.pg_stat_get_xact_tuples_deleted(t)), 0)::bigint
	  FROM unnest(tables) AS t
$$;

CREATE FUNCTION a2_fuzz.keys(j jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN jsonb_typeof(j) = 'object'
		   THEN (SELECT string_agg(k, ',' ORDER BY k COLLATE "C") FROM jsonb_object_keys(j) AS k)
		   END
$$;

CREATE FUNCTION a2_fuzz.is_iso(j jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_typeof(j) = 'string'
	   AND (j #>> '{}') ~ '^([0-9]{4}|[+-][0-9]{6})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z$'
$$;

CREATE FUNCTION a2_fuzz.is_iso_or_null(j jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT j = 'null' OR a2_fuzz.is_iso(j)
$$;

CREATE FUNCTION a2_fuzz.is_int(j jsonb, minv bigint) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_typeof(j) = 'number' AND (j #>> '{}') ~ '^-?[0-9]+$' AND (j #>> '{}')::numeric >= minv
$$;

-- Problem with one StoredEvent (SPEC 3), or NULL.  notBefore (SPEC 7.1)
-- is there only when set, and then an ISO string; waitFor and waitResult
-- (docs/json.md) only on an event that waits, and then objects.
CREATE FUNCTION a2_fuzz.stored_problem(e jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	-- notBefore only when scheduled; cancelledAt and cancelReason (a2_cancel)
	-- only on a cancelled event, together
	IF jsonb_typeof(e) = 'object' AND (e ? 'cancelledAt') <> (e ? 'cancelReason') THEN
		RETURN 'StoredEvent cancelledAt without cancelReason or the reverse';
	END IF;
	IF e ? 'cancelledAt' AND NOT (a2_fuzz.is_iso(e->'cancelledAt')
								 AND e->'processedAt' = e->'cancelledAt'
								 AND e->'processedByAttempt' = 'null'
								 AND jsonb_typeof(e->'cancelReason') IN ('string', 'null')) THEN
		RETURN 'StoredEvent cancelled ' || e::text;
	END IF;
	-- queue, priority and concurrencyKey (0.4.0) only when set, and the
	-- defaults ("default", 0) never (docs/json.md, StoredEvent)
	IF (e ? 'queue' AND NOT (jsonb_typeof(e->'queue') = 'string' AND e->>'queue' NOT IN ('', 'default')
							 AND octet_length(e->>'queue') <= 1024))
	   OR (e ? 'priority' AND NOT (a2_fuzz.is_int(e->'priority', -32768) AND (e->>'priority')::int BETWEEN -32768 AND 32767
								   AND (e->>'priority')::int <> 0))
	   OR (e ? 'concurrencyKey' AND NOT (jsonb_typeof(e->'concurrencyKey') = 'string' AND e->>'concurrencyKey' <> ''
										 AND octet_length(e->>'concurrencyKey') <= 1024)) THEN
		RETURN 'StoredEvent dispatch fields ' || jsonb_build_object('queue', e->'queue', 'priority', e->'priority',
																	 'concurrencyKey', e->'concurrencyKey')::text;
	END IF;
	IF a2_fuzz.keys(CASE WHEN jsonb_typeof(e) = 'object' THEN e - 'notBefore' - 'cancelledAt' - 'cancelReason' - 'waitFor' - 'waitResult' - 'queue' - 'priority' - 'concurrencyKey' ELSE e END) IS DISTINCT FROM
	   'attemptCount,cause,claimExpiresAt,claimHolder,createdAt,failedAt,failureCount,firstClaimedAt,id,index,lane,lastClaimedAt,lastError,lastFailedAt,lastFailedAttempt,payload,processedAt,processedByAttempt,returnedEventIds,sessionId,type' THEN
		RETURN 'StoredEvent keys ' || coalesce(a2_fuzz.keys(e), jsonb_typeof(e));
	END IF;
	IF e ? 'notBefore' AND NOT a2_fuzz.is_iso(e->'notBefore') THEN
		RETURN 'StoredEvent notBefore ' || (e->'notBefore')::text;
	END IF;
	IF (e ? 'waitFor' AND (jsonb_typeof(e->'waitFor') <> 'object' OR jsonb_typeof(e->'waitFor'->'types') <> 'array'))
	   OR (e ? 'waitResult' AND (NOT e ? 'waitFor' OR NOT (e->'waitResult' = '{"timedOut": true}'
			OR (a2_fuzz.keys(e->'waitResult') = 'index,type' AND a2_fuzz.is_int(e->'waitResult'->'index', 1))))) THEN
		RETURN 'StoredEvent wait ' || coalesce(e->'waitFor', 'null')::text || ' ' || coalesce(e->'waitResult', 'null')::text;
	END IF;
	IF jsonb_typeof(e->'id') <> 'string' OR jsonb_typeof(e->'type') <> 'string'
	   OR jsonb_typeof(e->'sessionId') <> 'string' OR NOT a2_fuzz.is_int(e->'index', 1)
	   OR NOT a2_fuzz.is_iso(e->'createdAt')
	   OR NOT a2_fuzz.is_int(e->'attemptCount', 0) OR NOT a2_fuzz.is_int(e->'failureCount', 0) THEN
		RETURN 'StoredEvent field types';
	END IF;
	IF NOT (a2_fuzz.is_iso_or_null(e->'processedAt') AND a2_fuzz.is_iso_or_null(e->'firstClaimedAt')
			AND a2_fuzz.is_iso_or_null(e->'lastClaimedAt') AND a2_fuzz.is_iso_or_null(e->'lastFailedAt')
			AND a2_fuzz.is_iso_or_null(e->'failedAt') AND a2_fuzz.is_iso_or_null(e->'claimExpiresAt')) THEN
		RETURN 'StoredEvent timestamps';
	END IF;
	IF e->'cause' <> 'null' AND NOT (
		   a2_fuzz.keys(e->'cause') IN ('attempt,index', 'attempt,batchSize,index')
		   AND a2_fuzz.is_int(e->'cause'->'index', 1) AND a2_fuzz.is_int(e->'cause'->'attempt', 1)
		   AND (NOT e->'cause' ? 'batchSize' OR a2_fuzz.is_int(e->'cause'->'batchSize', 1))) THEN
		RETURN 'StoredEvent cause ' || (e->'cause')::text;
	END IF;
	IF (e->'claimHolder' = 'null') <> (e->'claimExpiresAt' = 'null') THEN
		RETURN 'claimHolder and claimExpiresAt disagree';
	END IF;
	RETURN NULL;
END $$;

-- An ISO string as a2 prints it (years beyond 9999 with '+', before 1
-- with '-'), as epoch milliseconds.
CREATE FUNCTION a2_fuzz.iso_ms(j jsonb) RETURNS numeric
LANGUAGE sql IMMUTABLE AS $$
	SELECT CASE WHEN left(j #>> '{}', 1) = '-' THEN -1e16	-- before year 1: earlier than anything else
		   ELSE round(extract(epoch FROM ltrim(j #>> '{}', '+')::timestamptz) * 1000) END
$$;

-- Claimed events (SPEC 7.1): none before its notBefore.  lastClaimedAt is
-- the claim's own now.
CREATE FUNCTION a2_fuzz.undue_problem(events jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT 'claimed before its notBefore: ' || (e->>'sessionId') || '/' || (e->>'index')
		   || ' notBefore ' || (e->>'notBefore') || ', claimed ' || (e->>'lastClaimedAt')
	  FROM jsonb_array_elements(events) AS e
	 WHERE e ? 'notBefore' AND a2_fuzz.iso_ms(e->'notBefore') > a2_fuzz.iso_ms(e->'lastClaimedAt')
	 LIMIT 1
$$;

CREATE FUNCTION a2_fuzz.stored_list_problem(a jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
	e jsonb;
	p text;
BEGIN
	IF jsonb_typeof(a) <> 'array' THEN
		RETURN 'not an array: ' || jsonb_typeof(a);
	END IF;
	FOR e IN SELECT x FROM jsonb_array_elements(a) AS x LOOP
		p := a2_fuzz.stored_problem(e);
		IF p IS NOT NULL THEN
			RETURN p;
		END IF;
	END LOOP;
	RETURN NULL;
END $$;

CREATE FUNCTION a2_fuzz.state_problem(s jsonb) RETURNS text
LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
	IF a2_fuzz.keys(s) IS DISTINCT FROM 'events,headIndex,snapshot' THEN
		RETURN 'state keys ' || coalesce(a2_fuzz.keys(s), jsonb_typeof(s));
	END IF;
	IF NOT (s->'headIndex' = 'null' OR a2_fuzz.is_int(s->'headIndex', 0)) THEN
		RETURN 'headIndex';
	END IF;
	IF NOT (s->'snapshot' = 'null' OR (a2_fuzz.keys(s->'snapshot') = 'index,state'
									   AND a2_fuzz.is_int(s->'snapshot'->'index', 0))) THEN
		RETURN 'snapshot';
	END IF;
	IF jsonb_typeof(s->'events') <> 'array' OR EXISTS (
		SELECT 1 FROM jsonb_array_elements(s->'events') AS e
		 WHERE a2_fuzz.keys(e) IS DISTINCT FROM 'createdAt,id,index,payload,sessionId,type'
			OR NOT a2_fuzz.is_int(e->'index', 1) OR NOT a2_fuzz.is_iso(e->'createdAt')) THEN
		RETURN 'state events';
	END IF;
	IF s->'snapshot' <> 'null' AND EXISTS (
		SELECT 1 FROM jsonb_array_elements(s->'events') AS e
		 WHERE (e->>'index')::numeric <= (s->'snapshot'->>'index')::numeric) THEN
		RETURN 'an event at or before the snapshot';
	END IF;
	RETURN NULL;
END $$;

CREATE FUNCTION a2_fuzz.sorted_ints(a jsonb) RETURNS boolean
LANGUAGE sql IMMUTABLE AS $$
	SELECT jsonb_typeof(a) = 'array'
	   AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(a) x WHERE NOT a2_fuzz.is_int(x, 1))
	   AND (SELECT coalesce(bool_and(ok), true) FROM (
			SELECT (x #>> '{}')::numeric > lag((x #>> '{}')::numeric) OVER (ORDER BY n) AS ok
			  FROM jsonb_array_elements(a) WITH ORDINALITY AS t(x, n) OFFSET 1) s)
$$;

-- New events carry the dispatch fields they were sent with (docs/json.md):
-- queue, priority and concurrencyKey as given, the defaults ("default", 0,
-- null) absent.  sent: the batch, stored: the events returned for it.
CREATE FUNCTION a2_fuzz.dispatch_problem(sent jsonb, stored jsonb) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT format('events[%s]: sent queue %s, priority %s, concurrencyKey %s; stored %s, %s, %s', n - 1,
				  s->'queue', s->'priority', s->'concurrencyKey', e->'queue', e->'priority', e->'concurrencyKey')
	  FROM jsonb_array_elements(CASE jsonb_typeof(sent) WHEN 'array' THEN sent ELSE '[]' END) WITH ORDINALITY AS x(s, n)
	  JOIN LATERAL (SELECT stored->(x.n::int - 1) AS e) y ON true
	 WHERE (e->'queue') IS DISTINCT FROM (CASE WHEN s->>'queue' IS NULL OR s->>'queue' = 'default' THEN NULL ELSE s->'queue' END)
		OR (e->>'priority')::numeric IS DISTINCT FROM nullif((s->>'priority')::numeric, 0)
		OR (e->'concurrencyKey') IS DISTINCT FROM (CASE WHEN s->'concurrencyKey' = 'null' THEN NULL ELSE s->'concurrencyKey' END)
	 LIMIT 1
$$;

-- Claimed events of a claim limited to queues are in those queues (the
-- default queue as "default").
CREATE FUNCTION a2_fuzz.queue_problem(events jsonb, queues text[]) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
	SELECT format('claimed %s/%s of queue %s, serving only %s', e->>'sessionId', e->>'index',
				  COALESCE(e->>'queue', 'default'), queues)
	  FROM jsonb_array_elements(events) e
	 WHERE queues IS NOT NULL AND NOT COALESCE(e->>'queue', 'default') = ANY (queues)
	 LIMIT 1
$$;

-- An argument expression's value, or NULL when the call left it out.
CREATE FUNCTION a2_fuzz.arg_queues(args text[], i integer) RETURNS text[]
LANGUAGE plpgsql AS $$
DECLARE
	v text[];
BEGIN
	IF coalesce(array_length(args, 1), 0) < i THEN
		RETURN NULL;
	END IF;
	EXECUTE 'SELECT (' || args[i] || ')::text[]' INTO v;
	RETURN v;
END $$;

-- Whether a successful result has the shape SPEC section 3 gives it.
-- Returns a description of the first problem, or NULL.
CREATE FUNCTION a2_fuzz.check_result(fn text, res text, args text[]) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	j jsonb;
	p text;
	n bigint;
	t_after timestamptz;
BEGIN
	IF res IS NULL THEN
		RETURN 'returned NULL';
	END IF;
	IF fn IN ('a2_put_snapshots', 'a2_presence_set') THEN
		RETURN CASE WHEN res = '' THEN NULL ELSE 'void function returned ' || left(res, 80) END;
	END IF;
	j := CASE WHEN fn IN ('a2_schedule', 'a2_pause_schedule', 'a2_resume_schedule') THEN to_jsonb(res)
			  ELSE res::jsonb END;
	CASE fn
	WHEN 'a2_append' THEN
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'events,hasPending' OR jsonb_typeof(j->'hasPending') <> 'boolean' THEN
			RETURN 'append result keys';
		END IF;
		RETURN a2_fuzz.stored_list_problem(j->'events');
	WHEN 'a2_read' THEN
		p := a2_fuzz.stored_list_problem(j);
		IF p IS NULL AND NOT a2_fuzz.sorted_ints(jsonb_path_query_array(j, '$[*].index')) THEN
			p := 'read not in index order';
		END IF;
		IF p IS NULL AND array_length(args, 1) >= 4 THEN
			EXECUTE 'SELECT (' || args[4] || ')::bigint' INTO n;
			IF n IS NOT NULL AND jsonb_array_length(j) > n THEN
				p := 'more than max_events';
			END IF;
		END IF;
		RETURN p;
	WHEN 'a2_claim' THEN
		CASE j->>'outcome'
		WHEN 'claimed' THEN
			IF a2_fuzz.keys(j) <> 'events,outcome' OR jsonb_array_length(j->'events') = 0 THEN
				RETURN 'claimed shape';
			END IF;
			RETURN coalesce(a2_fuzz.stored_list_problem(j->'events'), a2_fuzz.undue_problem(j->'events'),
							a2_fuzz.queue_problem(j->'events', a2_fuzz.arg_queues(args, 6)));
		WHEN 'busy' THEN
			RETURN CASE WHEN a2_fuzz.keys(j) = 'outcome,retryAt' AND a2_fuzz.is_iso(j->'retryAt')
						THEN NULL ELSE 'busy shape' END;
		WHEN 'settled' THEN
			RETURN CASE WHEN a2_fuzz.keys(j) = 'outcome' THEN NULL ELSE 'settled shape' END;
		ELSE
			RETURN 'claim outcome ' || coalesce(j->>'outcome', '?');
		END CASE;
	WHEN 'a2_renew' THEN
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'renewed,superseded'
		   OR NOT a2_fuzz.sorted_ints(j->'renewed') OR NOT a2_fuzz.sorted_ints(j->'superseded')
		   OR EXISTS (SELECT 1 FROM jsonb_array_elements(j->'renewed') r
					   WHERE (j->'superseded') @> jsonb_build_array(r)) THEN
			RETURN 'renew shape';
		END IF;
		RETURN NULL;
	WHEN 'a2_complete' THEN
		CASE j->>'outcome'
		WHEN 'completed' THEN
			IF a2_fuzz.keys(j) <> 'events,outcome' THEN
				RETURN 'completed shape';
			END IF;
			RETURN a2_fuzz.stored_list_problem(j->'events');
		WHEN 'superseded' THEN
			RETURN CASE WHEN a2_fuzz.keys(j) = 'outcome' THEN NULL ELSE 'superseded shape' END;
		ELSE
			RETURN 'complete outcome ' || coalesce(j->>'outcome', '?');
		END CASE;
	WHEN 'a2_fail' THEN
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'failureCount,outcome'
		   OR NOT (j->>'outcome') IN ('failed', 'dead_lettered', 'superseded')
		   OR NOT a2_fuzz.is_int(j->'failureCount', 0) THEN
			RETURN 'fail shape';
		END IF;
		RETURN NULL;
	WHEN 'a2_claim_next' THEN
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'claims,retryAt' OR jsonb_typeof(j->'claims') <> 'array'
		   OR (j->'retryAt' <> 'null' AND NOT a2_fuzz.is_iso(j->'retryAt')) THEN
			RETURN 'claim_next shape';
		END IF;
		EXECUTE 'SELECT (' || args[3] || ')::integer' INTO n;
		IF jsonb_array_length(j->'claims') > coalesce(n, 1) THEN
			RETURN 'more sessions than max_sessions';
		END IF;
		IF EXISTS (SELECT 1 FROM jsonb_array_elements(j->'claims') c
					WHERE a2_fuzz.keys(c) IS DISTINCT FROM 'events,sessionId'
					   OR jsonb_array_length(c->'events') = 0
					   OR EXISTS (SELECT 1 FROM jsonb_array_elements(c->'events') e
								   WHERE e->>'sessionId' IS DISTINCT FROM c->>'sessionId'))
		   OR (SELECT count(DISTINCT c->>'sessionId') FROM jsonb_array_elements(j->'claims') c)
			  <> jsonb_array_length(j->'claims') THEN
			RETURN 'claim_next claims shape';
		END IF;
		SELECT min(coalesce(a2_fuzz.stored_list_problem(c->'events'), a2_fuzz.undue_problem(c->'events'),
							a2_fuzz.queue_problem(c->'events', a2_fuzz.arg_queues(args, 5))))
		  INTO p FROM jsonb_array_elements(j->'claims') c;
		RETURN p;
	WHEN 'a2_redrive' THEN
		IF array_length(args, 1) = 1 THEN
			IF a2_fuzz.keys(j) IS DISTINCT FROM 'events' THEN
				RETURN 'redrive session shape';
			END IF;
			RETURN a2_fuzz.stored_list_problem(j->'events');
		END IF;
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'event,outcome'
		   OR NOT (j->>'outcome') IN ('redriven', 'already_redriven')
		   OR j->'event'->'failedAt' <> 'null' THEN
			RETURN 'redrive shape';
		END IF;
		RETURN a2_fuzz.stored_list_problem(jsonb_build_array(j->'event'));
	WHEN 'a2_cancel' THEN
		IF a2_fuzz.keys(j) IS DISTINCT FROM 'cancelled' THEN
			RETURN 'cancel shape';
		END IF;
		IF EXISTS (SELECT 1 FROM jsonb_array_elements(j->'cancelled') e WHERE NOT e ? 'cancelledAt') THEN
			RETURN 'cancel returned an event that is not cancelled';
		END IF;
		RETURN a2_fuzz.stored_list_problem(j->'cancelled');
	WHEN 'a2_schedule', 'a2_pause_schedule', 'a2_resume_schedule' THEN
		-- the next tick: after the store clock, unless a resume returns a
		-- past one (the next pass applies the missed-tick policy)
		IF jsonb_typeof(j) <> 'string' OR (fn = 'a2_schedule'
			AND (j #>> '{}')::timestamptz <= current_setting('a2.now')::timestamptz) THEN
			RETURN fn || ' returned ' || left(res, 80);
		END IF;
		RETURN NULL;
	WHEN 'a2_unschedule' THEN
		RETURN CASE WHEN jsonb_typeof(j) = 'boolean' THEN NULL ELSE 'unschedule returned ' || left(res, 80) END;
	WHEN 'a2_fire_schedules' THEN
		-- one row per appended tick: its event, stored with the schedule's id
		-- for the tick, which is due at the store clock
		SELECT min(format('fire returned %s; stored %s', f, COALESCE(e.session_id || '/' || e.idx, 'nothing')))
		  INTO p FROM jsonb_array_elements(j) f
		  LEFT JOIN a2_events e ON e.event_id = f->>'event_id'
		 WHERE a2_fuzz.keys(f) IS DISTINCT FROM 'event_id,event_index,name,session_id,tick_at'
			OR f->>'event_id' IS DISTINCT FROM format('schedule:%s@%s', f->>'name',
				to_char((f->>'tick_at')::timestamptz AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
			OR (f->>'tick_at')::timestamptz > current_setting('a2.now')::timestamptz
			OR e.session_id IS DISTINCT FROM f->>'session_id' OR e.idx IS DISTINCT FROM (f->>'event_index')::bigint;
		RETURN p;
	WHEN 'a2_schedule_ticks' THEN
		EXECUTE 'SELECT (' || args[3] || ')::timestamptz, (' || args[4] || ')::integer' INTO t_after, n;
		IF jsonb_array_length(j) > n OR EXISTS (
			SELECT 1 FROM (SELECT (t #>> '{}')::timestamptz AS t,
								  lag((t #>> '{}')::timestamptz) OVER (ORDER BY o) AS prev
							 FROM jsonb_array_elements(j) WITH ORDINALITY AS x(t, o)) y
			 WHERE t <= COALESCE(prev, t_after)) THEN
			RETURN format('ticks after %s (%s asked): %s', t_after, n, left(res, 200));
		END IF;
		RETURN NULL;
	WHEN 'a2_list_schedules' THEN
		IF EXISTS (SELECT 1 FROM jsonb_array_elements(j) x
					WHERE a2_fuzz.keys(x) IS DISTINCT FROM 'backfill_limit,created_at,event,fired_count,grace_ms,last_tick_at,missed,name,next_tick_at,paused,session_id,spec,timezone,updated_at'
					   OR (x->>'fired_count')::bigint < 0 OR (x->>'fired_count' = '0') <> (x->'last_tick_at' = 'null')) THEN
			RETURN 'list_schedules rows ' || left(res, 200);
		END IF;
		RETURN NULL;
	WHEN 'a2_read_state' THEN
		RETURN a2_fuzz.state_problem(j);
	WHEN 'a2_read_states' THEN
		IF jsonb_typeof(j) <> 'array' THEN
			RETURN 'read_states not an array';
		END IF;
		EXECUTE 'SELECT jsonb_array_length(' || args[1] || ')' INTO n;
		IF jsonb_array_length(j) <> n THEN
			RETURN format('read_states returned %s results for %s requests', jsonb_array_length(j), n);
		END IF;
		SELECT min(a2_fuzz.state_problem(x)) INTO p FROM jsonb_array_elements(j) AS x;
		RETURN p;
	WHEN 'a2_presence_read' THEN
		IF jsonb_typeof(j) <> 'array' OR EXISTS (
			SELECT 1 FROM jsonb_array_elements(j) AS x
			 WHERE a2_fuzz.keys(x) IS DISTINCT FROM 'at,expiresAt,field,participant,seen,value'
				OR jsonb_typeof(x->'participant') <> 'string' OR jsonb_typeof(x->'field') <> 'string'
				OR NOT a2_fuzz.is_iso(x->'at') OR NOT a2_fuzz.is_iso(x->'expiresAt')
				OR jsonb_typeof(x->'seen') <> 'number' OR x->'value' = 'null') THEN
			RETURN 'presence row shape';
		END IF;
		IF EXISTS (SELECT 1 FROM (
				SELECT t.x->>'participant' AS cur_p, t.x->>'field' AS cur_f,
					   lag(t.x->>'participant') OVER (ORDER BY t.ord) AS prev_p,
					   lag(t.x->>'field') OVER (ORDER BY t.ord) AS prev_f
				  FROM jsonb_array_elements(j) WITH ORDINALITY AS t(x, ord)) s
			 WHERE s.prev_p IS NOT NULL AND (s.prev_p, s.prev_f) >= (s.cur_p, s.cur_f)) THEN
			RETURN 'presence not ordered by participant, field';
		END IF;
		RETURN NULL;
	ELSE
		RETURN 'unknown function ' || fn;
	END CASE;
END $$;

-- Run cases first..last; each call in its own subtransaction.  Returns
-- 'chunk <first>': the caller commits and then receives the chunk's
-- NOTIFYs, which it compares with the session/notify_index columns.
CREATE FUNCTION a2_fuzz.run(first integer, last integer) RETURNS text
LANGUAGE plpgsql AS $$
DECLARE
	c record;
	tables oid[] := a2_fuzz.a2_tables();
	i integer;
	st text;
	msg text;
	res text;
	outcome text;
	problem text;
	w0 bigint;
	w1 bigint;
	sess text;
	nidx bigint;
	sent jsonb;
	t0 timestamptz;
	took numeric;
BEGIN
	FOR c IN SELECT * FROM a2_fuzz.cases WHERE id BETWEEN first AND last ORDER BY id LOOP
		PERFORM set_config('a2.now', c.now, false);
		outcome := NULL;
		problem := NULL;
		msg := NULL;
		res := NULL;
		w0 := NULL;
		w1 := NULL;
		took := NULL;
		sess := NULL;
		nidx := NULL;

		-- the arguments alone: a failure here is PostgreSQL's input
		-- checking (jsonb rejects \u0000, '2.5'::bigint ...), not a2's
		FOR i IN 1 .. coalesce(array_length(c.args, 1), 0) LOOP
			BEGIN
				EXECUTE 'SELECT (' || c.args[i] || ') IS NULL';
			EXCEPTION WHEN OTHERS THEN
				GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
				outcome := 'cast:' || st;
				EXIT;
			END;
		END LOOP;

		IF outcome IS NULL THEN
			w0 := a2_fuzz.writes(tables);
			t0 := clock_timestamp();
			BEGIN
				IF c.fn IN ('a2_fire_schedules', 'a2_schedule_ticks', 'a2_list_schedules') THEN
					-- set-returning: every row, as a JSON array
					EXECUTE format('SELECT COALESCE(jsonb_agg(to_jsonb(x)), ''[]'')::text FROM %s(%s) x',
								   c.fn, array_to_string(c.args, ', ')) INTO res;
				ELSE
					EXECUTE format('SELECT %s(%s)::text', c.fn, array_to_string(c.args, ', ')) INTO res;
				END IF;
				outcome := 'ok';
			EXCEPTION WHEN OTHERS THEN
				GET STACKED DIAGNOSTICS st = RETURNED_SQLSTATE, msg = MESSAGE_TEXT;
				outcome := st;
			END;
			w1 := a2_fuzz.writes(tables);
			took := round(extract(epoch FROM clock_timestamp() - t0) * 1000, 1);
			IF outcome = 'ok' THEN
				problem := a2_fuzz.check_result(c.fn, res, c.args);
				-- new events carry the dispatch fields as sent
				IF problem IS NULL AND c.fn IN ('a2_append', 'a2_complete') AND w1 > w0
				   AND array_length(c.args, 1) >= (CASE c.fn WHEN 'a2_append' THEN 2 ELSE 4 END) THEN
					EXECUTE 'SELECT (' || c.args[CASE c.fn WHEN 'a2_append' THEN 2 ELSE 4 END] || ')::jsonb' INTO sent;
					problem := a2_fuzz.dispatch_problem(sent, res::jsonb->'events');
				END IF;
				IF problem IS NULL AND c.fn = 'a2_fire_schedules' THEN
					INSERT INTO a2_fuzz.fired
					SELECT c.id, f->>'name', (f->>'tick_at')::timestamptz, f->>'session_id',
						   (f->>'event_index')::bigint, f->>'event_id'
					  FROM jsonb_array_elements(res::jsonb) f;
				END IF;
				-- new events (not a replay, which writes nothing) must be
				-- announced when the chunk commits
				IF problem IS NULL AND c.fn IN ('a2_append', 'a2_complete') AND w1 > w0
				   AND jsonb_array_length(res::jsonb->'events') > 0 THEN
					EXECUTE 'SELECT (' || c.args[1] || ')::text' INTO sess;
					SELECT max((e->>'index')::bigint) INTO nidx FROM jsonb_array_elements(res::jsonb->'events') AS e;
				END IF;
				-- a redrive that put events back wakes listeners with the
				-- session's greatest index
				-- (a cancel that cancelled something too)
				IF problem IS NULL AND c.fn IN ('a2_redrive', 'a2_cancel') AND w1 > w0 THEN
					EXECUTE 'SELECT (' || c.args[1] || ')::text' INTO sess;
					SELECT max(e.idx) INTO nidx FROM a2_events e WHERE e.session_id = sess;
				END IF;
			ELSIF outcome IN ('22004', '22023') AND w1 <> w0 THEN
				-- SPEC 5: bad input is rejected before anything is written
				-- (other errors may come after writes the rollback undoes)
				problem := format('wrote %s row(s) before raising %s', w1 - w0, outcome);
			END IF;
		END IF;

		IF problem IS NULL AND NOT (CASE WHEN outcome LIKE 'cast:%' THEN 'cast' ELSE outcome END = ANY (c.expect)) THEN
			problem := 'outcome not allowed';
		END IF;
		INSERT INTO a2_fuzz.results VALUES (c.id, c.fn, outcome, left(msg, 300), problem IS NULL, problem,
											 w1 - w0, sess, nidx, took);
	END LOOP;
	RETURN 'chunk ' || first;
END $$;

-- The NOTIFYs each chunk must have sent: one per session that got new
-- events, with its greatest new index (SPEC 4, notifications), as JSON
-- {"<first id of chunk>": [[session, index], ...]}.
CREATE FUNCTION a2_fuzz.expected_notifications(chunk integer) RETURNS json
LANGUAGE sql STABLE AS $$
	SELECT coalesce(json_object_agg(first, pairs), '{}')
	  FROM (SELECT first, json_agg(json_build_array(session, idx) ORDER BY session COLLATE "C") AS pairs
			  FROM (SELECT (id - 1) / chunk * chunk + 1 AS first, session, max(notify_index) AS idx
					  FROM a2_fuzz.results WHERE session IS NOT NULL
					 GROUP BY 1, 2) s
			 GROUP BY first) t
$$;

-- Every event with a notBefore or a wait (whose timeout is a due time,
-- docs/semantics.md "Waits"), as JSON [[session, index], ...]: the only
-- pairs a2's scheduler may announce besides the calls' own NOTIFYs
-- (check_notify.py).  Those of the population as well, which a redrive in
-- the run may have cleared after an announcement.
CREATE TABLE a2_fuzz.scheduled_seed (session_id text, idx bigint);

CREATE FUNCTION a2_fuzz.scheduled_events() RETURNS json
LANGUAGE sql STABLE AS $$
	SELECT coalesce(json_agg(json_build_array(session_id, idx)), '[]')
	  FROM (SELECT session_id, idx FROM a2_events WHERE not_before IS NOT NULL OR wait_for IS NOT NULL
			UNION SELECT session_id, idx FROM a2_fuzz.scheduled_seed) s
$$;

-- The population the cases act on.  Fixed clock; every step is checked.
SET a2.now = '2026-02-28 23:00:00+00';
DO $$
DECLARE
	r jsonb;
BEGIN
	-- fz:s1: a lane, a settled event, processed, failed and dead-lettered ones
	r := a2_append('fz:s1', '[{"id":"fz:seed:1","type":"a"},{"id":"fz:seed:2","type":"b","lane":"L1"},
							  {"id":"fz:seed:3","type":"c","lane":"L1"},{"id":"fz:seed:4","type":"d","settled":true},
							  {"id":"fz:seed:5","type":"e"},{"id":"fz:seed:6","type":"f","lane":"L2"}]');
	ASSERT jsonb_array_length(r->'events') = 6;
	r := a2_claim('fz:s1', 'w1', 3600000);
	ASSERT r->>'outcome' = 'claimed' AND jsonb_array_length(r->'events') = 4, r::text;	-- 1, 2, 5, 6
	r := a2_complete('fz:s1', 1, 1, '[{"id":"fz:seed:7","type":"child"}]');
	ASSERT r->>'outcome' = 'completed';
	r := a2_complete('fz:s1', 2, 1);
	ASSERT r->>'outcome' = 'completed';
	r := a2_fail('fz:s1', 5, 1, 'boom', 3);
	ASSERT r->>'outcome' = 'failed';
	r := a2_fail('fz:s1', 6, 1, 'fatal', 1);
	ASSERT r->>'outcome' = 'dead_lettered';

	-- fz:s2: snapshots with a head, history and pins
	r := a2_append('fz:s2', '[{"id":"fz:seed:21","type":"a"},{"id":"fz:seed:22","type":"b"},{"id":"fz:seed:23","type":"c"}]');
	PERFORM a2_put_snapshots('fz:s2', 'r1', '[{"index":1,"state":{"n":1},"pinEventIndexes":[2,3]}]');
	PERFORM a2_put_snapshots('fz:s2', 'r1', '[{"index":2,"state":{"n":2},"pinEventIndexes":[3]},{"index":0,"state":{"n":0},"pinEventIndexes":[3]}]');
	PERFORM a2_put_snapshots('fz:s2', 'r2', '[{"index":3,"state":"three"}]');
	ASSERT (SELECT count(*) FROM a2_snapshot_history WHERE session_id = 'fz:s2') = 2;
	ASSERT (SELECT count(*) FROM a2_snapshot_pins WHERE session_id = 'fz:s2') = 4;
	r := a2_claim('fz:s2', 'w2', 60000);
	ASSERT r->>'outcome' = 'claimed';

	-- fz:s3: children with causes, a replay candidate
	r := a2_append('fz:s3', '[{"id":"fz:seed:31","type":"a"}]');
	r := a2_claim('fz:s3', 'w3', 1000);
	r := a2_append('fz:s3', '[{"id":"fz:seed:32","type":"b","cause":{"index":1,"attempt":1,"batchSize":1}}]');
	ASSERT r->'events'->0->'cause' = '{"index":1,"attempt":1,"batchSize":1}';

	-- presence, with a tombstone
	PERFORM a2_presence_set('fz:ns1', 'p1', '{"status":"on","cursor":1}', '2026-02-28 23:00:00+00', 1, 86400000);
	PERFORM a2_presence_set('fz:ns1', 'p1', '{"cursor":null}', '2026-02-28 23:00:01+00', 2, 86400000);
	ASSERT (SELECT count(*) FROM a2_presence_tombstones WHERE ns = 'fz:ns1') = 1;

	-- fz:s4: scheduled work (SPEC 7.1) falling due while the cases run
	-- (their clock starts at 2026-03-01 00:00 and moves about an hour):
	-- a delayed event, a delayed lane head with a follower, one a century
	-- ahead, a failure backed off by two hours, and a timer a completion
	-- returned
	r := a2_append('fz:s4', '[{"id":"fz:seed:41","type":"a","notBefore":"2026-03-01T00:30:00Z"},
							  {"id":"fz:seed:42","type":"b","lane":"L1","notBefore":"2026-03-01T00:20:00Z"},
							  {"id":"fz:seed:43","type":"c","lane":"L1"},
							  {"id":"fz:seed:44","type":"d","notBefore":"2100-01-01T00:00:00Z"},
							  {"id":"fz:seed:45","type":"e"},{"id":"fz:seed:46","type":"f"}]');
	ASSERT r->'events'->0->>'notBefore' = '2026-03-01T00:30:00.000Z', r::text;
	r := a2_claim('fz:s4', 'w4', 60000);
	ASSERT r->>'outcome' = 'claimed' AND jsonb_array_length(r->'events') = 2, r::text;	-- 5, 6
	r := a2_fail('fz:s4', 5, 1, 'backing off', 3, 7200000);
	ASSERT r->>'outcome' = 'failed', r::text;
	r := a2_complete('fz:s4', 6, 1, '[{"id":"fz:seed:47","type":"timer","notBefore":"2026-03-01T00:10:00Z"}]');
	ASSERT r->'events'->0->>'notBefore' = '2026-03-01T00:10:00.000Z', r::text;
	r := a2_claim('fz:s4', 'w4', 60000);
	-- nothing leased, nothing due yet: busy until the timer
	ASSERT r->>'outcome' = 'busy' AND r->>'retryAt' = '2026-03-01T00:10:00.000Z', r::text;

	-- fz:corrupt: an event whose stored cause violates the contract
	r := a2_append('fz:corrupt', '[{"id":"fz:seed:c1","type":"a"},{"id":"fz:seed:c2","type":"b"}]');
	UPDATE a2_events SET cause = '{"index":0,"attempt":"one"}' WHERE session_id = 'fz:corrupt' AND idx = 2;
	-- created in 2100, so a2_claim_next (which offers work from its
	-- createdAt on) does not hand the corrupt row to every call; a2_claim
	-- on fz:corrupt still reaches it
	UPDATE a2_events SET created_at = 4102444800000 WHERE session_id = 'fz:corrupt';

	-- limits on two of the concurrency keys the cases' events name, so that
	-- claims go through the limit checks (0.4.0)
	r := a2_set_concurrency_limit('k1', 1);
	r := a2_set_rate_limit('k2', 3, 60000);

	INSERT INTO a2_fuzz.scheduled_seed SELECT session_id, idx FROM a2_events WHERE not_before IS NOT NULL;
END $$;
RESET a2.now;
