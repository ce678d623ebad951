--
-- queues: queues, priorities, concurrency and rate limits per key, pause
-- and resume (docs/semantics.md "Queues, priorities and limits"), all
-- driven with a2.now.  Other tests leave default-queue work behind, so
-- every claim here names its queues.
--
\set VERBOSITY terse

-- claims(result of a2_claim_next): "session:index ..." then the retryAt
CREATE FUNCTION pg_temp.claims(j jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT COALESCE((SELECT string_agg(c ->> 'sessionId' || ':' ||
                          (SELECT string_agg(e ->> 'index', ',') FROM jsonb_array_elements(c -> 'events') e),
                          ' ' ORDER BY co)
                    FROM jsonb_array_elements(j -> 'claims') WITH ORDINALITY AS x(c, co)), '-')
         || ' retry ' || COALESCE(j ->> 'retryAt', 'null')
$$;

-- claimed(result of a2_claim): the indexes it took, else outcome and retryAt
CREATE FUNCTION pg_temp.claimed(r jsonb) RETURNS text
LANGUAGE sql AS $$
  SELECT CASE r ->> 'outcome'
           WHEN 'claimed' THEN 'claimed ' || (SELECT string_agg(e ->> 'index', ',')
                                                FROM jsonb_array_elements(r -> 'events') e)
           WHEN 'busy' THEN 'busy until ' || (r ->> 'retryAt')
           ELSE r ->> 'outcome' END
$$;

-- leased(key): live leases of a key now
CREATE FUNCTION pg_temp.leased(k text) RETURNS bigint
LANGUAGE sql AS $$
  SELECT count(*) FROM a2_events
   WHERE concurrency_key = k AND processed_at IS NULL AND failed_at IS NULL
     AND claim_expires_at > a2_now_ms()
$$;

--
-- 1. The fields: stored as given, shown only when set; the defaults
-- ('default', 0, no key) are stored as NULL and not shown, so an event
-- without them reads exactly as in 0.3.0.
--
SET a2.now = '2026-08-01 00:00:00+00';
SELECT e - 'id' - 'createdAt' AS event
  FROM jsonb_array_elements(a2_append('q-a', '[
    {"type": "plain"},
    {"type": "mail", "queue": "email", "priority": 5, "concurrencyKey": "smtp"},
    {"type": "dflt", "queue": "default", "priority": 0}
  ]') -> 'events') e;
SELECT idx, queue, priority, concurrency_key FROM a2_events WHERE session_id = 'q-a' ORDER BY idx;
SELECT (a2_read('q-a', 1, 2) -> 0) ->> 'queue' AS queue,
       (a2_read('q-a', 1, 2) -> 0) ->> 'priority' AS priority,
       (a2_read('q-a', 1, 2) -> 0) ->> 'concurrencyKey' AS key;
-- a replay must repeat them
SELECT jsonb_array_length(a2_append('q-a', '[{"id": "q-r1", "type": "t", "queue": "email"}]') -> 'events') AS first;
SELECT jsonb_array_length(a2_append('q-a', '[{"id": "q-r1", "type": "t", "queue": "email"}]') -> 'events') AS replay;
SELECT a2_append('q-a', '[{"id": "q-r1", "type": "t", "queue": "other"}]');
\echo :LAST_ERROR_SQLSTATE

--
-- 2. Bad fields: 22023, nothing written.
--
\set VERBOSITY default
SELECT a2_append('q-bad', '[{"type": "x", "queue": ""}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "queue": 7}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', ('[{"type": "x", "queue": "' || repeat('q', 1025) || '"}]')::jsonb);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "priority": 1.5}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "priority": 32768}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "priority": -32769}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "priority": "1"}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "concurrencyKey": ""}]');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_append('q-bad', '[{"type": "x", "concurrencyKey": ["k"]}]');
\echo :LAST_ERROR_SQLSTATE
-- JSON null is absent (docs/json.md)
SELECT e ? 'queue' AS has_queue, e ? 'priority' AS has_priority
  FROM jsonb_array_elements(a2_append('q-null', '[{"type": "x", "queue": null, "priority": null}]') -> 'events') e;
