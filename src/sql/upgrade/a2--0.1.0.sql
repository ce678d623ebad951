/* a2 0.1.0: durable per-session event log with a work-dispatch protocol */

\echo Use "CREATE EXTENSION a2" to load this file. \quit

-- Tables, columns, primary keys and index names follow the TypeScript
-- store-postgres 0.5.0 SCHEMA plus the 0.8.0 snapshot history and pins, so
-- a TypeScript worker and SQL callers can share one database.

CREATE TABLE a2_events (
	session_id				text	NOT NULL,
	idx						bigint	NOT NULL,
	event_type				text	NOT NULL,
	payload					jsonb	NOT NULL,
	event_id				text	NOT NULL,
	created_at				bigint	NOT NULL,
	cause					jsonb,
	lane					text,
	lane_ready				boolean NOT NULL DEFAULT false,
	processed_at			bigint,
	processed_by_attempt	integer,
	returned_event_ids		jsonb,
	first_claimed_at		bigint,
	last_claimed_at			bigint,
	attempt_count			integer NOT NULL DEFAULT 0,
	failure_count			integer NOT NULL DEFAULT 0,
	last_failed_at			bigint,
	last_failed_attempt		integer,
	last_error				text,
	failed_at				bigint,
	claim_holder			text,
	claim_expires_at		bigint,
	PRIMARY KEY (session_id, idx)
);

CREATE UNIQUE INDEX a2_events_event_id ON a2_events (event_id);
CREATE INDEX a2_events_unprocessed
	ON a2_events (session_id, idx) WHERE processed_at IS NULL;
CREATE INDEX a2_events_lane_pending
	ON a2_events (session_id, lane, idx) WHERE processed_at IS NULL;
CREATE INDEX a2_events_dispatch_ready
	ON a2_events (session_id, idx)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;
CREATE INDEX a2_events_claim_expiry
	ON a2_events (session_id, claim_expires_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;

CREATE TABLE a2_snapshots (
	session_id		text	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	state			jsonb	NOT NULL,
	updated_at		bigint	NOT NULL,
	PRIMARY KEY (session_id, reducer_name)
);

CREATE TABLE a2_snapshot_history (
	session_id		text	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	state			jsonb	NOT NULL,
	updated_at		bigint	NOT NULL,
	PRIMARY KEY (session_id, reducer_name, up_to_index)
);

CREATE TABLE a2_snapshot_pins (
	session_id		text	NOT NULL,
	event_index		bigint	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	PRIMARY KEY (session_id, event_index, reducer_name, up_to_index)
);

CREATE INDEX a2_snapshot_pins_checkpoint
	ON a2_snapshot_pins (session_id, reducer_name, up_to_index);

CREATE TABLE a2_presence (
	ns				text	NOT NULL,
	participant		text	NOT NULL,
	field			text	NOT NULL,
	value			jsonb	NOT NULL,
	seen			bigint	NOT NULL,
	at				bigint	NOT NULL,
	expires_at		bigint	NOT NULL,
	PRIMARY KEY (ns, participant, field)
);

-- Deleted presence fields.  Kept apart from a2_presence so that a
-- TypeScript reader (which lists every live a2_presence row) never sees
-- them; an older write that arrives after the delete loses against them.
CREATE TABLE a2_presence_tombstones (
	ns				text	NOT NULL,
	participant		text	NOT NULL,
	field			text	NOT NULL,
	at				bigint	NOT NULL,
	expires_at		bigint	NOT NULL,
	PRIMARY KEY (ns, participant, field)
);

SELECT pg_catalog.pg_extension_config_dump('a2_events', '');
SELECT pg_catalog.pg_extension_config_dump('a2_snapshots', '');
SELECT pg_catalog.pg_extension_config_dump('a2_snapshot_history', '');
SELECT pg_catalog.pg_extension_config_dump('a2_snapshot_pins', '');
SELECT pg_catalog.pg_extension_config_dump('a2_presence', '');
SELECT pg_catalog.pg_extension_config_dump('a2_presence_tombstones', '');

-- Functions.  All are SECURITY INVOKER (the default): the caller's table
-- privileges and row-level security apply.  None is STRICT: a NULL for a
-- required argument raises 22004 instead of silently returning NULL.

CREATE FUNCTION a2_append(session_id text, events jsonb)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_append'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_append(text, jsonb) IS
'Append a batch of events to a session; returns {"events": [StoredEvent], "hasPending": bool}. An exact replay of a stored batch returns the stored events and writes nothing.';

CREATE FUNCTION a2_read(session_id text,
						after_index bigint DEFAULT NULL,
						through_index bigint DEFAULT NULL,
						max_events integer DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_read'
LANGUAGE C STABLE;

COMMENT ON FUNCTION a2_read(text, bigint, bigint, integer) IS
'Stored events with after_index < index <= through_index, ordered by index, at most max_events of them (NULL bounds mean unbounded).';

CREATE FUNCTION a2_claim(session_id text,
						 holder text,
						 ttl_ms bigint,
						 expires_at timestamptz DEFAULT NULL,
						 exclude_indexes bigint[] DEFAULT '{}')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim(text, text, bigint, timestamptz, bigint[]) IS
'Lease every eligible event of a session to holder; returns {"outcome":"claimed","events":[...]}, {"outcome":"busy","retryAt":iso} or {"outcome":"settled"}.';

CREATE FUNCTION a2_renew(session_id text,
						 holder text,
						 claims jsonb,
						 ttl_ms bigint,
						 expires_at timestamptz DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_renew'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_renew(text, text, jsonb, bigint, timestamptz) IS
'Extend the live leases listed in claims ([{index, attempt}]) held by holder; returns {"renewed":[index], "superseded":[index]}.';

CREATE FUNCTION a2_complete(session_id text,
							event_index bigint,
							attempt integer,
							events jsonb DEFAULT '[]')
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_complete'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_complete(text, bigint, integer, jsonb) IS
'Complete an attempt: append the returned events (caused by {index, attempt}), mark the event processed, promote its lane and release its snapshot pins; returns {"outcome":"completed","events":[...]} or {"outcome":"superseded"}.';

CREATE FUNCTION a2_fail(session_id text,
						event_index bigint,
						attempt integer,
						error text,
						max_failures integer)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_fail'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_fail(text, bigint, integer, text, integer) IS
'Record a failed attempt and clear its lease; dead-letters the event at max_failures. Returns {"outcome":"failed"|"dead_lettered"|"superseded","failureCount":n}.';

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

CREATE FUNCTION a2_presence_set(ns text,
								participant text,
								"values" jsonb,
								at timestamptz,
								seen bigint,
								ttl_ms bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'a2_presence_set'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_presence_set(text, text, jsonb, timestamptz, bigint, bigint) IS
'Field-wise last-writer-wins presence write; a null value deletes the field and leaves a tombstone. Rows expire ttl_ms after the store clock.';

CREATE FUNCTION a2_presence_read(ns text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_presence_read'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_presence_read(text) IS
'Live presence rows of a namespace, ordered by participant and field: [{"participant","field","value","seen","at","expiresAt"}]. Sweeps expired rows unless the transaction is read-only.';
