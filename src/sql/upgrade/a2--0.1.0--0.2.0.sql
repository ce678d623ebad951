/* a2 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.2.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs this script
-- (there is no a2--0.2.0.sql), so a fresh install and an upgrade are the
-- same objects by construction.  Each section below belongs to one change
-- of 0.2.0; keep them in this order.

-- == notifier (issue 8) ==================================================

-- How this session's announcements are sent, and the notifier's queue.
-- mode: 'notifier' (a2 is in shared_preload_libraries: a background worker
-- sends NOTIFY after commit), 'in-transaction' (not preloaded: the
-- committing transaction sends NOTIFY itself, as in 0.1.0), or 'off'
-- (a2.notify = off in this session).  The other columns are NULL unless
-- the notifier's shared memory exists; the counters run since the server
-- started.
CREATE FUNCTION a2_notify_status(
	OUT mode text,
	OUT notifier_pid integer,
	OUT queue_size integer,
	OUT queue_depth integer,
	OUT waiting integer,
	OUT recorded bigint,
	OUT announced bigint,
	OUT coalesced bigint,
	OUT fallbacks bigint,
	OUT dropped bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'a2_notify_status'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_status() IS
'How announcements on a2_events are sent in this session (mode: notifier, in-transaction or off) and the notifier queue: size, depth, entries waiting for a running (e.g. prepared) transaction, and counters since server start: recorded, announced (NOTIFYs sent), coalesced (entries merged into a later one of the same session), fallbacks (transactions that found the queue full and sent NOTIFY themselves), dropped (entries of transactions that aborted after recording).';

CREATE FUNCTION a2_notify_wait(timeout_ms bigint DEFAULT 10000)
RETURNS boolean
AS 'MODULE_PATHNAME', 'a2_notify_wait'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_wait(bigint) IS
'Wait until the notifier has sent every announcement owed by transactions that have finished (those of running or prepared transactions are not owed yet), so that a listener''s next round trip receives them; true when done, false after timeout_ms. Without the notifier announcements are sent at commit and this returns true at once. Meant for tests.';

-- == fleet claiming, redrive (issue 9) ===================================

-- The rows that are or will become claimable (lane-ready, unprocessed, not
-- dead-lettered), keyed by the time they became available: the lease
-- expiry when leased, else the creation time.  a2_claim_next walks it
-- oldest first and stops at now, so its cost does not grow with the
-- number of sessions or of finished events; its retryAt is one probe
-- past now.  session_id makes the key unique enough to resume a walk.
CREATE INDEX a2_events_available
	ON a2_events ((COALESCE(claim_expires_at, created_at)), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;

CREATE FUNCTION a2_claim_next(holder text,
							  ttl_ms bigint,
							  max_sessions integer DEFAULT 1,
							  expires_at timestamptz DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim_next'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim_next(text, bigint, integer, timestamptz) IS
'Claim, by a2_claim''s rule, every eligible event of up to max_sessions sessions that have eligible work now, oldest available work first, skipping (never waiting for) sessions other transactions are claiming; returns {"claims":[{"sessionId","events":[StoredEvent]}],"retryAt":iso|null}, retryAt being the earliest live lease expiry.';

CREATE FUNCTION a2_redrive(session_id text, event_index bigint)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_redrive'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_redrive(text, bigint) IS
'Put a dead-lettered event back in play (claimable at once, failureCount reset to 0, last error kept); returns {"outcome":"redriven"|"already_redriven","event":StoredEvent}. An event that is not dead-lettered raises Z2004.';

CREATE FUNCTION a2_redrive(session_id text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_redrive_session'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_redrive(text) IS
'Redrive every dead-lettered event of a session, in index order; returns {"events":[StoredEvent]} (the redriven events, [] when there were none).';

-- == operations: inspection, metrics, retention (issue 10) ===============

-- High-water marks of dropped sessions: a2_drop_session records the last
-- index here, and append reads it (through a2_retired_last_index) only
-- when the session has no event rows, so indexes are never reused.  One
-- small row per dropped session id, kept forever.
CREATE TABLE a2_retired_sessions (
	session_id		text	NOT NULL PRIMARY KEY,
	last_index		bigint	NOT NULL,
	retired_at		bigint	NOT NULL
);

SELECT pg_catalog.pg_extension_config_dump('a2_retired_sessions', '');

-- STABLE, so under the session lock it reads with the caller's statement
-- snapshot (the latest one, see a2_exec_latest); SECURITY DEFINER, so an
-- appender needs no privilege on a2_retired_sessions and cannot list it.
CREATE FUNCTION a2_retired_last_index(session_id text)
RETURNS bigint
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = pg_catalog
AS $$
	SELECT r.last_index FROM @extschema@.a2_retired_sessions r
	 WHERE r.session_id OPERATOR(pg_catalog.=) $1
$$;

COMMENT ON FUNCTION a2_retired_last_index(text) IS
'The last index of a dropped session (NULL if it was never dropped); appends to a session with no rows continue after it.';

-- Autovacuum for the churn every claim and completion causes (no HOT
-- update is possible: claim_expires_at and the partial-index predicates
-- change).  At the defaults autovacuum waits for dead rows worth 20% of
-- the table, so on a table with history the partial indexes, which should
-- hold only unfinished events, grow until then: in the 10-minute soak on
-- 1.5M events (bench/soak.sh, bench/RESULTS.md "Bloat under churn") the
-- default run never vacuumed and a2_events_claim_expiry grew to 8.0 MB
-- and climbing; with these settings it vacuumed 5 times and the index
-- stayed at 1.6 MB, at the same throughput.
ALTER TABLE a2_events SET (
	autovacuum_vacuum_scale_factor = 0.02,
	autovacuum_vacuum_insert_scale_factor = 0.05,
	autovacuum_analyze_scale_factor = 0.05,
	autovacuum_vacuum_cost_delay = 1
);

CREATE FUNCTION a2_list_sessions(prefix text,
								 cursor text DEFAULT NULL,
								 max_sessions integer DEFAULT 100)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_sessions'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_sessions(text, text, integer) IS
'A page of session summaries in session-id order: {"sessions": [{sessionId, eventCount, pendingCount, failedCount, attemptCount, failureCount, firstEventAt, updatedAt}], "cursor": text or null}. Pass cursor back for the next page; a page costs in proportion to the page.';

CREATE FUNCTION a2_list_snapshots(session_id text,
								  include_history boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_snapshots'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_snapshots(text, boolean) IS
'A session''s reducer checkpoints, ordered by reducer and index: [{reducerName, index, updatedAt}] (the heads); with include_history, the pinned history rows too and a "head" flag on every element.';

CREATE FUNCTION a2_metrics(
	OUT sessions_with_eligible_work bigint,
	OUT eligible_events bigint,
	OUT leased_events bigint,
	OUT expired_leases bigint,
	OUT dead_letters bigint,
	OUT lane_waiting_events bigint,
	OUT oldest_eligible_created_at timestamptz,
	OUT oldest_eligible_age_ms bigint,
	OUT events_estimate bigint,
	OUT dead_rows_estimate bigint,
	OUT events_inserted_estimate bigint,
	OUT measured_at timestamptz)
AS 'MODULE_PATHNAME', 'a2_metrics'
LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog
-- The unprocessed rows are found through a2_events_unprocessed.  Once they
-- are a few per cent of the table the planner picks a sequential scan,
-- although they sit together in the newest pages (appends and the updates
-- of claims go there): 3.4 s instead of 0.36 s on 10M events with 500k
-- unprocessed (bench/RESULTS.md).  JIT would only add compile time.
SET enable_seqscan = off
SET jit = off;

COMMENT ON FUNCTION a2_metrics() IS
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Costs one pass over the unprocessed events.';

-- Aggregates only, never payloads: a monitoring role needs EXECUTE (and
-- USAGE on the schema), not SELECT on the tables.  pg_monitor gets it.
REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;

CREATE FUNCTION a2_drop_session(session_id text, force boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_drop_session'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_drop_session(text, boolean) IS
'Remove a session''s rows from a2_events, a2_snapshots, a2_snapshot_history and a2_snapshot_pins and remember its last index, so later appends continue after it. Refuses with Z2010 while an event is neither processed nor dead-lettered, unless force. Returns {"sessionId", "dropped", "events", "snapshots", "lastIndex"}.';

CREATE FUNCTION a2_drop_finished_sessions(idle_ms bigint, max_sessions integer)
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_drop_finished_sessions'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_drop_finished_sessions(bigint, integer) IS
'Drop up to max_sessions sessions that have nothing unfinished and no append for idle_ms (store clock); skips sessions another transaction holds. Returns how many were dropped. For a scheduled job.';

-- == distributed mode (issue 12) =========================================

-- Distributed mode: a2 on Citus, sharded by session_id (presence by ns),
-- every session call delegated to the node that holds its session.  A
-- single-node install never uses these objects (a2_session_locks stays
-- empty); the C code switches to its distributed statements when
-- a2_events is a Citus table.

-- One row per session, written the first time a session is locked in
-- distributed mode.  Its row lock is the session lock there: it lives on
-- the shard's node, so a call run by the coordinator and a call delegated
-- to the worker serialize on the same lock (an advisory lock exists only on
-- the node that takes it).
CREATE TABLE a2_session_locks (
	session_id		text	PRIMARY KEY
);
SELECT pg_catalog.pg_extension_config_dump('a2_session_locks', '');

-- The same for presence writers of one participant, distributed by ns.
CREATE TABLE a2_presence_locks (
	ns				text	NOT NULL,
	participant		text	NOT NULL,
	PRIMARY KEY (ns, participant)
);
SELECT pg_catalog.pg_extension_config_dump('a2_presence_locks', '');

COMMENT ON TABLE a2_presence_locks IS
'Distributed mode only: one row per presence participant, locked FOR UPDATE so that writers of one participant serialize on the node that holds its namespace.';

COMMENT ON TABLE a2_session_locks IS
'Distributed mode only: one row per session, locked FOR UPDATE as the session lock so that calls serialize on the node that holds the session.';

CREATE FUNCTION a2_distribute(shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	-- Every extension table and how it is distributed; the first table of
	-- a group anchors the colocation group.  A new table is one line here.
	tables CONSTANT text[][] := ARRAY[
		['a2_events',              'session_id'],
		['a2_snapshots',           'session_id'],
		['a2_snapshot_history',    'session_id'],
		['a2_snapshot_pins',       'session_id'],
		['a2_session_locks',       'session_id'],
		['a2_retired_sessions',    'session_id'],
		['a2_presence',            'ns'],
		['a2_presence_tombstones', 'ns'],
		['a2_presence_locks',      'ns']];
	-- Index changes, run on every node (the extension created the tables on
	-- each node, so Citus does not re-create the workers' copies).
	index_ddl CONSTANT text[] := ARRAY[
		'CREATE UNIQUE INDEX IF NOT EXISTS a2_events_session_event_id'
		' ON @extschema@.a2_events (session_id, event_id)',
		'DROP INDEX IF EXISTS @extschema@.a2_events_event_id'];
	ext_schema CONSTANT text := '@extschema@';
	rel regclass;
	anchor regclass;
	ddl text;
	fn record;
	res record;
	missing text;
BEGIN
	IF shard_count IS NOT NULL AND shard_count < 1 THEN
		RAISE EXCEPTION 'shard_count must be at least 1, not %', shard_count
			USING ERRCODE = '22023';
	END IF;
	IF NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'citus') THEN
		RAISE EXCEPTION 'a2_distribute needs the citus extension'
			USING ERRCODE = '0A000',
				  HINT = 'Preload citus (shared_preload_libraries = ''citus,a2''), CREATE EXTENSION citus, add the workers, then call a2_distribute() on the coordinator.';
	END IF;
	IF NOT citus_is_coordinator() THEN
		RAISE EXCEPTION 'a2_distribute must run on the Citus coordinator'
			USING ERRCODE = '0A000';
	END IF;

	-- Refuse tables nobody told us how to distribute (a new table that
	-- lacks its line above), before changing anything.
	SELECT string_agg(c.relname, ', ' ORDER BY c.relname) INTO missing
	  FROM pg_depend d JOIN pg_class c ON c.oid = d.objid
	 WHERE d.classid = 'pg_class'::regclass AND d.deptype = 'e'
	   AND d.refclassid = 'pg_extension'::regclass
	   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
	   AND c.relkind = 'r'
	   AND c.relname <> ALL (tables[:][1:1]);
	IF missing IS NOT NULL THEN
		RAISE EXCEPTION 'a2_distribute has no distribution rule for table(s) %', missing
			USING ERRCODE = '0A000',
				  HINT = 'Add a line for each table to the list in a2_distribute.';
	END IF;

	-- 1. Event ids unique per session, on every node, while the tables are
	--    still local (Citus refuses unique indexes without session_id).
	--    Once a2_events is distributed this was done (and workers refuse
	--    DDL on their copies), so a second call skips it.
	FOREACH ddl IN ARRAY index_ddl LOOP
		EXIT WHEN EXISTS (SELECT 1 FROM pg_dist_partition p
						   WHERE p.logicalrelid = format('%I.%I', ext_schema, 'a2_events')::regclass);
		EXECUTE ddl;
		FOR res IN SELECT * FROM run_command_on_workers(ddl) LOOP
			IF NOT res.success THEN
				RAISE EXCEPTION 'a2_distribute could not change the indexes of worker %:%', res.nodename, res.nodeport
					USING ERRCODE = 'XX000', DETAIL = res.result;
			END IF;
		END LOOP;
	END LOOP;

	-- 2. Distribute the tables (a table already distributed is skipped).
	anchor := NULL;
	FOR i IN 1 .. array_length(tables, 1) LOOP
		rel := format('%I.%I', ext_schema, tables[i][1])::regclass;
		IF NOT EXISTS (SELECT 1 FROM pg_dist_partition p WHERE p.logicalrelid = rel) THEN
			IF anchor IS NULL THEN
				PERFORM create_distributed_table(rel, tables[i][2],
												 colocate_with => 'none',
												 shard_count => shard_count);
			ELSE
				PERFORM create_distributed_table(rel, tables[i][2],
												 colocate_with => anchor::text);
			END IF;
		END IF;
		anchor := COALESCE(anchor, rel);
	END LOOP;

	-- 3. Delegate every C function whose first argument is the
	--    distribution column (session_id or ns) to the node of that shard,
	--    even inside a transaction block (force_delegation).  SQL helpers
	--    such as a2_retired_last_index are called inside a2's own
	--    statements, not by clients, and stay local.
	FOR fn IN
		SELECT p.oid::regprocedure AS sig, p.proargnames[1] AS arg
		  FROM pg_depend d JOIN pg_proc p ON p.oid = d.objid
		 WHERE d.classid = 'pg_proc'::regclass AND d.deptype = 'e'
		   AND d.refclassid = 'pg_extension'::regclass
		   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
		   AND p.proargnames[1] IN ('session_id', 'ns')
		   AND p.prolang = (SELECT l.oid FROM pg_language l WHERE l.lanname = 'c')
		 ORDER BY p.oid
	LOOP
		PERFORM create_distributed_function(fn.sig, fn.arg,
											colocate_with => format('%I.%I', ext_schema, 'a2_events'),
											force_delegation => true);
	END LOOP;
END
$fn$;

COMMENT ON FUNCTION a2_distribute(integer) IS
'Distributed mode (Citus coordinator only): make event ids unique per session on every node, distribute the session tables by session_id and presence by ns in one colocation group (shard_count shards, default citus.shard_count), and delegate every session and presence function to the node of its shard. A second call changes nothing.';

-- Where to LISTEN: a delegated call announces its session on the worker
-- that ran it, a call the coordinator ran (say, inside a larger statement)
-- on the coordinator.  A consumer LISTENs a2_events on each of these.
CREATE FUNCTION a2_notify_nodes()
RETURNS TABLE (node_name text, node_port integer)
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	-- plpgsql, not sql: the body names a Citus catalog, which a single-node
	-- install lacks, and is only parsed when called
	IF to_regclass('pg_catalog.pg_dist_node') IS NULL THEN
		RAISE EXCEPTION 'a2_notify_nodes needs the citus extension'
			USING ERRCODE = '0A000';
	END IF;
	RETURN QUERY
		SELECT n.nodename::text, n.nodeport
		  FROM pg_catalog.pg_dist_node n
		 WHERE n.isactive AND n.noderole = 'primary'
		 ORDER BY n.groupid, n.nodename, n.nodeport;
END
$fn$;

COMMENT ON FUNCTION a2_notify_nodes() IS
'Distributed mode: the primary nodes (coordinator and workers) a consumer must LISTEN a2_events on to hear every session: delegated calls notify on the worker that ran them, coordinator-run calls on the coordinator. Errors when Citus is not installed.';

CREATE FUNCTION a2_is_distributed()
RETURNS boolean
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
BEGIN
	IF to_regclass('pg_catalog.pg_dist_partition') IS NULL THEN
		RETURN false;
	END IF;
	RETURN EXISTS (SELECT 1 FROM pg_catalog.pg_dist_partition p
					WHERE p.logicalrelid = '@extschema@.a2_events'::regclass);
END
$fn$;

COMMENT ON FUNCTION a2_is_distributed() IS
'Whether a2 runs in distributed mode (a2_events is a Citus distributed table, after a2_distribute()). There event ids are unique per session rather than across sessions, and consumers LISTEN on every node of a2_notify_nodes().';

-- The contract change of distributed mode, in the functions' own words.
COMMENT ON FUNCTION a2_append(text, jsonb) IS
'Append a batch of events to a session; returns {"events": [StoredEvent], "hasPending": bool}. An exact replay of a stored batch returns the stored events and writes nothing. Event ids are unique across sessions; in distributed mode (a2_distribute()) only within their session, so an id stored in another session is not refused there.';

COMMENT ON FUNCTION a2_complete(text, bigint, integer, jsonb) IS
'Complete an attempt: append the returned events (caused by {index, attempt}), mark the event processed, promote its lane and release its snapshot pins; returns {"outcome":"completed","events":[...]} or {"outcome":"superseded"}. A returned id already stored is refused (Z2001): in any session on a single node, in this session in distributed mode (a2_distribute()).';
