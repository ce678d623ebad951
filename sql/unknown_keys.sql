--
-- unknown_keys: a key the contract does not define is refused (22023),
-- in an event, a cause, a claims element, a snapshot write and a
-- read_states request (SPEC section 5).  The message names the key and
-- the element, the hint lists the keys accepted there, and nothing is
-- written.
--
\set VERBOSITY default
\set SHOW_CONTEXT never
SET a2.now = '2026-05-01 00:00:00+00';

SELECT a2_append('uk-a', '[{"id": "uk-a-1", "type": "job"}]') -> 'hasPending' AS pending;
SELECT jsonb_path_query_array(a2_claim('uk-a', 'w', 60000), '$.events[*].index') AS claimed;
SELECT a2_put_snapshots('uk-a', 'r', '[{"index": 1, "state": {"n": 1}}]');
CREATE TEMP TABLE uk_before AS SELECT * FROM a2_events WHERE session_id LIKE 'uk-%';

-- The new user's typo: "paylaod" would have been stored as payload null.
SELECT a2_append('uk-a', '[{"type": "x", "paylaod": {"qty": 1}}]');
-- A JSON null under an unknown key is still an unknown key.
SELECT a2_append('uk-a', '[{"type": "x", "lanes": null}]');
-- The element is named by its position in the batch.
SELECT a2_append('uk-a', '[{"type": "x"}, {"type": "y", "Type": "z"}]');
-- cause
SELECT a2_append('uk-a', '[{"type": "x", "cause": {"index": 1, "attempt": 1, "batch": 2}}]');
-- complete's returned events: cause keeps its own refusal, other unknown
-- keys are refused like append's
SELECT a2_complete('uk-a', 1, 1, '[{"id": "uk-c", "type": "x", "cause": {"index": 1, "attempt": 1}}]');
SELECT a2_complete('uk-a', 1, 1, '[{"id": "uk-c", "type": "x", "setled": true}]');
-- a claims element
SELECT a2_renew('uk-a', 'w', '[{"index": 1, "attempt": 1, "holder": "w"}]', 60000);
-- a snapshot write
SELECT a2_put_snapshots('uk-a', 'r', '[{"index": 2, "state": {}, "pins": [1]}]');
-- a read_states request (no session to name: the request is the element)
SELECT a2_read_states('[{"sessionId": "uk-a"}, {"sessionId": "uk-a", "through": 1}]', 'r');

-- Nothing was written: the events are as before, the snapshot head too,
-- and event 1 is still held at attempt 1.
SELECT count(*) AS changed FROM (
  (SELECT * FROM a2_events WHERE session_id LIKE 'uk-%' EXCEPT SELECT * FROM uk_before)
  UNION ALL
  (SELECT * FROM uk_before EXCEPT SELECT * FROM a2_events WHERE session_id LIKE 'uk-%')) d;
SELECT up_to_index, state FROM a2_snapshots WHERE session_id = 'uk-a';

-- Every key of the contract is still accepted, JSON null meaning absent.
SELECT jsonb_path_query_array(a2_append('uk-a', '[{"id": "uk-a-2", "type": "x", "payload": 1,
    "cause": {"index": 1, "attempt": 1, "batchSize": null}, "lane": null, "settled": null}]'),
    '$.events[*].index') AS appended;
SELECT a2_renew('uk-a', 'w', '[{"index": 1, "attempt": 1}]', 60000);
SELECT a2_put_snapshots('uk-a', 'r', '[{"index": 2, "state": {}, "pinEventIndexes": null}]');
SELECT jsonb_array_length(a2_read_states('[{"sessionId": "uk-a", "throughIndex": null, "snapshotThroughIndex": 1}]', 'r')) AS results;
-- complete takes no cause, but a null one is absent like any null field.
SELECT a2_complete('uk-a', 1, 1, '[{"id": "uk-c", "type": "x", "cause": null}]') ->> 'outcome' AS complete;

-- A long unknown key is quoted up to 64 bytes, cut at a character
-- boundary: here byte 64 falls inside the two-byte U+00E9, which is left
-- out.  Under a client encoding other than UTF-8 the message converts
-- cleanly (a cut inside the character gave 22021 in 0.2.0, not 22023).
SET client_encoding = 'LATIN1';
SELECT a2_append('uk-enc', ('[{"type": "t", "' || repeat('k', 63) || '\u00e9\u00e9": 1}]')::jsonb);
\echo :LAST_ERROR_SQLSTATE
RESET client_encoding;

DROP TABLE uk_before;
RESET a2.now;
