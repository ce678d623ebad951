-- Work dispatch on one session: claim, renew, complete, fail.

CREATE FUNCTION a2_claim(session_id text,
						 holder text,
						 ttl_ms bigint,
						 expires_at timestamptz DEFAULT NULL,
						 exclude_indexes bigint[] DEFAULT '{}',
						 queues text[] DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_claim'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_claim(text, text, bigint, timestamptz, bigint[], text[]) IS
'Lease every eligible event of a session to holder (only events in the given queues when queues is not NULL; never in a paused queue; within the concurrency and rate limits of their keys); returns {"outcome":"claimed","events":[...]}, {"outcome":"busy","retryAt":iso} or {"outcome":"settled"}.';

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
'Complete an attempt: append the returned events (caused by {index, attempt}), mark the event processed, promote its lane and release its snapshot pins; returns {"outcome":"completed","events":[...]} or {"outcome":"superseded"}. A returned id already stored is refused (Z2001): in any session on a single node, in this session in distributed mode (a2_distribute()).';

-- retry_after_ms (0.3.0) comes last, with a default, so that five-argument
-- calls keep working.
CREATE FUNCTION a2_fail(session_id text,
						event_index bigint,
						attempt integer,
						error text,
						max_failures integer,
						retry_after_ms bigint DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_fail'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_fail(text, bigint, integer, text, integer, bigint) IS
'Record a failed attempt and clear its lease; dead-letters the event at max_failures. With retry_after_ms > 0 a "failed" event is not claimed again before now + retry_after_ms. Returns {"outcome":"failed"|"dead_lettered"|"superseded","failureCount":n}.';

-- Cancel (0.4.0, docs/semantics.md "Cancel"): terminal, distinct from
-- processed and dead-lettered.  SECURITY INVOKER: a role needs UPDATE on
-- a2_events (a2_grant_worker grants it).
CREATE FUNCTION a2_cancel(session_id text,
						  indexes bigint[] DEFAULT NULL,
						  reason text DEFAULT NULL)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_cancel'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_cancel(text, bigint[], text) IS
'Cancel the listed unfinished events of a session (indexes NULL: every unfinished one: pending, scheduled, leased or dead-lettered); returns {"cancelled":[StoredEvent...]}, the events this call cancelled. A cancelled event is never claimed again; its live attempt is superseded; its lane advances. Idempotent: finished events are left alone. A listed index without an event is Z2003.';
