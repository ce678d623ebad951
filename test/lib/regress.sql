\set ECHO none
--
-- test/lib/regress.sql: helpers shared by the pg_regress inputs
-- (sql/NAME.sql).  A test includes it near its top with
--
--   \i test/lib/regress.sql
--
-- The path is relative to the repository root: pg_regress runs psql there
-- (make installcheck, REGRESS_OPTS --inputdir=.) and feeds it the input
-- file on stdin.
--
-- pg_regress runs psql with -a (ECHO all), so every line psql reads shows
-- in the expected output.  This file turns the echo off on its first line
-- and back on at its end: an expected output shows the \i line and
-- "\set ECHO none", not the helpers' text.  Read them here.
--
-- Each helper is a pg_temp function: it lasts as long as the test's
-- session and needs no cleanup.  A test that wants a different helper of
-- the same name (redrive.sql's claimed shows attempt counts,
-- scheduling.sql's reads busy answers) defines its own and does not
-- include this file.
--

-- ev(result): the StoredEvents of an a2 result (an array, or an object
-- with "events") as rows, one column per JSON key, for readable output
CREATE FUNCTION pg_temp.ev(j jsonb)
RETURNS TABLE (index bigint, id text, type text, payload jsonb,
			   session_id text, created_at text, cause jsonb, lane text,
			   processed_at text, processed_by_attempt int,
			   returned_event_ids jsonb, first_claimed_at text,
			   last_claimed_at text, attempt_count int, failure_count int,
			   last_failed_at text, last_failed_attempt int, last_error text,
			   failed_at text, claim_holder text, claim_expires_at text)
LANGUAGE sql AS $$
  SELECT * FROM jsonb_to_recordset(CASE jsonb_typeof(j) WHEN 'array' THEN j
                                   ELSE j -> 'events' END)
    AS e("index" bigint, id text, type text, payload jsonb,
         "sessionId" text, "createdAt" text, cause jsonb, lane text,
         "processedAt" text, "processedByAttempt" int,
         "returnedEventIds" jsonb, "firstClaimedAt" text,
         "lastClaimedAt" text, "attemptCount" int, "failureCount" int,
         "lastFailedAt" text, "lastFailedAttempt" int, "lastError" text,
         "failedAt" text, "claimHolder" text, "claimExpiresAt" text)
$$;

-- claimed(result of a2_claim): the indexes the claim took, e.g. "2,5,8";
-- when it took none, its outcome, with "until <retryAt>" when it has one
CREATE FUNCTION pg_temp.claimed(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE(string_agg(e ->> 'index', ',' ORDER BY o),
                  j ->> 'outcome' || COALESCE(' until ' || (j ->> 'retryAt'), ''))
    FROM jsonb_array_elements(j -> 'events') WITH ORDINALITY AS x(e, o)
$$;

\set ECHO all
