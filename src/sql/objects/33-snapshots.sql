-- Reducer checkpoints: consistent reads of a checkpoint and the events
-- after it, and writing checkpoints with their pins.

CREATE FUNCTION a2_read_state(session_id text,
							  reducer_name text,
							  through_index bigint DEFAULT NULL,
							  snapshot_through_index bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_read_state'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_read_state(text, text, bigint, bigint) IS
'One consistent read of a reducer checkpoint and the events after it: {"headIndex", "snapshot": {"index","state"} or null, "events": [Event]}.';

CREATE FUNCTION a2_read_states(requests jsonb, reducer_name text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_read_states'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_read_states(jsonb, text) IS
'a2_read_state for many requests ([{sessionId, throughIndex?, snapshotThroughIndex?}]) in one statement; one result per request, in request order.';

CREATE FUNCTION a2_put_snapshots(session_id text, reducer_name text, snapshots jsonb)
RETURNS void
AS 'MODULE_PATHNAME', 'a2_put_snapshots'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_put_snapshots(text, text, jsonb) IS
'Write reducer checkpoints ([{index, state, pinEventIndexes?}]) in index order: the greatest advances the head; older ones survive in history only while an unfinished event pins them.';
