/* a2 0.2.0 -> 0.3.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.3.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs the updates
-- 0.1.0 -> 0.2.0 -> 0.3.0 (there is no a2--0.3.0.sql), so a fresh install
-- and an upgrade are the same objects by construction.  Each section below
-- belongs to one issue of 0.3.0; keep them in this order.

-- == field conditions (issue 15) ==========================================

-- No SECURITY DEFINER function of a2 is executable by PUBLIC (docs/security.md).
-- a2_retired_last_index reads a dropped session's high-water mark for
-- appends; from 0.3.0 a role needs EXECUTE on it, which a2_grant_worker
-- gives.  So that appenders set up by hand under 0.2.0 keep working, the
-- update grants it to every role that may INSERT into a2_events now.
REVOKE ALL ON FUNCTION a2_retired_last_index(text) FROM PUBLIC;
DO $$
DECLARE
	r name;
BEGIN
	FOR r IN
		SELECT DISTINCT a.rolname
		  FROM pg_catalog.pg_class c
		 CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) x
		  JOIN pg_catalog.pg_roles a ON a.oid OPERATOR(pg_catalog.=) x.grantee
		 WHERE c.oid OPERATOR(pg_catalog.=) '@extschema@.a2_events'::pg_catalog.regclass
		   AND x.privilege_type OPERATOR(pg_catalog.=) 'INSERT'
		   AND x.grantee OPERATOR(pg_catalog.<>) c.relowner
	LOOP
		EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION @extschema@.a2_retired_last_index(text) TO %I', r);
	END LOOP;
END
$$;

-- The notifier's status and wait take its queue lock on every call: not
-- for everyone.  pg_monitor and roles given a2_grant_monitor may call them.
REVOKE ALL ON FUNCTION a2_notify_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION a2_notify_wait(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_notify_status() TO pg_monitor;
GRANT EXECUTE ON FUNCTION a2_notify_wait(bigint) TO pg_monitor;

-- Grant helpers (docs/security.md, "Grants").  What a role needs, in one call, in single-node
-- and distributed mode alike; run by the extension's owner or a superuser
-- (EXECUTE is revoked from PUBLIC); idempotent.  The protocol functions
-- are SECURITY INVOKER and executable by PUBLIC, as in 0.2.0: table
-- privileges decide what a role may do.

-- A worker: append, read, claim, renew, complete, fail, claim_next,
-- redrive, state, snapshots, presence.  Not: dropping sessions, metrics,
-- the notifier's status, DDL.  The lock tables are distributed mode's
-- session and presence locks (row locks, hence UPDATE); in distributed mode
-- routed appends also read a2_retired_sessions directly.
CREATE FUNCTION a2_grant_worker(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_grant_worker');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %s TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_events TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_snapshots TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_snapshot_history TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, DELETE ON %s.a2_snapshot_pins TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_presence, %s.a2_presence_tombstones TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE ON %s.a2_session_locks, %s.a2_presence_locks TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_retired_last_index(text) TO %s', s, r);
	IF @extschema@.a2_is_distributed() THEN
		EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_retired_sessions TO %s', s, r);
	END IF;
END
$fn$;

-- A monitoring role: a2_metrics, the notifier's status, and the
-- inspection functions (a2_list_sessions, a2_list_snapshots), which read
-- the tables as the caller.
CREATE FUNCTION a2_grant_monitor(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_grant_monitor');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('GRANT USAGE ON SCHEMA %s TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_events, %s.a2_snapshots, %s.a2_snapshot_history TO %s', s, s, s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_metrics() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_status() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_wait(bigint) TO %s', s, r);
END
$fn$;

-- Takes back everything either helper grants (also what was granted by
-- hand on the same objects).
CREATE FUNCTION a2_revoke(role regrole)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	s text := @extschema@.a2_grant_schema('a2_revoke');
	r text := role::text;
BEGIN
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_events, %s.a2_snapshots, %s.a2_snapshot_history, '
		'%s.a2_snapshot_pins, %s.a2_presence, %s.a2_presence_tombstones, %s.a2_session_locks, '
		'%s.a2_presence_locks, %s.a2_retired_sessions FROM %s', s, s, s, s, s, s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s.a2_retired_last_index(text), %s.a2_metrics(), '
		'%s.a2_notify_status(), %s.a2_notify_wait(bigint) FROM %s', s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE USAGE ON SCHEMA %s FROM %s', s, r);
END
$fn$;

-- The helpers' guard: only the extension's owner (or a member of that
-- role) or a superuser grants a2's privileges.  Returns the extension's
-- schema, quoted.
CREATE FUNCTION a2_grant_schema(caller text)
RETURNS text
LANGUAGE plpgsql STABLE
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	owner oid;
	nsp text;
BEGIN
	SELECT e.extowner, pg_catalog.quote_ident(n.nspname) INTO owner, nsp
	  FROM pg_catalog.pg_extension e
	  JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) e.extnamespace
	 WHERE e.extname OPERATOR(pg_catalog.=) 'a2';
	IF NOT (pg_catalog.pg_has_role(current_user, owner, 'MEMBER')
			OR (SELECT r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) current_user)) THEN
		RAISE EXCEPTION 'permission denied to run %', caller
			USING ERRCODE = '42501',
				  DETAIL = pg_catalog.format('Only the owner of extension a2 (%s) or a superuser grants a2''s privileges.',
											 owner::regrole);
	END IF;
	RETURN nsp;
END
$fn$;

REVOKE ALL ON FUNCTION a2_grant_worker(regrole), a2_grant_monitor(regrole), a2_revoke(regrole),
	a2_grant_schema(text) FROM PUBLIC;

COMMENT ON FUNCTION a2_grant_worker(regrole) IS
'Grant a role everything the worker protocol needs (append, read, claim, renew, complete, fail, claim_next, redrive, state, snapshots, presence), in single-node and distributed mode; idempotent.';
COMMENT ON FUNCTION a2_grant_monitor(regrole) IS
'Grant a role what monitoring needs: a2_metrics, a2_notify_status/a2_notify_wait and the inspection functions; idempotent.';
COMMENT ON FUNCTION a2_revoke(regrole) IS
'Take back from a role every privilege a2_grant_worker or a2_grant_monitor grants.';
COMMENT ON FUNCTION a2_grant_schema(text) IS
'The schema of extension a2, quoted; raises 42501 unless the caller owns the extension (or is a member of its owner) or is a superuser.  Used by the grant helpers.';

-- == PostgreSQL 15-18 (issue 16) ==========================================

-- == scheduling (issue 17) ================================================

-- notBefore (docs/semantics.md, "Scheduling"): epoch milliseconds before which an event is not
-- claimed; NULL (every event before 0.3.0) means at once.  Adding a
-- nullable column without a default rewrites nothing.
ALTER TABLE a2_events ADD COLUMN not_before bigint;

COMMENT ON COLUMN a2_events.not_before IS
'Epoch milliseconds before which the event is not claimed (notBefore, or a failed attempt''s retry_after_ms backoff); NULL: claimable at once.';

-- a2_claim_next's index: an unleased event is available once it is due,
-- greatest(not_before, created_at) (GREATEST skips NULL), so scheduled work
-- sits at the far end and a walk that stops at now never reads it.
-- Rebuilding it locks a2_events against writes for the build.
DROP INDEX a2_events_available;
CREATE INDEX a2_events_available
	ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;

-- Due announcements (src/scheduler.c): each database's scheduler finds what
-- falls due next here.  Only unprocessed, live events with a due time are
-- in it, so it costs nothing for events without notBefore.
CREATE INDEX a2_events_due ON a2_events (not_before)
	WHERE not_before IS NOT NULL AND processed_at IS NULL AND failed_at IS NULL;

-- a2_fail gains retry_after_ms (backoff); the old five-argument calls keep
-- working through the default.
DROP FUNCTION a2_fail(text, bigint, integer, text, integer);
CREATE FUNCTION a2_fail(session_id text,
						event_index bigint,
						attempt integer,
						error text,
						max_failures integer,
						retry_after_ms bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_fail'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_fail(text, bigint, integer, text, integer, bigint) IS
'Record a failed attempt and clear its lease; dead-letters the event at max_failures. With retry_after_ms > 0 a "failed" event is not claimed again before now + retry_after_ms. Returns {"outcome":"failed"|"dead_lettered"|"superseded","failureCount":n}.';

-- a2_metrics gains the scheduled count and the earliest due time, after the
-- 0.2.0 columns; eligible_events no longer counts events not yet due.
DROP FUNCTION a2_metrics();
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
	OUT measured_at timestamptz,
	OUT scheduled_events bigint,
	OUT earliest_due_at timestamptz)
AS 'MODULE_PATHNAME', 'a2_metrics'
LANGUAGE C STABLE SECURITY DEFINER
SET search_path = pg_catalog
SET enable_seqscan = off
SET jit = off;

COMMENT ON FUNCTION a2_metrics() IS
'Dispatch gauges, one row. Exact as of the caller''s snapshot and the store clock: sessions with eligible work, eligible events (due, expired leases included), leased events, expired leases not yet reclaimed, dead letters, events waiting behind their lane, oldest eligible event, scheduled events (not yet due) and the earliest due time. Estimates from pg_stat: live rows, dead rows, rows inserted since the stats reset. Costs one pass over the unprocessed events.';

REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;

-- == distributed fleets (issue 18) ========================================

-- a2_distribute() can be called again after citus_add_node: it now brings
-- the indexes of every worker in line, not only on the first call (a new
-- node's own a2_events still had the single-node event-id index).
CREATE OR REPLACE FUNCTION a2_distribute(shard_count integer DEFAULT NULL)
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
	already boolean;
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

	-- 1. Event ids unique per session, on every node.  Here only while the
	--    tables are still local (Citus refuses unique indexes without
	--    session_id, and this copy is then the distributed table's).  On
	--    the workers every time: a node added since the first call still
	--    has the single-node indexes on its own, unused a2_events, so
	--    calling a2_distribute() again after citus_add_node makes every
	--    node alike.  A worker refuses DDL on a distributed table's local
	--    copy unless DDL propagation is off for the command.
	already := EXISTS (SELECT 1 FROM pg_dist_partition p
						WHERE p.logicalrelid = format('%I.%I', ext_schema, 'a2_events')::regclass);
	FOREACH ddl IN ARRAY index_ddl LOOP
		IF NOT already THEN
			EXECUTE ddl;
		END IF;
		FOR res IN SELECT * FROM run_command_on_workers(
				'SET LOCAL citus.enable_ddl_propagation = off; ' || ddl) LOOP
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
'Distributed mode (Citus coordinator only): make event ids unique per session on every node, distribute the session tables by session_id and presence by ns in one colocation group (shard_count shards, default citus.shard_count), and delegate every session and presence function to the node of its shard. Call it again after adding a node: it brings the new node''s indexes in line; otherwise a second call changes nothing.';

-- == clients and docs (issue 19) ==========================================

-- == bytes per event (issue 20) ===========================================

-- Generated event ids are time-ordered from 0.3.0 on (RFC 9562 version 7,
-- src/uuid7.c): a library change, nothing to alter here.  Existing ids
-- stay as they are; new ones land together at one place of
-- a2_events_event_id instead of on random leaves.

-- Two partial indexes lose the rows no query looks for in them, so that
-- appending an event (and claiming, failing or renewing one without a
-- lane) writes two btree entries fewer (bench/RESULTS.md, issue 20):
--   a2_events_lane_pending: only events with a lane.  Every query that
--     reads it compares lane with =, which is strict, so the planner
--     proves lane IS NOT NULL from the query itself.
--   a2_events_claim_expiry: only leased events.  No a2 statement reads
--     it any more (a busy a2_claim's retryAt also looks at not_before, so
--     it scans a2_events_dispatch_ready); it is kept, with the name the
--     TypeScript store's schema gives it, for queries that ask for
--     claim_expires_at > now, which a NULL never satisfies.
-- Rebuilding them reads all of a2_events once, under a lock that makes
-- writers wait (seconds per million events).
DROP INDEX a2_events_lane_pending;
CREATE INDEX a2_events_lane_pending
	ON a2_events (session_id, lane, idx)
	WHERE processed_at IS NULL AND lane IS NOT NULL;
DROP INDEX a2_events_claim_expiry;
CREATE INDEX a2_events_claim_expiry
	ON a2_events (session_id, claim_expires_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND claim_expires_at IS NOT NULL;