-- the bounds are accepted
SELECT e ->> 'priority' AS priority
  FROM jsonb_array_elements(a2_append('q-bounds', '[{"type": "x", "queue": "bounds", "priority": 32767},
                                                    {"type": "y", "queue": "bounds", "priority": -32768}]') -> 'events') e;
SELECT count(*) AS written FROM a2_events WHERE session_id = 'q-bad';
\set VERBOSITY terse
-- a2_complete's returned events take them too
SELECT (a2_claim('q-a', 'w', 60000, NULL, '{}', '{default}') ->> 'outcome') AS claim;
SELECT e ->> 'queue' AS queue, e ->> 'priority' AS priority
  FROM jsonb_array_elements(a2_complete('q-a', 1, 1,
         '[{"id": "q-c1", "type": "next", "queue": "billing", "priority": -3}]') -> 'events') e;

--
-- 3. a2_claim limited to queues never takes another queue's events.
--
SELECT a2_append('q-b', '[{"type": "e1", "queue": "email"}, {"type": "p1", "queue": "payments"},
                          {"type": "e2", "queue": "email"}, {"type": "d1"}]') IS NOT NULL AS appended;
SELECT pg_temp.claimed(a2_claim('q-b', 'w', 60000, NULL, '{}', '{email}')) AS email;
SELECT pg_temp.claimed(a2_claim('q-b', 'w', 60000, NULL, '{}', '{payments,default}')) AS payments_default;
SELECT pg_temp.claimed(a2_claim('q-b', 'w', 60000, NULL, '{}', '{nothing}')) AS none;
-- bad queues arguments: 22023 / 22004, nothing claimed
SELECT a2_claim('q-b', 'w', 60000, NULL, '{}', '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_claim('q-b', 'w', 60000, NULL, '{}', '{""}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_claim('q-b', 'w', 60000, NULL, '{}', ARRAY[NULL]::text[]);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_claim_next('w', 60000, 1, NULL, '{}');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_claim_next('w', 60000, 1, NULL, ARRAY[repeat('q', 1025)]);
\echo :LAST_ERROR_SQLSTATE

--
-- 4. a2_claim_next with queues: a pool for one queue never sees another's
-- work; within a queue the session whose best event has the highest
-- priority goes first, ties oldest first.
--
SET a2.now = '2026-08-02 00:00:00+00';
SELECT a2_append('q-low-old', '[{"type": "t", "queue": "jobs", "priority": 1}]') IS NOT NULL AS appended;
SET a2.now = '2026-08-02 00:00:01+00';
SELECT a2_append('q-high', '[{"type": "t", "queue": "jobs", "priority": 10}]') IS NOT NULL AS appended;
SET a2.now = '2026-08-02 00:00:02+00';
SELECT a2_append('q-mid-a', '[{"type": "t", "queue": "jobs", "priority": 5}]') IS NOT NULL AS appended;
SET a2.now = '2026-08-02 00:00:03+00';
SELECT a2_append('q-mid-b', '[{"type": "t", "queue": "jobs", "priority": 5}]') IS NOT NULL AS appended;
SELECT a2_append('q-other', '[{"type": "t", "queue": "other-jobs", "priority": 100}]') IS NOT NULL AS appended;
SET a2.now = '2026-08-02 00:01:00+00';
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 1, NULL, '{jobs}')) AS first;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{jobs}')) AS rest;
ROLLBACK;
-- two queues: merged by priority, then age
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{jobs,other-jobs}')) AS both;
ROLLBACK;
-- a session with a high and a low event is served at its best priority
SELECT a2_append('q-low-old', '[{"type": "t2", "queue": "jobs", "priority": 20}]') IS NOT NULL AS appended;
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 2, NULL, '{jobs}')) AS best_first;
ROLLBACK;
-- lanes keep FIFO whatever the priorities: the later, higher event waits
SELECT a2_append('q-lane', '[{"type": "l1", "queue": "laned", "lane": "L", "priority": 1},
                             {"type": "l2", "queue": "laned", "lane": "L", "priority": 9}]') IS NOT NULL AS appended;
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{laned}')) AS lane_head_only;
ROLLBACK;
-- strict priority: while higher work is available, lower waits (starves)
SET a2.now = '2026-08-02 00:02:00+00';
SELECT a2_append('q-starve-low', '[{"type": "t", "queue": "strict", "priority": 0}]') IS NOT NULL AS appended;
SET a2.now = '2026-08-02 00:03:00+00';
SELECT a2_append('q-starve-h1', '[{"type": "t", "queue": "strict", "priority": 1}]') IS NOT NULL AS appended;
SELECT pg_temp.claims(a2_claim_next('w', 60000000, 1, NULL, '{strict}')) AS high_first;
SET a2.now = '2026-08-02 01:00:00+00';
SELECT a2_append('q-starve-h2', '[{"type": "t", "queue": "strict", "priority": 1}]') IS NOT NULL AS appended;
SELECT pg_temp.claims(a2_claim_next('w', 60000000, 1, NULL, '{strict}')) AS still_high_first;
SELECT pg_temp.claims(a2_claim_next('w', 60000000, 1, NULL, '{strict}')) AS then_low;

