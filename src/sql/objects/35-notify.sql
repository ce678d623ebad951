-- Announcements on a2_events (docs/semantics.md#notifications): how they
-- are sent, and waiting for the notifier.  Not for everyone: both take the
-- notifier's queue lock (90-grants.sql).

-- How this session's announcements are sent, and the notifier's queue.
-- mode: 'notifier' (a2 is in shared_preload_libraries: a background worker
-- sends NOTIFY after commit), 'in-transaction' (not preloaded: the
-- committing transaction sends NOTIFY itself, as in 0.1.0), or 'off'
-- (a2.notify = off in this session).  The other columns are NULL unless
-- the notifier's shared memory exists; the counters run since the server
-- started.  From 0.4.0 also the durable records on disk and the schedulers
-- (docs/operations.md, "Background workers"): where the background workers
-- cannot act, it shows here as well as in the log.
CREATE FUNCTION a2_notify_status(
	OUT mode text,
	OUT notifier_pid integer,
	OUT queue_size integer,
	OUT queue_depth integer,
	OUT waiting integer,
	OUT recorded bigint,
	OUT announced bigint,
	OUT coalesced bigint,
	OUT fallbacks bigint,
	OUT dropped bigint,
	OUT disk_records integer,
	OUT disk_set_aside integer,
	OUT schedulers integer,
	OUT schedulers_waiting integer)
RETURNS record
AS 'MODULE_PATHNAME', 'a2_notify_status'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_status() IS
'How announcements on a2_events are sent in this session (mode: notifier, in-transaction or off) and the notifier queue: size, depth, entries waiting for a running (e.g. prepared) transaction, and counters since server start: recorded, announced (NOTIFYs sent), coalesced (entries merged into a later one of the same session), fallbacks (transactions that found the queue full and sent NOTIFY themselves), dropped (entries of transactions that aborted after recording); then the durable records of prepared transactions on disk (disk_records) and those set aside as unreadable (disk_set_aside), the due-announcement schedulers running (schedulers) and the databases waiting for a background worker to get one (schedulers_waiting).';

CREATE FUNCTION a2_notify_wait(timeout_ms bigint DEFAULT 10000)
RETURNS boolean
AS 'MODULE_PATHNAME', 'a2_notify_wait'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_wait(bigint) IS
'Wait until the notifier has sent every announcement owed by transactions that have finished (those of running or prepared transactions are not owed yet), so that a listener''s next round trip receives them; true when done, false after timeout_ms. Without the notifier announcements are sent at commit and this returns true at once. Meant for tests.';
