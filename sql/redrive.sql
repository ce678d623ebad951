--
-- redrive: a2_redrive(session_id, event_index) and a2_redrive(session_id)
-- put dead-lettered events back in play.
--
\set VERBOSITY terse
SET a2.now = '2026-04-01 00:00:00+00';

-- the failure columns of one event, as a2_read returns them
CREATE FUNCTION pg_temp.event(s text, i bigint)
RETURNS TABLE (index bigint, attempt_count int, failure_count int,
			   last_error text, last_failed_attempt int, failed_at text,
			   claim_holder text)
LANGUAGE sql AS $$
  SELECT * FROM jsonb_to_recordset(a2_read(s, i - 1, i))
    AS e("index" bigint, "attemptCount" int, "failureCount" int,
         "lastError" text, "lastFailedAttempt" int, "failedAt" text,
         "claimHolder" text)
$$;

-- claimed(result): the indexes a claim took, or its outcome
CREATE FUNCTION pg_temp.claimed(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE(string_agg((e ->> 'index') || '@' || (e ->> 'attemptCount'), ',' ORDER BY o),
                  j ->> 'outcome')
    FROM jsonb_array_elements(j -> 'events') WITH ORDINALITY AS x(e, o)
$$;

-- rd-a: 1 and 2 in lane q, 3 without a lane, 4 settled
SELECT a2_append('rd-a', '[
  {"id": "rd-a-1", "type": "job", "lane": "q"},
  {"id": "rd-a-2", "type": "job", "lane": "q"},
  {"id": "rd-a-3", "type": "job"},
  {"id": "rd-a-4", "type": "note", "settled": true}
]') -> 'hasPending' AS pending;

-- Event 1 fails twice with max_failures 2 and is dead-lettered; 3 fails
-- once and is dead-lettered with max_failures 1.
SELECT pg_temp.claimed(a2_claim('rd-a', 'w1', 60000));
SELECT a2_fail('rd-a', 1, 1, 'timeout', 2) ->> 'outcome' AS fail;
SELECT pg_temp.claimed(a2_claim('rd-a', 'w1', 60000));
SELECT a2_fail('rd-a', 1, 2, 'bad input', 2) ->> 'outcome' AS fail;
SELECT a2_fail('rd-a', 3, 1, 'crash', 1) ->> 'outcome' AS fail;
SELECT * FROM pg_temp.event('rd-a', 1);
-- Lane q is blocked behind 1; nothing is claimable.
SELECT pg_temp.claimed(a2_claim('rd-a', 'w1', 60000));

--
-- 1. Redrive of one event: failed_at cleared, failure_count back to 0,
-- the last error and attempt kept, lease clear.  The result is the
-- redriven StoredEvent.
--
SET a2.now = '2026-04-01 00:01:00+00';
SELECT r ->> 'outcome' AS outcome, r -> 'event' ->> 'index' AS index,
       r -> 'event' ->> 'failedAt' AS failed_at,
       r -> 'event' ->> 'failureCount' AS failures,
       r -> 'event' ->> 'lastError' AS last_error
  FROM a2_redrive('rd-a', 1) r;
SELECT * FROM pg_temp.event('rd-a', 1);
-- It is claimable at once, as a new attempt (3); 2 still waits behind it
-- in lane q, and 3 is still dead-lettered.
SELECT pg_temp.claimed(a2_claim('rd-a', 'w2', 60000));

--
-- 2. Redriving twice is harmless: the second call writes nothing and says
-- so, even while the redriven event is claimed.
--
SELECT r ->> 'outcome' AS outcome, r -> 'event' ->> 'attemptCount' AS attempt,
       r -> 'event' ->> 'claimHolder' AS holder
  FROM a2_redrive('rd-a', 1) r;

--
-- 3. A new budget: with max_failures 2 the redriven event survives one
-- failure and is dead-lettered by the second.
--
SELECT a2_fail('rd-a', 1, 3, 'still bad', 2) || '{}' AS fail;
SELECT pg_temp.claimed(a2_claim('rd-a', 'w2', 60000));
SELECT a2_fail('rd-a', 1, 4, 'still bad', 2) || '{}' AS fail;
-- A stale attempt cannot complete it after a redrive either.
SELECT a2_redrive('rd-a', 1) ->> 'outcome' AS outcome;
SELECT a2_complete('rd-a', 1, 4) ->> 'outcome' AS stale_complete;

--
-- 4. Redrive a whole session: every dead letter, in index order (1 and 3).
-- A session without dead letters gives [] and changes nothing.
--
SELECT pg_temp.claimed(a2_claim('rd-a', 'w3', 60000));
SELECT a2_fail('rd-a', 1, 5, 'gave up', 1) ->> 'outcome' AS fail;
SELECT jsonb_path_query_array(a2_redrive('rd-a'), '$.events[*].index') AS redriven;
SELECT jsonb_path_query_array(a2_redrive('rd-a'), '$.events[*].index') AS again;
SELECT a2_redrive('rd-none');
SELECT pg_temp.claimed(a2_claim('rd-a', 'w3', 60000));

--
-- 5. The lane moves once the redriven head is processed.
--
SELECT a2_complete('rd-a', 1, 6) ->> 'outcome' AS complete;
SELECT pg_temp.claimed(a2_claim('rd-a', 'w3', 60000));

--
-- 6. Errors.  Z2003: no such event.  Z2004: not dead-lettered (processed,
-- or unfinished and not redriven).  Nothing is written.
--
CREATE FUNCTION pg_temp.try(q text) RETURNS text LANGUAGE plpgsql AS $$
BEGIN
  EXECUTE q;
  RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
  RETURN SQLSTATE || ': ' || SQLERRM;
END
$$;
SELECT q, pg_temp.try(q) FROM unnest(ARRAY[
  $q$SELECT a2_redrive('rd-a', 99)$q$,
  $q$SELECT a2_redrive('rd-a', 4)$q$,
  $q$SELECT a2_redrive('rd-a', 2)$q$,
  $q$SELECT a2_redrive('rd-none', 1)$q$,
  $q$SELECT a2_redrive(NULL, 1)$q$,
  $q$SELECT a2_redrive('rd-a', NULL)$q$,
  $q$SELECT a2_redrive('rd-a', 0)$q$,
  $q$SELECT a2_redrive(NULL)$q$,
  $q$SELECT a2_redrive('')$q$]) q;
\set VERBOSITY default
SELECT a2_redrive('rd-a', 2);
SELECT * FROM pg_temp.event('rd-a', 2);

RESET a2.now;