--
-- 5. Pause and resume: claims skip a paused queue; appends and
-- completions go on; resume makes it claimable at once.
--
SET a2.now = '2026-08-03 00:00:00+00';
SELECT a2_append('q-p', '[{"type": "t", "queue": "paused-q"}]') IS NOT NULL AS appended;
SELECT a2_append('q-p2', '[{"type": "t", "queue": "paused-q"}]') IS NOT NULL AS appended;
SELECT pg_temp.claimed(a2_claim('q-p2', 'w', 60000, NULL, '{}', '{paused-q}')) AS leased_before_pause;
SELECT a2_pause_queue('paused-q');
SELECT a2_pause_queue('paused-q') ->> 'changed' AS pause_again_changed;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{paused-q}')) AS paused_next;
SELECT pg_temp.claimed(a2_claim('q-p', 'w', 60000, NULL, '{}', '{paused-q}')) AS paused_claim;
SELECT pg_temp.claimed(a2_claim('q-p', 'w', 60000)) AS paused_claim_all_queues;
-- an append and the completion of a lease held before the pause go on
SELECT jsonb_array_length(a2_append('q-p', '[{"type": "more", "queue": "paused-q"}]') -> 'events') AS appended;
SELECT a2_complete('q-p2', 1, 1, '[]') ->> 'outcome' AS completed;
SELECT queue, paused, available, leased FROM a2_list_queues() WHERE queue = 'paused-q';
SELECT a2_resume_queue('paused-q') - 'queue' AS resumed;
SELECT a2_resume_queue('paused-q') ->> 'changed' AS resume_again_changed;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{paused-q}')) AS resumed_next;
-- bad names: 22004 / 22023, nothing written
SELECT a2_pause_queue(NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_pause_queue('');
\echo :LAST_ERROR_SQLSTATE
SELECT a2_resume_queue(repeat('q', 1025));
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS queue_rows FROM a2_queues;

--
-- 6. Concurrency limit: at most max_leased live leases per key; claims
-- skip the rest (busy, retryAt = the first lease's expiry); an expired
-- lease frees its slot.
--
SET a2.now = '2026-08-04 00:00:00+00';
SELECT a2_set_concurrency_limit('acct-1', 2);
SELECT a2_append('q-k1', '[{"type": "t", "queue": "limited", "concurrencyKey": "acct-1"}]') IS NOT NULL AS a1,
       a2_append('q-k2', '[{"type": "t", "queue": "limited", "concurrencyKey": "acct-1"}]') IS NOT NULL AS a2,
       a2_append('q-k3', '[{"type": "t", "queue": "limited", "concurrencyKey": "acct-1"},
                           {"type": "free", "queue": "limited"}]') IS NOT NULL AS a3;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{limited}')) AS two_of_three;
