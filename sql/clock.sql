--
-- clock: the store clock (SPEC section 3 "Clock").
--
-- Every timestamp an a2 call writes or compares comes from one reading of
-- the clock: the wall clock, unless a2.now holds a timestamp.  JSON shows
-- timestamps as JavaScript's Date.prototype.toISOString() writes them.
--
\set VERBOSITY terse

-- The first a2 call loads the library; from then on a2.now is a checked
-- setting (before the load PostgreSQL would keep any text as a placeholder).
SELECT a2_read('clock-none');

-- empty by default: the wall clock
SHOW a2.now;

--
-- a2.now accepts any timestamptz literal, with a space or ISO 8601's T
--
SET a2.now = '2026-01-01 00:00:00+00';
SHOW a2.now;
SELECT a2_append('clock-a', '[{"id": "clock-a-1", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;

SET a2.now = '2026-01-01T00:00:00.000Z';
SELECT a2_append('clock-a', '[{"id": "clock-a-2", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;

-- any zone in the literal; JSON is always UTC with milliseconds and Z
SET a2.now = '2026-03-04 05:06:07.089+02';
SELECT a2_append('clock-a', '[{"id": "clock-a-3", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;

-- a literal without a zone is read in the session's TimeZone, as timestamptz does
SET TimeZone = 'Asia/Tokyo';
SET a2.now = '2026-01-01 09:00:00';
SELECT a2_append('clock-a', '[{"id": "clock-a-4", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
RESET TimeZone;

-- the stored value is epoch milliseconds
SELECT event_id, created_at
  FROM a2_events WHERE session_id = 'clock-a' ORDER BY idx;

--
-- toISOString() corner cases: zero-padded milliseconds, instants before
-- 1970, years outside 0000..9999 (a sign and six digits)
--
SET a2.now = '2026-07-08 09:10:11.005+00';
SELECT a2_append('clock-b', '[{"id": "clock-b-1", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = '1969-12-31 23:59:59.999+00';
SELECT a2_append('clock-b', '[{"id": "clock-b-2", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = 'epoch';
SELECT a2_append('clock-b', '[{"id": "clock-b-3", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = '0001-01-01 00:00:00+00 BC';
SELECT a2_append('clock-b', '[{"id": "clock-b-4", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = '0002-12-31 23:59:59.999+00 BC';
SELECT a2_append('clock-b', '[{"id": "clock-b-5", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = '12345-06-07 08:09:10.011+00';
SELECT a2_append('clock-b', '[{"id": "clock-b-6", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
-- the stored and read-back values agree with what append returned
SELECT e.event_id, e.created_at, r ->> 'createdAt' AS read_back
  FROM a2_events e
  JOIN jsonb_array_elements(a2_read('clock-b')) r ON r ->> 'id' = e.event_id
 WHERE e.session_id = 'clock-b' ORDER BY e.idx;

--
-- a value that is not a finite timestamp is refused when set, and the
-- previous value stays
--
-- the clock ends where JavaScript's dates end: that instant is taken, a
-- millisecond beyond is refused (a2 could not write it as JSON)
SET a2.now = '275760-09-13 00:00:00+00';
SELECT a2_append('clock-edge', '[{"type": "tick"}]') -> 'events' -> 0 ->> 'createdAt' AS created_at;
SET a2.now = '275760-09-13 00:00:00.001+00';
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SHOW a2.now;
SET a2.now = '2026-05-05 05:05:05+00';
SET a2.now = 'not a timestamp';
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SET a2.now = '2026-13-01 00:00:00+00';
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SET a2.now = 'infinity';
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SET a2.now = '-infinity';
\echo SQLSTATE :LAST_ERROR_SQLSTATE
SHOW a2.now;
SELECT a2_append('clock-c', '[{"id": "clock-c-1", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;

-- SET LOCAL is undone with the transaction
BEGIN;
SET LOCAL a2.now = '2030-01-01 00:00:00+00';
SELECT a2_append('clock-c', '[{"id": "clock-c-2", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at;
COMMIT;
SHOW a2.now;

--
-- empty means the wall clock: a reading between just before and just after
-- the call (milliseconds, so compare with the start truncated to them)
--
SET a2.now = '';
SHOW a2.now;
SELECT clock_timestamp() AS before_call \gset
SELECT a2_append('clock-d', '[{"id": "clock-d-1", "type": "tick"}]')
       -> 'events' -> 0 ->> 'createdAt' AS created_at \gset
SELECT clock_timestamp() AS after_call \gset
SELECT :'created_at' ~ '^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$' AS iso_format,
       :'created_at'::timestamptz
         BETWEEN date_trunc('milliseconds', :'before_call'::timestamptz)
             AND :'after_call'::timestamptz AS within_call;

-- RESET also means the wall clock
SET a2.now = '2000-01-01 00:00:00+00';
RESET a2.now;
SELECT (a2_append('clock-d', '[{"id": "clock-d-2", "type": "tick"}]')
        -> 'events' -> 0 ->> 'createdAt')::timestamptz > '2020-01-01' AS wall_clock;

--
-- one clock reading per call, even on the wall clock: a large batch, a
-- large claim and a completion with many children each write one instant
--
CREATE TEMP TABLE bulk_append AS
SELECT a2_append('clock-e',
         (SELECT jsonb_agg(jsonb_build_object('id', 'clock-e-' || i, 'type', 'bulk'))
            FROM generate_series(1, 5000) i)) AS r;
SELECT count(*) AS appended,
       count(DISTINCT e ->> 'createdAt') AS distinct_created_at
  FROM bulk_append, jsonb_array_elements(r -> 'events') e;
SELECT count(*) AS stored, count(DISTINCT created_at) AS distinct_stored_created_at
  FROM a2_events WHERE session_id = 'clock-e';

CREATE TEMP TABLE bulk_claim AS
SELECT a2_claim('clock-e', 'clock-worker', 60000) AS r;
SELECT count(*) AS claimed,
       count(DISTINCT e ->> 'lastClaimedAt') AS distinct_claimed_at,
       bool_and(e ->> 'firstClaimedAt' = e ->> 'lastClaimedAt') AS first_is_last,
       bool_and((e ->> 'claimExpiresAt')::timestamptz
                = (e ->> 'lastClaimedAt')::timestamptz + interval '60 seconds')
         AS expiry_is_claim_plus_ttl
  FROM bulk_claim, jsonb_array_elements(r -> 'events') e;

CREATE TEMP TABLE bulk_complete AS
SELECT a2_complete('clock-e', 1, 1,
         (SELECT jsonb_agg(jsonb_build_object('id', 'clock-e-child-' || i, 'type', 'child'))
            FROM generate_series(1, 5000) i)) AS r;
WITH parent AS (
  SELECT a2_read('clock-e', 0, 1) -> 0 ->> 'processedAt' AS processed_at
)
SELECT count(*) AS children,
       count(DISTINCT e ->> 'createdAt') AS distinct_created_at,
       bool_and(e ->> 'createdAt' = parent.processed_at) AS parent_processed_same_instant
  FROM bulk_complete, parent, jsonb_array_elements(r -> 'events') e;

-- fail: lastFailedAt and failedAt of a dead-lettering are one reading
SELECT a2_fail('clock-e', 2, 1, 'boom', 1) ->> 'outcome' AS outcome;
SELECT last_failed_at IS NOT NULL AND last_failed_at = failed_at AS one_reading
  FROM a2_events WHERE session_id = 'clock-e' AND idx = 2;
