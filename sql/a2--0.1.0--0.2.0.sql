/* a2 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.2.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs this script
-- (there is no a2--0.2.0.sql), so a fresh install and an upgrade are the
-- same objects by construction.  Each section below belongs to one change
-- of 0.2.0; keep them in this order.

-- == notifier (issue 8) ==================================================

-- How this session's announcements are sent, and the notifier's queue.
-- mode: 'notifier' (a2 is in shared_preload_libraries: a background worker
-- sends NOTIFY after commit), 'in-transaction' (not preloaded: the
-- committing transaction sends NOTIFY itself, as in 0.1.0), or 'off'
-- (a2.notify = off in this session).  The other columns are NULL unless
-- the notifier's shared memory exists; the counters run since the server
-- started.
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
	OUT dropped bigint)
RETURNS record
AS 'MODULE_PATHNAME', 'a2_notify_status'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_status() IS
'How announcements on a2_events are sent in this session (mode: notifier, in-transaction or off) and the notifier queue: size, depth, entries waiting for a running (e.g. prepared) transaction, and counters since server start: recorded, announced (NOTIFYs sent), coalesced (entries merged into a later one of the same session), fallbacks (transactions that found the queue full and sent NOTIFY themselves), dropped (entries of transactions that aborted after recording).';

CREATE FUNCTION a2_notify_wait(timeout_ms bigint DEFAULT 10000)
RETURNS boolean
AS 'MODULE_PATHNAME', 'a2_notify_wait'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_notify_wait(bigint) IS
'Wait until the notifier has sent every announcement owed by transactions that have finished (those of running or prepared transactions are not owed yet), so that a listener''s next round trip receives them; true when done, false after timeout_ms. Without the notifier announcements are sent at commit and this returns true at once. Meant for tests.';

-- == fleet claiming, redrive (issue 9) ===================================

-- The rows that are or will become claimable (lane-ready, unprocessed, not
-- dead-lettered), keyed by the time they became available: the lease
-- expiry when leased, else the creation time.  a2_claim_next walks it
-- oldest first and stops at now, so its cost does not grow with the
-- number of sessions or of finished events; its retryAt is one probe
-- past now.  session_id makes the key unique enough to resume a walk.
CREATE INDEX a2_events_available
	ON a2_events ((COALESCE(claim_expires_at, created_at)), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;

CREATE FUNCTION a2_claim_next(holder text,
							  ttl_ms bigint,
							  max_sessions integer DEFAULT 1,
							  expires_at timestamptz DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim_next'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim_next(text, bigint, integer, timestamptz) IS
'Claim, by a2_claim''s rule, every eligible event of up to max_sessions sessions that have eligible work now, oldest available work first, skipping (never waiting for) sessions other transactions are claiming; returns {"claims":[{"sessionId","events":[StoredEvent]}],"retryAt":iso|null}, retryAt being the earliest live lease expiry.';

CREATE FUNCTION a2_redrive(session_id text, event_index bigint)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_redrive'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_redrive(text, bigint) IS
'Put a dead-lettered event back in play (claimable at once, failureCount reset to 0, last error kept); returns {"outcome":"redriven"|"already_redriven","event":StoredEvent}. An event that is not dead-lettered raises Z2004.';

CREATE FUNCTION a2_redrive(session_id text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_redrive_session'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_redrive(text) IS
'Redrive every dead-lettered event of a session, in index order; returns {"events":[StoredEvent]} (the redriven events, [] when there were none).';

-- == operations: inspection, metrics, retention (issue 10) ===============

-- == distributed mode (issue 12) =========================================
