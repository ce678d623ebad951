-- Presence: field-wise last-writer-wins values per participant, with
-- expiry and tombstones.

CREATE FUNCTION a2_presence_set(ns text,
								participant text,
								"values" jsonb,
								at timestamptz,
								seen bigint,
								ttl_ms bigint)
RETURNS void
AS 'MODULE_PATHNAME', 'a2_presence_set'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_presence_set(text, text, jsonb, timestamptz, bigint, bigint) IS
'Field-wise last-writer-wins presence write; a null value deletes the field and leaves a tombstone. Rows expire ttl_ms after the store clock.';

CREATE FUNCTION a2_presence_read(ns text)
RETURNS jsonb
AS 'MODULE_PATHNAME', 'a2_presence_read'
LANGUAGE C VOLATILE;

COMMENT ON FUNCTION a2_presence_read(text) IS
'Live presence rows of a namespace, ordered by participant and field: [{"participant","field","value","seen","at","expiresAt"}]. Sweeps expired rows unless the transaction is read-only.';
