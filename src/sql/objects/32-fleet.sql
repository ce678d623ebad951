-- Fleet claiming across sessions, and putting dead letters back in play.

CREATE FUNCTION a2_claim_next(holder text,
							  ttl_ms bigint,
							  max_sessions integer DEFAULT 1,
							  expires_at timestamptz DEFAULT NULL,
							  queues text[] DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim_next'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim_next(text, bigint, integer, timestamptz, text[]) IS
'Claim, by a2_claim''s rule, every eligible event of up to max_sessions sessions that have eligible work now (in the given queues when queues is not NULL, never in a paused queue), highest priority first, then oldest available work first, skipping (never waiting for) sessions other transactions are claiming; returns {"claims":[{"sessionId","events":[StoredEvent]}],"retryAt":iso|null}, retryAt being the earliest time more work becomes available.';

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
