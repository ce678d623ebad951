#!/usr/bin/env bash
#
# bench/queues_unused.sh -- what 0.4.0's queues, priorities and limits cost
# W1/W4/W9-shaped calls that do not use them (issue 27): the same library
# on two databases, one at CREATE EXTENSION a2 VERSION '0.3.0' (the library
# runs its 0.3.0 statement texts there; no queue columns, no new indexes)
# and one at 0.4.0.  Deterministic counts, as for issue 17: WAL bytes and
# records and shared buffers of one a2_append (W1), one a2_claim and one
# a2_complete (W4) and one a2_claim_next (W9), each EXPLAIN (ANALYZE,
# BUFFERS, WAL) after A2_QU_WARM warm-up cycles in the same session, the
# mean of A2_QU_N measured cycles.
#   PGHOST/PGPORT/PGUSER: the cluster
set -euo pipefail
warm=${A2_QU_WARM:-20}
n=${A2_QU_N:-20}

for v in 0.3.0 0.4.0; do
	db=a2_qu_${v//./}
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" 2>/dev/null
	psql -X -q -d "$db" -c "CREATE EXTENSION a2 VERSION '$v'"
	# a W9-like backlog: 1000 sessions with one pending event
	psql -X -q -d "$db" -c "SELECT count(a2_append('bg-' || i, '[{\"type\": \"t\"}]')) FROM generate_series(1, 1000) i" >/dev/null
	psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
	script=$(
		for ((k = 1; k <= warm + n; k++)); do
			x=""
			((k > warm)) && x="EXPLAIN (ANALYZE, BUFFERS, WAL, COSTS OFF, TIMING OFF, SUMMARY OFF) "
			echo "${x}SELECT a2_append('w-$k', '[{\"type\": \"t\"}]');"
			echo "${x}SELECT a2_claim('w-$k', 'w', 60000);"
			echo "${x}SELECT a2_complete('w-$k', 1, 1, '[]');"
			echo "BEGIN;"
			echo "${x}SELECT a2_claim_next('w', 60000);"
			echo "ROLLBACK;"
		done
	)
	out=$(psql -X -At -d "$db" <<<"$script")
	# the Result node's lines of each EXPLAIN, in order: append, claim, complete, claim_next
	awk -v v="$v" -v n="$n" '
		/^Result/ { op = (c++ % 4); next }
		/Buffers: shared/ { for (i = 1; i <= NF; i++) if ($i ~ /^(hit|read|dirtied|written)=/) { split($i, a, "="); if ($i ~ /^(hit|read)=/) buf[op] += a[2] } }
		/WAL: / { for (i = 1; i <= NF; i++) { split($i, a, "="); if (a[1] == "records") rec[op] += a[2]; if (a[1] == "bytes") byt[op] += a[2] } }
		END {
			split("a2_append a2_claim a2_complete a2_claim_next", name, " ")
			for (o = 0; o < 4; o++)
				printf "%s %-14s buffers %6.1f  WAL records %5.1f  WAL bytes %7.1f\n", v, name[o + 1], buf[o] / n, rec[o] / n, byt[o] / n
		}' <<<"$out"
	psql -X -q -d postgres -c "DROP DATABASE $db WITH (FORCE)"
done
