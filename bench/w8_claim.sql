-- W8 claim: a2_claim on a random session of the database's :nsess
-- sessions; each has one eligible event, and ttl_ms = 0 keeps it eligible.
\set s random(1, :nsess)
SELECT a2_claim(:prefix::text || :s, 'bench', 0);
