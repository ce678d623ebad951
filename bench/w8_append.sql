-- W8 append: a2_append of one event into a random session of the
-- database's :nsess sessions.
\set s random(1, :nsess)
SELECT a2_append(:prefix::text || :s, '[{"type": "bench", "payload": {"n": 1}}]');
