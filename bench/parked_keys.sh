#!/usr/bin/env bash
#
# bench/parked_keys.sh -- shared buffers per a2_claim_next call when half of
# the concurrency keys are at their limit, held by long leases of other
# workers (slow jobs), and every call commits on its own, as a worker
# loop's calls do.  Parks (docs/semantics.md, "Parked keys") published by
# one call's commit then serve the next calls; bench/queues_buffers.sh runs
# its calls in one transaction instead.
#
#   rows   A2_PK_SESSIONS sessions, one pending event each, spread over 10
#          queues and 3 priorities, each with one of 100 keys at limit 2
#   held   keys k0 .. k49 have both slots leased for an hour (a2_claim of
#          two of their sessions each, committed before the calls)
#   calls  A2_PK_CALLS calls of a2_claim_next('b', 30000), each its own
#          transaction (EXPLAIN (ANALYZE, BUFFERS) counts the statements it
#          runs through SPI); the first is a warm-up, not counted
#   plain  the same calls over as many sessions of plain W9 (default queue,
#          no priority, no key), the baseline
#
#   A2_PK_SESSIONS [10000]  A2_PK_CALLS [50]
#   PGHOST/PGPORT/PGUSER: the cluster (a2 preloaded, or nothing is parked)
set -euo pipefail

sessions=${A2_PK_SESSIONS:-10000}
calls=${A2_PK_CALLS:-50}
db=a2_parked_bench

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -c "CREATE EXTENSION a2"
psql -X -q -d "$db" -c "
	INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at,
						   lane_ready, queue, priority, concurrency_key)
	SELECT 'pk-' || i, 1, 't', 'null', 'pk-' || i,
		   (extract(epoch FROM now()) * 1000)::bigint - 3600000 + i % 1000, true,
		   'q' || (i % 10), (i % 3) - 1, 'k' || (i % 100)
	  FROM generate_series(1, $sessions) i"
psql -X -q -d "$db" -c "SELECT a2_set_concurrency_limit('k' || k, 2) FROM generate_series(0, 99) k" >/dev/null
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
# the slow jobs: two sessions of each of keys k0 .. k49 leased for an hour
held=$(psql -X -At -d "$db" -c "
	SELECT count(*) FILTER (WHERE a2_claim(s.session_id, 'slow', 3600000) ->> 'outcome' = 'claimed')
	  FROM (SELECT e.session_id, row_number() OVER (PARTITION BY e.concurrency_key ORDER BY e.session_id) AS n
			  FROM a2_events e WHERE substr(e.concurrency_key, 2)::int < 50) s
	 WHERE s.n <= 2")
echo "held leases: $held (keys k0 .. k49 at their limit of 2)"

# committed LABEL: the mean buffers of $calls committed calls after one
committed() {
	local out
	out=$(for ((k = 0; k <= calls; k++)); do
		echo "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim_next('b', 30000);"
	done | psql -X -At -d "$db")
	awk -v label="$1" '/Buffers: shared/ {
			hit = 0; rd = 0
			for (i = 1; i <= NF; i++) {
				if ($i ~ /^hit=/) hit = substr($i, 5) + 0
				if ($i ~ /^read=/) rd = substr($i, 6) + 0
			}
			n++
			if (n > 1) { total += hit + rd; counted++ }
		}
		END { printf "%-52s %8.1f buffers/call (%d calls)\n", label, total / counted, counted }' <<<"$out"
}
committed "committed calls, keys k0 .. k49 held"

# the baseline: plain W9's rows (default queue, no priority, no key)
psql -X -q -d "$db" -c "TRUNCATE a2_events" -c "DELETE FROM a2_limits"
psql -X -q -d "$db" -c "
	INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
	SELECT 'pl-' || i, 1, 't', 'null', 'pl-' || i,
		   (extract(epoch FROM now()) * 1000)::bigint - 3600000 + i % 1000, true
	  FROM generate_series(1, $sessions) i"
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
committed "committed calls, plain W9 rows"

psql -X -q -d postgres -c "DROP DATABASE $db WITH (FORCE)"
