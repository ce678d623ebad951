--
-- cron: schedule specs (docs/time.md, "Schedules"), evaluated with
-- a2_schedule_ticks(spec, timezone, after, count), which writes nothing.
-- Every field form, macros, intervals, Vixie cron's day-of-month OR
-- day-of-week, and daylight-saving gaps and repeats in a northern
-- (Europe/Berlin) and a southern (Australia/Sydney) zone.
--
\set VERBOSITY terse
SET TimeZone = 'UTC';

-- ticks(spec, zone, after, n): the ticks, in UTC and in the zone's local time
CREATE FUNCTION pg_temp.ticks(spec text, zone text, after timestamptz, n integer DEFAULT 5)
RETURNS TABLE (utc text, local text)
LANGUAGE sql AS $$
  SELECT to_char(t AT TIME ZONE 'UTC', 'YYYY-MM-DD Dy HH24:MI'),
         to_char(t AT TIME ZONE zone, 'YYYY-MM-DD Dy HH24:MI')
    FROM a2_schedule_ticks(spec, zone, after, n) t
$$;

-- == field forms (UTC) ==
-- a number, strictly after "after": 10:00 itself is not next
SELECT * FROM pg_temp.ticks('0 10 * * *', 'UTC', '2026-01-05 10:00', 2);
-- *: every minute
SELECT * FROM pg_temp.ticks('* * * * *', 'UTC', '2026-01-05 10:00:30', 3);
-- a range and a list
SELECT * FROM pg_temp.ticks('5,35 8-9 * * *', 'UTC', '2026-01-05 00:00', 5);
-- steps: */20, a range with a step, N/step (N to the field's end)
SELECT * FROM pg_temp.ticks('*/20 12 * * *', 'UTC', '2026-01-05 00:00', 4);
SELECT * FROM pg_temp.ticks('0 1-10/4 * * *', 'UTC', '2026-01-05 00:00', 4);
SELECT * FROM pg_temp.ticks('50/5 0 * * *', 'UTC', '2026-01-05 00:00', 3);
-- month names and numbers, case-insensitive, a range of names
SELECT * FROM pg_temp.ticks('0 0 1 JAN,jul *', 'UTC', '2026-01-05', 3);
SELECT * FROM pg_temp.ticks('0 0 1 mar-may,11 *', 'UTC', '2026-01-05', 4);
-- day-of-week names, a range, 0 and 7 both Sunday
SELECT * FROM pg_temp.ticks('0 9 * * mon-fri', 'UTC', '2026-01-09 10:00', 3);
SELECT * FROM pg_temp.ticks('0 9 * * 7', 'UTC', '2026-01-05', 2);
SELECT * FROM pg_temp.ticks('0 9 * * 0', 'UTC', '2026-01-05', 2);
-- day-of-month alone; the 31st skips short months; Feb 29 waits for a leap year
SELECT * FROM pg_temp.ticks('0 0 31 * *', 'UTC', '2026-01-05', 3);
SELECT * FROM pg_temp.ticks('0 0 29 2 *', 'UTC', '2026-01-05', 2);
-- both day fields restricted: either matches (Vixie cron): the 13th or a Friday
SELECT * FROM pg_temp.ticks('0 0 13 * fri', 'UTC', '2026-02-01', 5);
-- one day field begins with '*': both must match (*/2 days that are Fridays)
SELECT * FROM pg_temp.ticks('0 0 */2 * fri', 'UTC', '2026-02-01', 3);
-- macros
SELECT * FROM pg_temp.ticks('@hourly', 'UTC', '2026-01-05 10:30', 2);
SELECT * FROM pg_temp.ticks('@daily', 'UTC', '2026-01-05 10:30', 1);
SELECT * FROM pg_temp.ticks('@midnight', 'UTC', '2026-01-05 10:30', 1);
SELECT * FROM pg_temp.ticks('@weekly', 'UTC', '2026-01-05 10:30', 1);
SELECT * FROM pg_temp.ticks('@monthly', 'UTC', '2026-01-05 10:30', 1);
SELECT * FROM pg_temp.ticks('@yearly', 'UTC', '2026-01-05 10:30', 1);
SELECT * FROM pg_temp.ticks('@annually', 'UTC', '2026-01-05 10:30', 1);
-- extra white space is fine
SELECT * FROM pg_temp.ticks('  0   10 * *  *  ', 'UTC', '2026-01-05', 1);

-- == intervals: elapsed time, multiples since 1970-01-01 UTC, any zone ==
SELECT * FROM pg_temp.ticks('every 15 minutes', 'UTC', '2026-01-05 10:07', 3);
SELECT * FROM pg_temp.ticks('every 15 minutes', 'Asia/Kolkata', '2026-01-05 10:07', 2);
SELECT * FROM pg_temp.ticks('every minute', 'UTC', '2026-01-05 10:07:10', 2);
SELECT * FROM pg_temp.ticks('every 30 seconds', 'UTC', '2026-01-05 10:07:10', 2);
SELECT * FROM pg_temp.ticks('Every 2 Hours', 'UTC', '2026-01-05 10:07', 2);
SELECT * FROM pg_temp.ticks('every 1 day', 'UTC', '2026-01-05 10:07', 2);
-- through Berlin's spring-forward night: 60 minutes apart, whatever the wall clock says
SELECT * FROM pg_temp.ticks('every 1 hour', 'Europe/Berlin', '2026-03-29 00:30+00', 3);

-- == a zone moves the wall clock: 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer ==
SELECT * FROM pg_temp.ticks('0 9 * * mon-fri', 'Europe/Berlin', '2026-03-26 12:00+00', 3);

-- == daylight saving, northern: Europe/Berlin ==
-- 2026-03-29 02:00 CET -> 03:00 CEST: 02:30 does not exist that night;
-- it fires once, when the gap ends (03:00 CEST = 01:00 UTC)
SELECT * FROM pg_temp.ticks('30 2 * * *', 'Europe/Berlin', '2026-03-27 12:00+00', 3);
-- several ticks in the gap fire once, together, at its end; 03:00 too is that instant
SELECT * FROM pg_temp.ticks('*/20 2-3 * * *', 'Europe/Berlin', '2026-03-29 00:30+00', 4);
-- every minute: the wall clock jumps from 01:59 to 03:00, no tick lost or doubled
SELECT * FROM pg_temp.ticks('* * * * *', 'Europe/Berlin', '2026-03-29 00:58+00', 3);
-- 2026-10-25 03:00 CEST -> 02:00 CET: 02:30 happens twice; it fires once, the first time (CEST)
SELECT * FROM pg_temp.ticks('30 2 * * *', 'Europe/Berlin', '2026-10-23 12:00+00', 3);
-- asked from inside the repeated hour (02:10 CET, the second time round): 02:30 has fired
SELECT * FROM pg_temp.ticks('30 2 * * *', 'Europe/Berlin', '2026-10-25 01:10+00', 1);
-- hourly through the repeated hour: 02:00 once (CEST), then 03:00 CET
SELECT * FROM pg_temp.ticks('0 * * * *', 'Europe/Berlin', '2026-10-24 23:30+00', 4);

-- == daylight saving, southern: Australia/Sydney ==
-- 2026-10-04 02:00 AEST -> 03:00 AEDT: the gap, in the southern spring
SELECT * FROM pg_temp.ticks('30 2 * * *', 'Australia/Sydney', '2026-10-02 12:00+00', 3);
SELECT * FROM pg_temp.ticks('0,15,30,45 2 * * *', 'Australia/Sydney', '2026-10-03 14:00+00', 3);
-- 2026-04-05 03:00 AEDT -> 02:00 AEST: the repeat, in the southern autumn
SELECT * FROM pg_temp.ticks('30 2 * * *', 'Australia/Sydney', '2026-04-03 12:00+00', 3);
SELECT * FROM pg_temp.ticks('0 * * * *', 'Australia/Sydney', '2026-04-04 14:30+00', 4);

-- == zones west of UTC (once refused: the spec check started at the epoch,
-- 1969-12-31 there, and read its first match as none) ==
SELECT * FROM pg_temp.ticks('0 9 * * mon-fri', 'America/New_York', '2026-03-06 12:00+00', 3);
SELECT * FROM pg_temp.ticks('0 0 29 2 *', 'Pacific/Honolulu', '2026-01-05', 1);

-- == count ==
SELECT count(*) FROM a2_schedule_ticks('every 1 second', 'UTC', '2026-01-05', 100000);
SELECT count(*) FROM a2_schedule_ticks('@hourly', 'UTC', '2026-01-05', 0);
-- ticks end with a2's time range (+275760-09-13): fewer than count, never
-- an overflowed timestamp (once 66381 leap days and 33619 garbage values)
SELECT count(*), to_char(max(t) AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI') AS last FROM a2_schedule_ticks('0 0 29 2 *', 'UTC', '2026-01-05', 100000) t;
SELECT * FROM pg_temp.ticks('every 1 day', 'UTC', '275760-09-11 12:00+00', 5);

-- == errors: 22023 (22004 for a NULL), with the field named ==
\set VERBOSITY default
SELECT * FROM a2_schedule_ticks('', 'UTC', '2026-01-05');
\echo :LAST_ERROR_SQLSTATE
SELECT * FROM a2_schedule_ticks('0 0 * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('0 0 * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('60 * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* 24 * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* * 0 * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* * * 13 *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* * * * 8', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('10-5 * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('*/0 * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('*/x * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('1,,2 * * * *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* * * foo *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('* * * * monday', 'UTC', '2026-01-05');
-- a range does not wrap around the field's end (as in Vixie cron): list both parts
SELECT * FROM a2_schedule_ticks('0 0 1 nov-feb *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('0 0 30 2 *', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('@reboot', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('every 0 minutes', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('every 5 fortnights', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('every 3651 days', 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('@hourly', 'Mars/Olympus_Mons', '2026-01-05');
SELECT * FROM a2_schedule_ticks('@hourly', 'UTC', 'infinity');
SELECT * FROM a2_schedule_ticks('@hourly', 'UTC', '2026-01-05', 100001);
SELECT * FROM a2_schedule_ticks('@hourly', 'UTC', '2026-01-05', -1);
SELECT * FROM a2_schedule_ticks(NULL, 'UTC', '2026-01-05');
SELECT * FROM a2_schedule_ticks('@hourly', NULL, '2026-01-05');
SELECT * FROM a2_schedule_ticks('@hourly', 'UTC', NULL);
\echo :LAST_ERROR_SQLSTATE
