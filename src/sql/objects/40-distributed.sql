-- Distributed mode (docs/distributed.md): a2 on Citus, sharded by
-- session_id (presence by ns), every session call delegated to the node
-- that holds its session.  A single-node install never calls these
-- objects; the C code switches to its distributed statements when
-- a2_events is a Citus table.

-- a2_distribute() can be called again after citus_add_node: it brings the
-- indexes of every worker in line, not only on the first call (a new
-- node's own a2_events still has the single-node event-id index).
CREATE FUNCTION a2_distribute(shard_count integer DEFAULT NULL)
RETURNS void
LANGUAGE plpgsql
SET search_path = pg_catalog, pg_temp
AS $fn$
DECLARE
	-- Every extension table and how it is distributed ('local': not at
	-- all); the first table of a group anchors the colocation group.  A new
	-- table is one line here.
	tables CONSTANT text[][] := ARRAY[
		['a2_events',              'session_id'],
		['a2_snapshots',           'session_id'],
		['a2_snapshot_history',    'session_id'],
		['a2_snapshot_pins',       'session_id'],
		['a2_session_locks',       'session_id'],
		['a2_retired_sessions',    'session_id'],
		['a2_presence',            'ns'],
		['a2_presence_tombstones', 'ns'],
		['a2_presence_locks',      'ns'],
		-- on the coordinator only, never distributed: the features they
		-- serve are refused in distributed mode (docs/distributed.md,
		-- "Queues, priorities, limits, schedules and waits"), so they stay empty
		['a2_queues',              'local'],
		['a2_limits',              'local'],
		['a2_rate_claims',         'local'],
		['a2_schedules',           'local']];
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
		CONTINUE WHEN tables[i][2] = 'local';
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