SELECT pg_temp.leased('acct-1') AS leased;
SELECT pg_temp.claimed(a2_claim('q-k3', 'w', 60000, NULL, '{}', '{limited}')) AS over_limit;
SELECT key, max_leased, leased, at_limit FROM a2_list_limits();
SELECT queue, keys_at_limit FROM a2_list_queues() WHERE queue = 'limited';
-- the leases expire: the slot is free again
SET a2.now = '2026-08-04 00:01:00.001+00';
SELECT pg_temp.claimed(a2_claim('q-k3', 'w', 60000, NULL, '{}', '{limited}')) AS after_expiry;
SELECT pg_temp.leased('acct-1') AS leased;
-- a completion frees a slot too
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{limited}')) AS fill;
SELECT pg_temp.leased('acct-1') AS leased;
SELECT a2_complete('q-k1', 1, 2, '[]') ->> 'outcome' AS completed;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{limited}')) AS after_complete;
SELECT pg_temp.leased('acct-1') AS leased;
-- raising the limit applies to the next claim
SELECT a2_set_concurrency_limit('acct-1', 3) ->> 'maxLeased' AS raised;
SELECT a2_set_concurrency_limit('acct-1', NULL) ->> 'maxLeased' AS removed;
SELECT count(*) AS limits FROM a2_limits;
-- bad limits: 22023 / 22004, nothing written
SELECT a2_set_concurrency_limit('acct-1', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_concurrency_limit('acct-1', -1);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_concurrency_limit(NULL, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_concurrency_limit('', 1);
\echo :LAST_ERROR_SQLSTATE
SELECT count(*) AS limits FROM a2_limits;

--
-- 7. Rate limit: at most max_claims claims start in any window
-- (t - per_ms, t]; retryAt is when the oldest of them leaves the window.
--
SET a2.now = '2026-08-05 00:00:00+00';
SELECT a2_set_rate_limit('api', 2, 1000) - 'key' AS rate;
SELECT a2_append('q-r' || i, '[{"type": "t", "queue": "rated", "concurrencyKey": "api"}]') IS NOT NULL AS appended
  FROM generate_series(1, 4) i;
SELECT pg_temp.claims(a2_claim_next('w', 100, 10, NULL, '{rated}')) AS first_two;
SET a2.now = '2026-08-05 00:00:00.5+00';
SELECT pg_temp.claims(a2_claim_next('w', 100, 10, NULL, '{rated}')) AS window_full;
SELECT pg_temp.claimed(a2_claim('q-r3', 'w', 100, NULL, '{}', '{rated}')) AS claim_window_full;
SELECT key, rate_max, rate_per_ms, claims_in_window, at_limit FROM a2_list_limits();
-- at 1.000 s the first two left the window (t - 1000, t]
SET a2.now = '2026-08-05 00:00:00.999+00';
SELECT pg_temp.claims(a2_claim_next('w', 100, 10, NULL, '{rated}')) AS still_full;
SET a2.now = '2026-08-05 00:00:01+00';
SELECT pg_temp.claims(a2_claim_next('w', 100, 10, NULL, '{rated}')) AS next_window;
-- old log rows are removed by later claims
SELECT count(*) AS log_rows FROM a2_rate_claims WHERE key = 'api';
-- bad rate limits
SELECT a2_set_rate_limit('api', 0, 1000);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_rate_limit('api', 1, 0);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_rate_limit('api', 1, NULL);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_set_rate_limit(NULL, 1, 1);
\echo :LAST_ERROR_SQLSTATE
SELECT key, rate_max, rate_per_ms FROM a2_limits;
SELECT a2_set_rate_limit('api', NULL, NULL) - 'key' AS removed;
SELECT count(*) AS limits FROM a2_limits;

--
-- 8. a2_admit is the claims' own, and a2_limits_changed the trigger of
-- a2_limits: called directly they refuse (55000).
--
SELECT a2_admit('api', 0);
\echo :LAST_ERROR_SQLSTATE
SELECT a2_limits_changed();
\echo :LAST_ERROR_SQLSTATE
SELECT tgname, tgtype FROM pg_trigger WHERE tgrelid = 'a2_limits'::regclass;

--
-- 9. The walk's indexes.  A call for some queues reads each one's levels
-- in a2_events_queue_available, led by the queue, so it reads that
-- queue's entries only; a call for every queue reads each level of all
-- queues at once in a2_events_level_available, led by the priority.  The
-- concurrency key (and there the queue) is included, so the walk leaves
-- out held keys' (and paused queues') entries without visiting their rows.
-- Each probe's statement reads its index by name (test/pgtap/walk_plans.sql).
--
SELECT c.relname, pg_get_indexdef(c.oid) AS definition
  FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
 WHERE i.indrelid = 'a2_events'::regclass
   AND c.relname IN ('a2_events_default_available', 'a2_events_queue_available',
					 'a2_events_level_available', 'a2_events_queue_retry')
 ORDER BY c.relname;

--
-- 10. Work a key's limit holds back: once a call finds a key admits
-- nothing more, its walk leaves out the key's events (no claim attempt per
-- session); a session with other work is still served for it, in the
-- order of that work; retryAt is the key's first lease expiry; a
-- completion makes the key's work claimable again.
--
SET a2.now = '2026-08-06 00:00:00+00';
SELECT a2_set_concurrency_limit('hot', 1) ->> 'maxLeased' AS hot_limit;
SELECT a2_append('h-1', '[{"type": "t", "queue": "held", "concurrencyKey": "hot"}]') IS NOT NULL AS h1;
SET a2.now = '2026-08-06 00:00:01+00';
SELECT a2_append('h-2', '[{"type": "t", "queue": "held", "concurrencyKey": "hot"}]') IS NOT NULL AS h2;
SET a2.now = '2026-08-06 00:00:02+00';
SELECT a2_append('h-mixed', '[{"type": "t", "queue": "held", "concurrencyKey": "hot"},
                             {"type": "free", "queue": "held"}]') IS NOT NULL AS mixed;
