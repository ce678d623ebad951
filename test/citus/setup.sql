/*
 * test/citus/setup.sql
 *	  Run on the coordinator after a2_distribute(): the assertion helper and
 *	  the caller's own tables the protocol test writes next to a2 calls.
 *
 *	  citus_test_ok(cond, what) raises (SQLSTATE ZT000) unless cond is true,
 *	  so every check below it can fail the run; the scripts run psql with
 *	  ON_ERROR_STOP.
 */
CREATE FUNCTION citus_test_ok(cond boolean, what text) RETURNS void
LANGUAGE plpgsql AS $$
BEGIN
	IF cond IS NOT TRUE THEN
		RAISE EXCEPTION 'check failed: %', what USING ERRCODE = 'ZT000';
	END IF;
END
$$;

-- The node (port) that holds a session's shard.
CREATE FUNCTION citus_test_port(session text) RETURNS integer
LANGUAGE sql STABLE AS $$
	SELECT n.nodeport
	  FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
	 WHERE p.shardid = get_shard_id_for_distribution_column('a2_events', session)
$$;

-- The first session name of the form prefix-N held by the node at port.
CREATE FUNCTION citus_test_session_on(prefix text, port integer) RETURNS text
LANGUAGE sql STABLE AS $$
	SELECT prefix || '-' || g FROM generate_series(1, 1000) g
	 WHERE citus_test_port(prefix || '-' || g) = port
	 ORDER BY g LIMIT 1
$$;

-- A handler's own rows: one table colocated with a2_events, one local to
-- the coordinator.  The colocated one has a primary key: a shard move
-- moves it with a2's shards, and the default transfer mode (auto: logical
-- replication) refuses a table without a primary key or replica identity
-- (moves.sh moves them).
CREATE TABLE handled (session_id text NOT NULL, idx bigint NOT NULL, note text,
					  PRIMARY KEY (session_id, idx));
SELECT create_distributed_table('handled', 'session_id', colocate_with => 'a2_events');
CREATE TABLE local_audit (session_id text NOT NULL, idx bigint NOT NULL);
