-- Functions.  The protocol functions are SECURITY INVOKER (the default):
-- the caller's table privileges and row-level security apply
-- (docs/security.md).  None is STRICT: a NULL for a required argument
-- raises 22004 instead of silently returning NULL.  Who may EXECUTE what
-- is in 90-grants.sql.

-- The log: append and read.

CREATE FUNCTION a2_append(session_id text, events jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_append'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_append(text, jsonb) IS
'Append a batch of events to a session; returns {"events": [StoredEvent], "hasPending": bool}. An exact replay of a stored batch returns the stored events and writes nothing. Event ids are unique across sessions; in distributed mode (a2_distribute()) only within their session, so an id stored in another session is not refused there.';

CREATE FUNCTION a2_read(session_id text,
						after_index bigint DEFAULT NULL,
						through_index bigint DEFAULT NULL,
						max_events integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_read'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_read(text, bigint, bigint, integer) IS
'Stored events with after_index < index <= through_index, ordered by index, at most max_events of them (NULL bounds mean unbounded).';
