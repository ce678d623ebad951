-- Tables.  Names, columns, primary keys and index names follow the
-- TypeScript store-postgres 0.5.0 SCHEMA plus the 0.8.0 snapshot history
-- and pins, so a TypeScript worker and SQL callers can share one database.
-- Columns are in the order an upgraded database has them (ALTER TABLE ADD
-- COLUMN appends): a column added by an update goes last here too.  Every
-- table is registered with pg_extension_config_dump, so pg_dump keeps its
-- rows.

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
	not_before				bigint,		-- 0.3.0
	queue					text,		-- 0.4.0: NULL = 'default'
	priority				integer,	-- 0.4.0: NULL = 0
	concurrency_key			text,		-- 0.4.0: NULL = no key
	cancelled_at			bigint,		-- 0.4.0
	cancel_reason			text,		-- 0.4.0
	wait_for				jsonb,		-- 0.4.0, durable waits
	wait_result				jsonb,		-- 0.4.0, durable waits
	PRIMARY KEY (session_id, idx)
)
-- Autovacuum for the churn every claim and completion causes (no HOT
-- update is possible: claim_expires_at and the partial-index predicates
-- change).  At the defaults autovacuum waits for dead rows worth 20% of
-- the table, so on a table with history the partial indexes, which should
-- hold only unfinished events, grow until then: in the 10-minute soak on
-- 1.5M events (bench/soak.sh, bench/RESULTS.md "Bloat under churn") the
-- default run never vacuumed and a2_events_claim_expiry grew to 8.0 MB
-- and climbing; with these settings it vacuumed 5 times and the index
-- stayed at 1.6 MB, at the same throughput.
WITH (
	autovacuum_vacuum_scale_factor = 0.02,
	autovacuum_vacuum_insert_scale_factor = 0.05,
	autovacuum_analyze_scale_factor = 0.05,
	autovacuum_vacuum_cost_delay = 1
);
SELECT pg_catalog.pg_extension_config_dump('a2_events', '');

-- notBefore (docs/semantics.md): NULL means at once, as for every event
-- written before 0.3.0.
COMMENT ON COLUMN a2_events.not_before IS
'Epoch milliseconds before which the event is not claimed (notBefore, or a failed attempt''s retry_after_ms backoff); NULL: claimable at once.';

-- Dispatch control (0.4.0, docs/semantics.md "Queues, priorities and
-- limits"): NULL in each column is the default, so an event that uses none
-- of them stores no more bytes than in 0.3.0.
COMMENT ON COLUMN a2_events.queue IS
'The event''s queue (JSON "queue"); NULL: the queue ''default''.';
COMMENT ON COLUMN a2_events.priority IS
'The event''s priority (JSON "priority", -32768..32767, higher is served first by a2_claim_next); NULL: 0.';
COMMENT ON COLUMN a2_events.concurrency_key IS
'The event''s concurrency key (JSON "concurrencyKey"); the limits of a2_limits for that key apply to its claims; NULL: no key.';
-- Cancel (docs/semantics.md, "Cancel"): a2_cancel sets processed_at and
-- cancelled_at together and leaves processed_by_attempt NULL.
COMMENT ON COLUMN a2_events.cancelled_at IS
'Epoch milliseconds at which a2_cancel cancelled the event (processed_at holds the same time); NULL: not cancelled.';
COMMENT ON COLUMN a2_events.cancel_reason IS
'The reason given to a2_cancel, or NULL.';
-- Durable waits (docs/semantics.md, "Waits"): NULL in both for every event
-- appended without waitFor, so such events store no more bytes than before.
COMMENT ON COLUMN a2_events.wait_for IS
'The event''s wait (waitFor): {"types": [...], "timeoutMs": n, "until": epoch ms, "notBefore": epoch ms}; until and notBefore are kept for a2 (the timeout''s due time, the event''s own notBefore); NULL: no wait.';
COMMENT ON COLUMN a2_events.wait_result IS
'How the wait ended when an awaited event ended it: {"index": n, "type": t}; NULL while waiting, after a timeout (derived: now >= until) and without a wait.';

CREATE TABLE a2_snapshots (
	session_id		text	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	state			jsonb	NOT NULL,
	updated_at		bigint	NOT NULL,
	PRIMARY KEY (session_id, reducer_name)
);
SELECT pg_catalog.pg_extension_config_dump('a2_snapshots', '');

CREATE TABLE a2_snapshot_history (
	session_id		text	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	state			jsonb	NOT NULL,
	updated_at		bigint	NOT NULL,
	PRIMARY KEY (session_id, reducer_name, up_to_index)
);
SELECT pg_catalog.pg_extension_config_dump('a2_snapshot_history', '');

CREATE TABLE a2_snapshot_pins (
	session_id		text	NOT NULL,
	event_index		bigint	NOT NULL,
	reducer_name	text	NOT NULL,
	up_to_index		bigint	NOT NULL,
	PRIMARY KEY (session_id, event_index, reducer_name, up_to_index)
);
SELECT pg_catalog.pg_extension_config_dump('a2_snapshot_pins', '');

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
SELECT pg_catalog.pg_extension_config_dump('a2_presence', '');

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
SELECT pg_catalog.pg_extension_config_dump('a2_presence_tombstones', '');

-- High-water marks of dropped sessions: a2_drop_session records the last
-- index here, and append reads it (through a2_retired_last_index) only
-- when the session has no event rows, so indexes are never reused.  One
-- small row per dropped session id, kept forever.
CREATE TABLE a2_retired_sessions (
	session_id		text	NOT NULL PRIMARY KEY,
	last_index		bigint	NOT NULL,
	retired_at		bigint	NOT NULL
);
SELECT pg_catalog.pg_extension_config_dump('a2_retired_sessions', '');

-- Distributed mode's locks (docs/distributed.md).  A single-node install
-- never uses them (they stay empty); the C code switches to its
-- distributed statements when a2_events is a Citus table.

-- One row per session, written the first time a session is locked in
-- distributed mode.  Its row lock is the session lock there: it lives on
-- the shard's node, so a call run by the coordinator and a call delegated
-- to the worker serialize on the same lock (an advisory lock exists only on
-- the node that takes it).
CREATE TABLE a2_session_locks (
	session_id		text	PRIMARY KEY
);
SELECT pg_catalog.pg_extension_config_dump('a2_session_locks', '');

COMMENT ON TABLE a2_session_locks IS
'Distributed mode only: one row per session, locked FOR UPDATE as the session lock so that calls serialize on the node that holds the session.';

-- The same for presence writers of one participant, distributed by ns.
CREATE TABLE a2_presence_locks (
	ns				text	NOT NULL,
	participant		text	NOT NULL,
	PRIMARY KEY (ns, participant)
);
SELECT pg_catalog.pg_extension_config_dump('a2_presence_locks', '');

COMMENT ON TABLE a2_presence_locks IS
'Distributed mode only: one row per presence participant, locked FOR UPDATE so that writers of one participant serialize on the node that holds its namespace.';
