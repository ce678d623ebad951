-- Retiring sessions (docs/operations.md#retiring-sessions): dropping a
-- session's rows while remembering its last index, so that indexes are
-- never reused.

-- SECURITY INVOKER and executable by PUBLIC (90-grants.sql): it answers a
-- role that may INSERT into a2_events (42501 otherwise) and then reads
-- a2_retired_sessions as its owner, so an appender needs no privilege on
-- that table and cannot list it, and no grant has to follow INSERT on
-- a2_events (src/retire.c).  STABLE, so under the session lock it reads
-- with the caller's statement snapshot (the latest one, see a2_exec_latest).
CREATE FUNCTION a2_retired_last_index(session_id text)
RETURNS bigint
AS 'MODULE_PATHNAME', 'a2_retired_last_index'
LANGUAGE C STABLE STRICT;

COMMENT ON FUNCTION a2_retired_last_index(text) IS
'The last index of a dropped session (NULL if it was never dropped); appends to a session with no rows continue after it. Answers roles that may INSERT into a2_events.';

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

