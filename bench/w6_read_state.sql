-- W6: a2_read_state of session :session through index :through (every
-- client reads the same session; reads do not block each other).
SELECT a2_read_state(:session::text, 'bench6', :through::bigint);
