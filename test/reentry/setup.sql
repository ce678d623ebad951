/*
 * test/reentry/setup.sql
 *	  User code on every a2 table for the re-entrancy suite
 *	  (test/suites/25-reentrancy.sh, driver test/reentry/driver.py).
 *
 *	    psql -X -v ON_ERROR_STOP=1 -f test/reentry/setup.sql DBNAME
 *
 *	  Run after CREATE EXTENSION a2 (in public).  The user's objects live in
 *	  schema app, which is on the callers' search_path (app, public) and on
 *	  nobody else's.  On every table of the extension, found in pg_depend so
 *	  that tables a later release adds are covered too, it creates:
 *
 *	  reentry_0_before    BEFORE ROW (a2_events only): a2_read of the mirror
 *	                      session, while the outer a2 statement is in the
 *	                      middle of its rows.
 *	  reentry_1_nested    AFTER ROW, every table: calls a2 again on the
 *	                      "mirror" of the changed row (session fan:<s>,
 *	                      namespace fan:<ns>), only at trigger depth 1, so
 *	                      the mirror's own rows do not mirror again:
 *	                        a2_events INSERT  pg_sleep(reentry.sleep_ms), then
 *	                                          a2_append of event fan:<id>
 *	                        a2_events UPDATE  a2_claim + a2_complete of the
 *	                                          mirror's claimable events
 *	                        a2_events DELETE  a2_drop_session(mirror, force)
 *	                        snapshot tables   a2_put_snapshots on the mirror
 *	                                          (a2_read_state on DELETE)
 *	                        presence tables   a2_presence_set on the mirror
 *	                                          (a2_presence_read on DELETE)
 *	                        any other table   a2_list_sessions('fan:')
 *	                      Everything in it is schema-qualified: it must work
 *	                      under any search_path.
 *	  reentry_2_audit     AFTER ROW, every table: INSERT INTO audit through
 *	                      the unqualified name, recording the search_path it
 *	                      saw (SPEC 7.2: the caller's, not a2's); skipped
 *	                      when the caller set reentry.audit = off.
 *	  reentry_3_statement AFTER STATEMENT, every table: the same, one row per
 *	                      statement (op STATEMENT_<op>).
 *
 *	  Triggers fire in name order, so the nested a2 call of a row runs before
 *	  its audit insert.
 */
\set ON_ERROR_STOP 1

CREATE SCHEMA app;

-- What the user's triggers saw; in app only, reached by its bare name.
CREATE TABLE app.audit (
	id			bigserial PRIMARY KEY,
	tbl			text	NOT NULL,
	op			text	NOT NULL,
	depth		integer NOT NULL,
	key			text,			-- session_id, or ns for presence tables
	idx			bigint,
	event_id	text,
	search_path text	NOT NULL,
	xid			xid8	NOT NULL DEFAULT pg_current_xact_id()
);

-- The mirror's claimable events: claim them and complete each (no children).
CREATE FUNCTION app.reentry_drain(mirror text) RETURNS void
LANGUAGE plpgsql AS $f$
DECLARE
	c jsonb;
	e jsonb;
BEGIN
	c := public.a2_claim(mirror, 'reentry-trigger', 60000);
	IF c ->> 'outcome' = 'claimed' THEN
		FOR e IN SELECT x FROM jsonb_array_elements(c -> 'events') x LOOP
			PERFORM public.a2_complete(mirror,
				(e ->> 'index')::bigint,
				(e ->> 'attemptCount')::integer);
		END LOOP;
	END IF;
END
$f$;

CREATE FUNCTION app.reentry_before() RETURNS trigger
LANGUAGE plpgsql AS $f$
BEGIN
	IF pg_trigger_depth() = 1 THEN
		PERFORM public.a2_read('fan:' || NEW.session_id);
	END IF;
	RETURN NEW;
END
$f$;

CREATE FUNCTION app.reentry_nested() RETURNS trigger
LANGUAGE plpgsql AS $f$
DECLARE
	r jsonb;
	sleep_ms integer;
