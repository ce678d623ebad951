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
