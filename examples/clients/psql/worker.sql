-- examples/clients/psql/worker.sql: the cookbook's worker steps in psql.
--
--   psql "$A2_URL" -X -q -f worker.sql
--
-- Run by run.sh (which test/suites/86-cookbook.sh runs direct and through
-- pgbouncer); its output is compared with expected.txt.  docs/clients.md
-- quotes the parts between [name] and [/name] markers.
\set ON_ERROR_STOP 1

-- 1. JSON in and out.
-- [json]
-- A JSON argument is a string literal: :'name' quotes a psql variable as
-- one.  Results are jsonb: take them apart with -> and ->>, or \gset.
\set order '[{"id": "order-1/placed", "type": "order.placed", "lane": "payments", "payload": {"items": [{"sku": "tea", "qty": 2}, {"sku": "cups", "qty": 6}], "note": "thé ☕ — 東京"}}]'
SELECT r->'events'->0->>'index' AS idx, r->>'hasPending' AS pending
  FROM a2_append('order-1', :'order') AS r \gset
\echo append: order-1 index :idx, hasPending :pending
SELECT e->'payload'->>'note' AS note, jsonb_array_length(e->'payload'->'items') AS items,
       e->'payload' = (:'order'::jsonb)->0->'payload' AS same
  FROM jsonb_array_elements(a2_read('order-1')) AS e \gset
\if :same
\echo read: payload round trip, note :"note", :items items
\endif
-- [/json]

-- 2. Errors: psql keeps the last one's SQLSTATE.
-- [errors]
\set ON_ERROR_STOP 0
SELECT a2_append('order-1', '{"not": "an array"}');
\echo error: :LAST_ERROR_SQLSTATE :LAST_ERROR_MESSAGE
\set ON_ERROR_STOP 1
-- [/errors]

-- 3. Claim, then complete inside the app's transaction.
SELECT c->>'outcome' AS outcome, c->'events'->0 AS ev FROM a2_claim('order-1', 'worker-1', 30000) AS c \gset
SELECT :'ev'::jsonb->>'index' AS idx, :'ev'::jsonb->>'attemptCount' AS attempt \gset
\echo claim: :outcome [:idx] attempt :attempt
\set paid '[{"id": "order-1/paid", "type": "payment.captured", "payload": {"amount": 7.5}}]'
BEGIN;
INSERT INTO shipments (order_id, sku, qty)
SELECT 'order-1', i->>'sku', (i->>'qty')::int FROM jsonb_array_elements(:'ev'::jsonb->'payload'->'items') AS i;
SELECT a2_complete('order-1', :idx, :attempt, :'paid') IS NOT NULL AS ok \gset
ROLLBACK;
SELECT count(*) AS n FROM shipments WHERE order_id = 'order-1' \gset
SELECT CASE WHEN a2_read('order-1')->0->>'processedAt' IS NULL THEN 'unprocessed' ELSE 'processed' END AS state \gset
\echo rollback: shipments :n, event 1 :state
-- [transaction]
BEGIN;
INSERT INTO shipments (order_id, sku, qty)
SELECT 'order-1', i->>'sku', (i->>'qty')::int FROM jsonb_array_elements(:'ev'::jsonb->'payload'->'items') AS i;
SELECT r->>'outcome' AS outcome, r->'events'->0->>'index' AS child
  FROM a2_complete('order-1', :idx, :attempt, :'paid') AS r \gset
COMMIT;
-- [/transaction]
SELECT count(*) AS n FROM shipments WHERE order_id = 'order-1' \gset
\echo complete: :outcome, child index :child, shipments :n

-- 4. Stale work, both ways.
SELECT a2_claim('order-1', 'worker-1', 0) IS NOT NULL AS ok \gset
SELECT a2_claim('order-1', 'worker-2', 30000)->'events'->0->>'attemptCount' AS attempt \gset
SELECT a2_complete('order-1', 2, 1)->>'outcome' AS late \gset
\set ON_ERROR_STOP 0
SELECT a2_append('order-1', '[{"type": "refund.requested", "cause": {"index": 2, "attempt": 1}}]');
\set ON_ERROR_STOP 1
\echo stale: complete :late, caused append :LAST_ERROR_SQLSTATE
SELECT a2_complete('order-1', 2, :attempt) IS NOT NULL AS ok \gset
