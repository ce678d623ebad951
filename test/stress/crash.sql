/*
 * test/stress/crash.sql
 *	  Extra steps for the crash suite (test/suites/30-crash.sh), after
 *	  setup.sql.  Its client loops log, in files outside the database, what
 *	  they saw commit: only a commit that survives the crash may be logged.
 */
\set ON_ERROR_STOP 1

-- One handler iteration on a session only this loop uses: append an event
-- (in one lane, so events are handled in order), claim what is ready and
-- complete it, in one transaction.  Returns "idx attempt" per completion,
-- which the loop logs once the commit has returned.  Claim before complete
-- in one transaction breaks the lock order (row, then session lock), which
-- is safe only because nobody else touches the session.
CREATE FUNCTION crash_work(sess text, c integer, id text) RETURNS SETOF text
LANGUAGE plpgsql AS $$
DECLARE
	res jsonb;
	done jsonb;
	ev jsonb;
BEGIN
	PERFORM a2_append(sess, jsonb_build_array(
		jsonb_build_object('id', id, 'type', 'crash-work', 'lane', 'w')));
	res := a2_claim(sess, 'crash-' || c, 60000);
	IF res->>'outcome' <> 'claimed' THEN
		PERFORM stress_fail(format('%s: nothing to claim after an append: %s', sess, res));
	END IF;
	FOR ev IN SELECT * FROM jsonb_array_elements(res->'events') LOOP
		INSERT INTO stress_attempts (session_id, idx, attempt, client)
		VALUES (sess, (ev->>'index')::bigint, (ev->>'attemptCount')::integer, c);
		done := a2_complete(sess, (ev->>'index')::bigint, (ev->>'attemptCount')::integer);
		IF done->>'outcome' <> 'completed' THEN
			PERFORM stress_fail(format('%s: completing %s returned %s', sess, ev, done));
		END IF;
		RETURN NEXT (ev->>'index') || ' ' || (ev->>'attemptCount');
	END LOOP;
END $$;

-- The client-side logs, loaded after the restart.
CREATE TABLE crash_client_log (
	event_id	text	NOT NULL,
	session_id	text	NOT NULL
);

CREATE TABLE crash_client_done (
	session_id	text	NOT NULL,
	idx			bigint	NOT NULL,
	attempt		integer NOT NULL
);
