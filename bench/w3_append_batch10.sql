-- W3: a2_append of a batch of 10 events per transaction into the client's
-- own session.
SELECT a2_append(:prefix::text || :client_id,
	'[{"type": "bench", "payload": {"n": 1}}, {"type": "bench", "payload": {"n": 2}},
	  {"type": "bench", "payload": {"n": 3}}, {"type": "bench", "payload": {"n": 4}},
	  {"type": "bench", "payload": {"n": 5}}, {"type": "bench", "payload": {"n": 6}},
	  {"type": "bench", "payload": {"n": 7}}, {"type": "bench", "payload": {"n": 8}},
	  {"type": "bench", "payload": {"n": 9}}, {"type": "bench", "payload": {"n": 10}}]');
