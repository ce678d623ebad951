/* a2 0.1.0 -> 0.2.0 */

\echo Use "ALTER EXTENSION a2 UPDATE TO '0.2.0'" to load this file. \quit

-- A fresh CREATE EXTENSION a2 installs 0.1.0 and then runs this script
-- (there is no a2--0.2.0.sql), so a fresh install and an upgrade are the
-- same objects by construction.  Each section below belongs to one change
-- of 0.2.0; keep them in this order.

-- == notifier (issue 8) ==================================================

-- == fleet claiming, redrive (issue 9) ===================================

-- == operations: inspection, metrics, retention (issue 10) ===============

-- == distributed mode (issue 12) =========================================