SET a2.now = '2026-08-06 00:00:03+00';
SELECT a2_append('h-3', '[{"type": "t", "queue": "held", "concurrencyKey": "hot"}]') IS NOT NULL AS h3;
SET a2.now = '2026-08-06 00:00:04+00';
SELECT a2_append('h-free', '[{"type": "free", "queue": "held"}]') IS NOT NULL AS free;
SET a2.now = '2026-08-06 00:00:10+00';
-- h-1 takes the key's slot; h-2, h-mixed:1 and h-3 are held back;
-- h-mixed:2 and h-free are served, oldest first
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{held}')) AS around_held;
SELECT pg_temp.leased('hot') AS leased;
-- a later call finds only held work: busy until the key's lease expires
SELECT pg_temp.claims(a2_claim_next('w', 60000, 1, NULL, '{held}')) AS only_held;
SELECT a2_complete('h-1', 1, 1, '[]') ->> 'outcome' AS completed;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 10, NULL, '{held}')) AS slot_freed;
SELECT pg_temp.leased('hot') AS leased;
-- the default queue's own walk (a2_events_default_available) leaves them
-- out too; without the limit the same call takes the event
SELECT a2_append('h-default', '[{"type": "t", "concurrencyKey": "hot"}]') IS NOT NULL AS default_held;
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 1000, NULL, '{default}')) LIKE '%h-default%' AS default_claimed;
SELECT pg_temp.leased('hot') AS leased;
ROLLBACK;
SELECT a2_set_concurrency_limit('hot', NULL) ->> 'maxLeased' AS removed;
BEGIN;
SELECT pg_temp.claims(a2_claim_next('w', 60000, 1000, NULL, '{default}')) LIKE '%h-default%' AS default_claimed;
ROLLBACK;
RESET a2.now;
