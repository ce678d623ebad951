-- P4: pgmq's own cycle, the work W4n does (bench/w4n_cycle.sql), three
-- transactions on the client's own queue: send one message, read it with
-- a 30 s visibility timeout, archive it.
SELECT pgmq.send(:prefix::text || :client_id, '{"type": "job", "payload": {"n": 1}}');
SELECT msg_id FROM pgmq.read(:prefix::text || :client_id, 30, 1) \gset
SELECT pgmq.archive(:prefix::text || :client_id, :msg_id::bigint);
