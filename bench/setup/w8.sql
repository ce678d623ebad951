-- W8 data: a database of :sessions sessions (w8-1 .. w8-:sessions) of
-- :events events each; the last event of every session is claimable, the
-- others are processed.
SELECT bench_prefill('w8-', 1, :sessions, :events, true) AS w8_rows \gset
\echo W8: :w8_rows prefilled events in :sessions sessions
