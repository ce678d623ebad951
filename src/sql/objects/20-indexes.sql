-- Indexes beyond the primary keys.  Their names are the TypeScript store's
-- where it has them.  Every partial index on a2_events leaves out the rows
-- none of its queries looks for, so that appending an event (and claiming,
-- failing or renewing one without a lane) writes as few btree entries as
-- possible (bench/RESULTS.md, "Bytes per event, time-ordered ids, long
-- transactions").

CREATE UNIQUE INDEX a2_events_event_id ON a2_events (event_id);

CREATE INDEX a2_events_unprocessed
	ON a2_events (session_id, idx) WHERE processed_at IS NULL;

-- Only events with a lane.  Every query that reads it compares lane with =,
-- which is strict, so the planner proves lane IS NOT NULL from the query
-- itself.
CREATE INDEX a2_events_lane_pending
	ON a2_events (session_id, lane, idx)
	WHERE processed_at IS NULL AND lane IS NOT NULL;

CREATE INDEX a2_events_dispatch_ready
	ON a2_events (session_id, idx)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;

-- Only leased events.  No a2 statement reads it (a busy a2_claim's retryAt
-- also looks at not_before, so it scans a2_events_dispatch_ready); it is
-- kept, with the name the TypeScript store's schema gives it, for queries
-- that ask for claim_expires_at > now, which a NULL never satisfies.
CREATE INDEX a2_events_claim_expiry
	ON a2_events (session_id, claim_expires_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND claim_expires_at IS NOT NULL;

-- a2_claim_next's index: the rows that are or will become claimable
-- (lane-ready, unprocessed, not dead-lettered), keyed by the time they
-- become available: the lease expiry when leased, else when due,
-- greatest(not_before, created_at) (GREATEST skips NULL).  a2_claim_next
-- walks it oldest first and stops at now, so its cost does not grow with
-- the number of sessions, of finished events or of scheduled events; its
-- retryAt is one probe past now.  session_id makes the key unique enough
-- to resume a walk.  Since 0.4.0 it holds the default queue's work at
-- priority 0 only (queue and priority NULL): every other event is in
-- a2_events_queue_available, so a walk of one queue never reads another
-- queue's backlog.
CREATE INDEX a2_events_default_available
	ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND queue IS NULL AND priority IS NULL;

-- a2_claim_next's index for events in a named queue or with a priority
-- (0.4.0, src/dispatch_walk.c): the same entries as a2_events_default_available,
-- led by the queue and the priority, so a walk reads one (queue, priority)
-- level oldest first and stops at now, and finds the next level or queue
-- with one probe.  Events that use neither are not in it, so it costs
-- them nothing.  The INCLUDE columns make the walk's probes index-only
-- scans: the columns its key expressions are made of, and the concurrency
-- key whose filter leaves out the work of keys at their limit, which then
-- costs no heap visit on an all-visible page.
CREATE INDEX a2_events_queue_available
	ON a2_events (queue, (COALESCE(priority, 0)),
				  (COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	INCLUDE (concurrency_key, priority, claim_expires_at, not_before, created_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

-- a2_claim_next's index for a call for every queue (0.4.0,
-- src/dispatch_walk.c): the entries of a2_events_queue_available led by
-- the priority instead of the queue, so the walk reads each level of all
-- queues at once, oldest first, with one cursor instead of one per queue
-- (and no probe per queue to find them).  The highest priority comes
-- first, so one probe finds the next level down and its oldest entry at
-- once.  The queue and the concurrency key are included: the walk leaves
-- out paused queues' and held keys' work without visiting the row.
CREATE INDEX a2_events_level_available
	ON a2_events ((COALESCE(priority, 0)) DESC,
				  (COALESCE(claim_expires_at, GREATEST(not_before, created_at))), session_id)
	INCLUDE (queue, concurrency_key)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

-- The retryAt of an a2_claim_next call for every queue (0.4.0): the first
-- available-since time after now among the entries of
-- a2_events_queue_available, whatever their queue and priority, in one
-- probe.  Events without a queue or priority are not in it.
CREATE INDEX a2_events_queue_retry
	ON a2_events ((COALESCE(claim_expires_at, GREATEST(not_before, created_at))))
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND (queue IS NOT NULL OR priority IS NOT NULL);

-- Concurrency limits (0.4.0, src/limits.c): the leases of events with a
-- concurrency key, by key and expiry, so counting a key's live leases
-- reads that key's leased events only.  Empty without keys.
CREATE INDEX a2_events_key_leases
	ON a2_events (concurrency_key, claim_expires_at)
	WHERE concurrency_key IS NOT NULL AND processed_at IS NULL AND failed_at IS NULL
	  AND claim_expires_at IS NOT NULL;

-- Due announcements (src/scheduler.c): each database's scheduler finds what
-- falls due next here.  Only unprocessed, live events with a due time are
-- in it, so it costs nothing for events without notBefore.
CREATE INDEX a2_events_due ON a2_events (not_before)
	WHERE not_before IS NOT NULL AND processed_at IS NULL AND failed_at IS NULL;

-- Cancelled events (a2_cancel), for a2_metrics' cancelled_events: only
-- cancelled rows are in it, so it costs nothing while nothing is cancelled.
CREATE INDEX a2_events_cancelled ON a2_events (cancelled_at)
	WHERE cancelled_at IS NOT NULL;

-- Durable waits (src/waits.c): the unprocessed events still waiting for an
-- event, per session.  An append probes it once; it holds no entry for an
-- event without waitFor, so such an append writes nothing more, and the
-- probe of a session without waiting events reads one page.
CREATE INDEX a2_events_waiting ON a2_events (session_id, idx)
	WHERE wait_for IS NOT NULL AND wait_result IS NULL AND processed_at IS NULL;

CREATE INDEX a2_snapshot_pins_checkpoint
	ON a2_snapshot_pins (session_id, reducer_name, up_to_index);
