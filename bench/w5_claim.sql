-- W5 claim: a2_claim on the client's own session, which holds exactly one
-- eligible event.  ttl_ms = 0 lets the lease expire at once, so the next
-- claim finds the same event eligible again.
SELECT a2_claim(:prefix::text || :client_id, 'bench', 0);
