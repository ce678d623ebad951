/* a2 0.2.0 -> 0.3.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.3.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs the updates
-- 0.1.0 -> 0.2.0 -> 0.3.0 (there is no a2--0.3.0.sql), so a fresh install
-- and an upgrade are the same objects by construction.  Each section below
-- belongs to one issue of 0.3.0; keep them in this order.

-- == field conditions (issue 15) ==========================================

-- == PostgreSQL 15-18 (issue 16) ==========================================

-- == scheduling (issue 17) ================================================

-- == distributed fleets (issue 18) ========================================

-- == clients and docs (issue 19) ==========================================

-- == bytes per event (issue 20) ===========================================

-- Generated event ids are time-ordered from 0.3.0 on (RFC 9562 version 7,
-- src/uuid7.c): a library change, nothing to alter here.  Existing ids
-- stay as they are; new ones land together at one place of
-- a2_events_event_id instead of on random leaves.

-- Two partial indexes lose the rows no query looks for in them, so that
-- appending an event (and claiming, failing or renewing one without a
-- lane) writes two btree entries fewer (bench/RESULTS.md, issue 20):
--   a2_events_lane_pending: only events with a lane.  Every query that
--     reads it compares lane with =, which is strict, so the planner
--     proves lane IS NOT NULL from the query itself.
--   a2_events_claim_expiry: only leased events.  Its one reader (the
--     retryAt of a busy a2_claim) asks for claim_expires_at > now.
-- Rebuilding them reads all of a2_events once, under a lock that makes
-- writers wait (seconds per million events).
DROP INDEX a2_events_lane_pending;
CREATE INDEX a2_events_lane_pending
	ON a2_events (session_id, lane, idx)
	WHERE processed_at IS NULL AND lane IS NOT NULL;
DROP INDEX a2_events_claim_expiry;
CREATE INDEX a2_events_claim_expiry
	ON a2_events (session_id, claim_expires_at)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL
	  AND claim_expires_at IS NOT NULL;