BEGIN
	IF pg_trigger_depth() <> 1 THEN
		RETURN NULL;
	END IF;
	IF TG_OP = 'DELETE' THEN
		r := to_jsonb(OLD);
	ELSE
		r := to_jsonb(NEW);
	END IF;
	IF TG_TABLE_NAME = 'a2_events' THEN
		IF TG_OP = 'INSERT' THEN
			-- Widens the window in which a concurrent ANALYZE (or DDL) of
			-- a2_events invalidates the plan the outer a2 call is running.
			sleep_ms := COALESCE(NULLIF(current_setting('reentry.sleep_ms', true), ''), '0')::integer;
			IF sleep_ms > 0 THEN
				PERFORM pg_sleep(sleep_ms / 1000.0);
			END IF;
			PERFORM public.a2_append('fan:' || (r ->> 'session_id'),
				jsonb_build_array(jsonb_build_object(
					'id', 'fan:' || (r ->> 'event_id'),
					'type', 'fan',
					'payload', jsonb_build_object('of', r -> 'idx'))));
		ELSIF TG_OP = 'UPDATE' THEN
			PERFORM app.reentry_drain('fan:' || (r ->> 'session_id'));
		ELSE
			PERFORM public.a2_drop_session('fan:' || (r ->> 'session_id'), true);
		END IF;
	ELSIF TG_TABLE_NAME ~ '^a2_snapshot' THEN
		IF TG_OP = 'DELETE' THEN
			PERFORM public.a2_read_state('fan:' || (r ->> 'session_id'),
				r ->> 'reducer_name');
		ELSE
			PERFORM public.a2_put_snapshots('fan:' || (r ->> 'session_id'),
				r ->> 'reducer_name',
				jsonb_build_array(jsonb_build_object(
					'index', r -> 'up_to_index',
					'state', jsonb_build_object('of', r ->> 'session_id'))));
		END IF;
	ELSIF TG_TABLE_NAME ~ '^a2_presence' AND r ? 'field' THEN
		IF TG_OP = 'DELETE' THEN
			PERFORM public.a2_presence_read('fan:' || (r ->> 'ns'));
		ELSE
			-- The same field, value (null for a tombstone) and time.
			PERFORM public.a2_presence_set('fan:' || (r ->> 'ns'),
				r ->> 'participant',
				jsonb_build_object(r ->> 'field',
											  COALESCE(r -> 'value', 'null'::jsonb)),
				to_timestamp((r ->> 'at')::bigint / 1000)
					+ ((r ->> 'at')::bigint % 1000) * interval '1 millisecond',
				COALESCE((r ->> 'seen')::bigint, 0),
				60000);
		END IF;
	ELSE
		PERFORM public.a2_list_sessions('fan:', NULL, 5);
	END IF;
	RETURN NULL;
END
$f$;

-- Reaches audit by its bare name: only the caller's search_path finds it.
CREATE FUNCTION app.reentry_audit() RETURNS trigger
LANGUAGE plpgsql AS $f$
DECLARE
	r jsonb;
BEGIN
	-- The driver's odd workers turn it off (see driver.py).
	IF current_setting('reentry.audit', true) = 'off' THEN
		RETURN NULL;
	END IF;
	IF TG_LEVEL = 'STATEMENT' THEN
		INSERT INTO audit (tbl, op, depth, search_path)
		VALUES (TG_TABLE_NAME, 'STATEMENT_' || TG_OP, pg_trigger_depth(),
				current_setting('search_path'));
		RETURN NULL;
	END IF;
	IF TG_OP = 'DELETE' THEN
		r := to_jsonb(OLD);
	ELSE
		r := to_jsonb(NEW);
	END IF;
	INSERT INTO audit (tbl, op, depth, key, idx, event_id, search_path)
	VALUES (TG_TABLE_NAME, TG_OP, pg_trigger_depth(),
			COALESCE(r ->> 'session_id', r ->> 'ns'), (r ->> 'idx')::bigint,
			r ->> 'event_id', current_setting('search_path'));
	RETURN NULL;
END
$f$;

DO $$
DECLARE
	t regclass;
	n integer := 0;
BEGIN
	FOR t IN
		SELECT c.oid::regclass
		  FROM pg_depend d
		  JOIN pg_class c ON c.oid = d.objid AND d.classid = 'pg_class'::regclass
		 WHERE d.refclassid = 'pg_extension'::regclass
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
		   AND d.deptype = 'e' AND c.relkind IN ('r', 'p')
		 ORDER BY c.relname
	LOOP
		IF t = 'a2_events'::regclass THEN
			EXECUTE format('CREATE TRIGGER reentry_0_before BEFORE INSERT OR UPDATE ON %s'
						   ' FOR EACH ROW EXECUTE FUNCTION app.reentry_before()', t);
		END IF;
		EXECUTE format('CREATE TRIGGER reentry_1_nested AFTER INSERT OR UPDATE OR DELETE ON %s'
					   ' FOR EACH ROW EXECUTE FUNCTION app.reentry_nested()', t);
		EXECUTE format('CREATE TRIGGER reentry_2_audit AFTER INSERT OR UPDATE OR DELETE ON %s'
					   ' FOR EACH ROW EXECUTE FUNCTION app.reentry_audit()', t);
		EXECUTE format('CREATE TRIGGER reentry_3_statement AFTER INSERT OR UPDATE OR DELETE ON %s'
					   ' FOR EACH STATEMENT EXECUTE FUNCTION app.reentry_audit()', t);
		n := n + 1;
	END LOOP;
	IF n < 9 THEN
		RAISE EXCEPTION 'expected at least the 9 tables of a2 0.2.0, found %', n;
	END IF;
	RAISE NOTICE 'reentry triggers on % a2 tables', n;
END $$;
