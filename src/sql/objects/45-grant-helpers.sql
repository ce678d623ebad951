-- Grant helpers (docs/security.md).  What a role needs, in one call, in
-- single-node and distributed mode alike; run by the extension's owner or
-- a superuser (EXECUTE is revoked from PUBLIC, 90-grants.sql); idempotent.
-- The protocol functions are SECURITY INVOKER and executable by PUBLIC:
-- table privileges decide what a role may do.

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

COMMENT ON FUNCTION a2_grant_schema(text) IS
'The schema of extension a2, quoted; raises 42501 unless the caller owns the extension (or is a member of its owner) or is a superuser.  Used by the grant helpers.';

-- A worker: append, read, claim, renew, complete, fail, claim_next,
-- redrive, cancel, state, snapshots, presence, schedules.  Not: dropping sessions, metrics,
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
	-- recurring schedules: define, pause, fire (0.4.0)
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, UPDATE, DELETE ON %s.a2_schedules TO %s', s, r);
	-- 0.4.0 dispatch control: claims read the paused queues and the limits
	-- and keep the rate log (39-dispatch.sql)
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_queues, %s.a2_limits TO %s', s, s, r);
	EXECUTE pg_catalog.format('GRANT SELECT, INSERT, DELETE ON %s.a2_rate_claims TO %s', s, r);
	IF @extschema@.a2_is_distributed() THEN
		EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_retired_sessions TO %s', s, r);
	END IF;
END
$fn$;

COMMENT ON FUNCTION a2_grant_worker(regrole) IS
'Grant a role everything the worker protocol needs (append, read, claim, renew, complete, fail, claim_next, redrive, cancel, state, snapshots, presence, schedules), in single-node and distributed mode; idempotent.';

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
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_queues, %s.a2_limits, %s.a2_rate_claims TO %s', s, s, s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_metrics() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_status() TO %s', s, r);
	EXECUTE pg_catalog.format('GRANT EXECUTE ON FUNCTION %s.a2_notify_wait(bigint) TO %s', s, r);
	-- a2_list_schedules reads the schedules as the caller (0.4.0)
	EXECUTE pg_catalog.format('GRANT SELECT ON %s.a2_schedules TO %s', s, r);
END
$fn$;

COMMENT ON FUNCTION a2_grant_monitor(regrole) IS
'Grant a role what monitoring needs: a2_metrics, a2_notify_status/a2_notify_wait and the inspection functions (a2_list_schedules too); idempotent.';

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
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_schedules FROM %s', s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON %s.a2_queues, %s.a2_limits, %s.a2_rate_claims FROM %s', s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE ALL ON FUNCTION %s.a2_retired_last_index(text), %s.a2_metrics(), '
		'%s.a2_notify_status(), %s.a2_notify_wait(bigint) FROM %s', s, s, s, s, r);
	EXECUTE pg_catalog.format('REVOKE USAGE ON SCHEMA %s FROM %s', s, r);
END
$fn$;

COMMENT ON FUNCTION a2_revoke(regrole) IS
'Take back from a role every privilege a2_grant_worker or a2_grant_monitor grants.';
