-- Inspection: pages of session summaries and a session's checkpoints.
-- They read the tables as the caller (SECURITY INVOKER).

CREATE FUNCTION a2_list_sessions(prefix text,
								 cursor text DEFAULT NULL,
								 max_sessions integer DEFAULT 100)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_sessions'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_sessions(text, text, integer) IS
'A page of session summaries in session-id order: {"sessions": [{sessionId, eventCount, pendingCount, failedCount, attemptCount, failureCount, firstEventAt, updatedAt, cancelledCount}], "cursor": text or null}. Pass cursor back for the next page; a page costs in proportion to the page.';

CREATE FUNCTION a2_list_snapshots(session_id text,
								  include_history boolean DEFAULT false)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_list_snapshots'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_list_snapshots(text, boolean) IS
'A session''s reducer checkpoints, ordered by reducer and index: [{reducerName, index, updatedAt}] (the heads); with include_history, the pinned history rows too and a "head" flag on every element.';
