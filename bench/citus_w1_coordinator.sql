-- W1 through the coordinator without delegation (bench/citus.sh): the
-- call is inside an expression, so Citus runs a2 on the coordinator and
-- each statement a2 runs is a round trip to the session's worker.
SELECT a2_append(:prefix::text || :client_id, '[{"type": "bench", "payload": {"n": 1}}]') IS NOT NULL;
