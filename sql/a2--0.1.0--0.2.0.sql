/* a2 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.2.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs this script
-- (there is no a2--0.2.0.sql), so a fresh install and an upgrade are the
-- same objects by construction.  Each section below belongs to one change
-- of 0.2.0; keep them in this order.

-- == notifier (issue 8) ==================================================

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
