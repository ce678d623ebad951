-- Who may EXECUTE what (docs/security.md).  Every function is executable
-- by PUBLIC (PostgreSQL's default) except those below: no SECURITY DEFINER
-- function of a2 is executable by PUBLIC, nor anything that takes the
-- notifier's queue lock, nor the grant helpers.  a2_grant_worker and
-- a2_grant_monitor grant them to the roles that need them.  The REVOKEs
-- run before the GRANTs, so that each ACL reads as an updated install's
-- does.

-- a2_retired_last_index reads a dropped session's high-water mark for
-- appends.  Up to 0.3.0 it was SECURITY DEFINER and not for PUBLIC; from
-- 0.4.0 it checks that its caller may INSERT into a2_events and is for
-- PUBLIC again (revoked, then granted, so that the ACL reads as an
-- updated install's does).
REVOKE ALL ON FUNCTION a2_retired_last_index(text) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_retired_last_index(text) TO PUBLIC;

-- The notifier's status and wait take its queue lock on every call.
REVOKE ALL ON FUNCTION a2_notify_status() FROM PUBLIC;
REVOKE ALL ON FUNCTION a2_notify_wait(bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_notify_status() TO pg_monitor;
GRANT EXECUTE ON FUNCTION a2_notify_wait(bigint) TO pg_monitor;

REVOKE ALL ON FUNCTION a2_grant_worker(regrole), a2_grant_monitor(regrole), a2_revoke(regrole),
	a2_grant_schema(text) FROM PUBLIC;

-- Aggregates only, never payloads: a monitoring role needs EXECUTE (and
-- USAGE on the schema), not SELECT on the tables.  pg_monitor gets it.
REVOKE ALL ON FUNCTION a2_metrics() FROM PUBLIC;
GRANT EXECUTE ON FUNCTION a2_metrics() TO pg_monitor;
