-- test/citus/features.sql: 0.4.0's features in distributed mode
-- (docs/distributed.md, "Queues, priorities, limits, schedules and waits").
-- Run on the coordinator after a2_distribute(), with ON_ERROR_STOP: every
-- check raises when it does not hold.  Refused calls must raise 0A000 and
-- write nothing; a2_cancel, a2_metrics and a2_list_sessions work across
-- shards.

\set ON_ERROR_STOP on

-- calls that must be refused with 0A000, each with nothing written
CREATE TEMP TABLE refused (label text, sql text);
INSERT INTO refused VALUES
	('an event with a queue', $$SELECT a2_append('feat:1', '[{"type":"t","payload":{},"queue":"q"}]')$$),
	('an event with a priority', $$SELECT a2_append('feat:1', '[{"type":"t","payload":{},"priority":5}]')$$),
	('an event with a concurrency key', $$SELECT a2_append('feat:1', '[{"type":"t","payload":{},"concurrencyKey":"k"}]')$$),
	('an event with a wait', $$SELECT a2_append('feat:1', '[{"type":"t","payload":{},"waitFor":{"types":["x"],"timeoutMs":1000}}]')$$),
	('a2_claim_next with queues', $$SELECT a2_claim_next('w', 1000, 1, NULL, ARRAY['q'])$$),
	('a2_pause_queue', $$SELECT a2_pause_queue('q')$$),
	('a2_resume_queue', $$SELECT a2_resume_queue('q')$$),
	('a2_set_concurrency_limit', $$SELECT a2_set_concurrency_limit('k', 2)$$),
	('a2_set_rate_limit', $$SELECT a2_set_rate_limit('k', 2, 1000)$$),
	('a2_schedule', $$SELECT a2_schedule('every-minute', '* * * * *', 'feat:1', '{"type":"tick","payload":{}}')$$);

DO $check$
DECLARE
	r record;
	state text;
BEGIN
	FOR r IN SELECT * FROM refused LOOP
		state := NULL;
		BEGIN
			EXECUTE r.sql;
		EXCEPTION WHEN OTHERS THEN
			GET STACKED DIAGNOSTICS state = RETURNED_SQLSTATE;
		END;
		IF state IS DISTINCT FROM '0A000' THEN
			RAISE EXCEPTION 'features: % gave SQLSTATE %, not 0A000', r.label, coalesce(state, 'none (it ran)');
		END IF;
	END LOOP;
	IF EXISTS (SELECT 1 FROM a2_events WHERE session_id = 'feat:1') THEN
		RAISE EXCEPTION 'features: a refused append wrote events';
	END IF;
	IF EXISTS (SELECT 1 FROM a2_queues) OR EXISTS (SELECT 1 FROM a2_limits)
	   OR EXISTS (SELECT 1 FROM a2_schedules) THEN
		RAISE EXCEPTION 'features: a refused call wrote a queue, limit or schedule row';
	END IF;
END
$check$;

-- the 0.4.0 tables stay local (a2_distribute's 'local' rule)
DO $check$
BEGIN
	IF EXISTS (SELECT 1 FROM pg_dist_partition p
				WHERE p.logicalrelid::text IN ('a2_queues', 'a2_limits', 'a2_rate_claims', 'a2_schedules')) THEN
		RAISE EXCEPTION 'features: a 0.4.0 table was distributed';
	END IF;
	IF (SELECT count(*) FROM a2_list_schedules()) <> 0 OR (SELECT count(*) FROM a2_fire_schedules()) <> 0 THEN
		RAISE EXCEPTION 'features: schedules listed or fired in distributed mode';
	END IF;
END
$check$;

-- a2_cancel across shards: one session on each side of the hash
DO $check$
DECLARE
	s text;
	got jsonb;
BEGIN
	FOREACH s IN ARRAY ARRAY['feat:cancel:1', 'feat:cancel:2', 'feat:cancel:3', 'feat:cancel:4'] LOOP
		PERFORM a2_append(s, '[{"type":"a","payload":{}},{"type":"b","payload":{}}]');
		got := a2_cancel(s, ARRAY[2]::bigint[], 'not needed');
		IF jsonb_array_length(got -> 'cancelled') <> 1
		   OR (got -> 'cancelled' -> 0 ->> 'index')::bigint <> 2
		   OR got -> 'cancelled' -> 0 ->> 'cancelReason' <> 'not needed' THEN
			RAISE EXCEPTION 'features: a2_cancel(%, {2}) returned %', s, got;
		END IF;
		-- idempotent
		got := a2_cancel(s, ARRAY[2]::bigint[]);
		IF jsonb_array_length(got -> 'cancelled') <> 0 THEN
			RAISE EXCEPTION 'features: a2_cancel(%, {2}) again returned %', s, got;
		END IF;
		IF (SELECT count(*) FROM a2_events e WHERE e.session_id = s AND e.cancelled_at IS NOT NULL) <> 1 THEN
			RAISE EXCEPTION 'features: a2_cancel(%) did not leave one cancelled row', s;
		END IF;
	END LOOP;
END
$check$;

-- a2_metrics and a2_list_sessions across shards, with the 0.4.0 columns
DO $check$
DECLARE
	m record;
	page jsonb;
BEGIN
	SELECT * INTO STRICT m FROM a2_metrics();
	IF m.cancelled_events < 4 THEN
		RAISE EXCEPTION 'features: a2_metrics().cancelled_events = %, expected at least 4', m.cancelled_events;
	END IF;
	IF m.paused_queues IS DISTINCT FROM '{}'::text[] OR m.keys_at_limit IS DISTINCT FROM '{}'::text[] THEN
		RAISE EXCEPTION 'features: a2_metrics() shows paused queues % or keys at limit %', m.paused_queues, m.keys_at_limit;
	END IF;
	page := a2_list_sessions('feat:cancel:', NULL, 10);
	IF jsonb_array_length(page -> 'sessions') <> 4
	   OR EXISTS (SELECT 1 FROM jsonb_array_elements(page -> 'sessions') x
				   WHERE (x ->> 'cancelledCount')::int <> 1) THEN
		RAISE EXCEPTION 'features: a2_list_sessions returned %', page;
	END IF;
END
$check$;

SELECT 'features: ok';
