-- examples/clients/psql/listen.sql: LISTEN and catch up in psql.
--
--   psql "$A2_LISTEN_URL" -X -q -v seen=0 -v id=order-1/packed -f listen.sql
--
-- On a direct connection (through pgbouncer in transaction mode the LISTEN
-- would stay on a server connection other clients then use).  run.sh runs
-- it before a server restart and again after one: a psql script stops
-- when its connection is lost, and is run again from the last index seen.
\set ON_ERROR_STOP 1
-- [listen]
-- LISTEN first, then read after the last index seen (:seen).  psql prints
-- a notification after the next command it runs; a2_notify_wait() waits
-- until the background notifier has sent what committed transactions are
-- owed (without the notifier, NOTIFY went out at commit already).
LISTEN a2_events;
SELECT coalesce(max((e->>'index')::int), :seen) AS seen
  FROM jsonb_array_elements(a2_read('order-1', :seen)) AS e \gset
\echo listen: caught up to :seen
SELECT a2_append('order-1', jsonb_build_array(jsonb_build_object(
         'id', :'id', 'type', 'order.noted', 'settled', true)))->'events'->0->>'index' AS appended \gset
SELECT a2_notify_wait() AS sent \gset
SELECT coalesce(max((e->>'index')::int), :seen) AS seen
  FROM jsonb_array_elements(a2_read('order-1', :seen)) AS e \gset
\echo listen: appended :appended, read up to :seen
-- [/listen]
