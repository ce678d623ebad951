#!/usr/bin/env bash
#
# bench/queues_unused_ir.sh -- instructions per call that 0.4.0's queues,
# priorities and limits add to W1/W4/W9-shaped calls that do not use them
# (issue 27; bench/queues_unused.sh counts their WAL and buffers).  The
# same library on two databases, one at CREATE EXTENSION a2 VERSION
# '0.3.0' (the library runs its 0.3.0 statement texts: no queue columns,
# no new indexes) and one at 0.4.0, each with 1,000 pending sessions.
#
# callgrind counts inside a2_append, a2_claim, a2_complete and
# a2_claim_next (and what they call), in a single-user backend on the
# cluster's data directory: A2_QI_WARM + A2_QI_N cycles of append, claim,
# complete, then a claim_next rolled back, against A2_QI_WARM cycles
# alone; the difference divided by A2_QI_N is one call, warm plans.
#
#   PGHOST/PGPORT/PGUSER: the running cluster (its databases are made
#   there); A2_PGDATA: its data directory; PG_CONFIG.  The script stops
#   the cluster for the single-user runs and starts it again with
#   scripts/cluster.sh.  Needs valgrind; the backend runs as postgres.
#   A2_QI_WARM [10]  A2_QI_N [20]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
warm=${A2_QI_WARM:-10}
n=${A2_QI_N:-20}
bin=$("${PG_CONFIG:-pg_config}" --bindir)
: "${A2_PGDATA:?}"
fns=(a2_append a2_claim a2_complete a2_claim_next)
work=$(mktemp -d)
[[ -z ${A2_QI_KEEP:-} ]] || echo "work: $work" >&2
chmod 777 "$work"
trap '[[ -n ${A2_QI_KEEP:-} ]] || rm -rf "$work"' EXIT

for v in 0.3.0 0.4.0; do
	db=a2_qi_${v//./}
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" 2>/dev/null
	psql -X -q -d "$db" -c "CREATE EXTENSION a2 VERSION '$v'"
	psql -X -q -d "$db" -c "SELECT count(a2_append('bg-' || i, '[{\"type\": \"t\"}]')) FROM generate_series(1, 1000) i" >/dev/null
done
bash "$root/scripts/cluster.sh" stop >/dev/null

# count DB CYCLES: each function's inclusive instructions, one per line
count() {
	local db=$1 cycles=$2 toggles=()
	for f in "${fns[@]}"; do toggles+=("--toggle-collect=$f"); done
	{
		echo "VACUUM ANALYZE a2_events"
		for ((k = 1; k <= cycles; k++)); do
			echo "SELECT a2_append('w-$k', '[{\"type\": \"t\"}]')"
			echo "SELECT a2_claim('w-$k', 'w', 60000)"
			echo "SELECT a2_complete('w-$k', 1, 1, '[]')"
			echo "BEGIN"
			echo "SELECT a2_claim_next('w', 60000)"
			echo "ROLLBACK"
		done
	} >"$work/script.sql"
	chmod 644 "$work/script.sql"
	rm -f "$work/out"; trap 'cp "$work/out" "$work/out.$1.$2" 2>/dev/null || true' RETURN
	runuser -u postgres -- valgrind --tool=callgrind "${toggles[@]}" \
		--callgrind-out-file="$work/out" "$bin/postgres" --single -D "$A2_PGDATA" \
		-c shared_preload_libraries=a2 "$db" <"$work/script.sql" >/dev/null 2>"$work/err" ||
		{ tail -5 "$work/err" >&2; exit 1; }
	for f in "${fns[@]}"; do
		callgrind_annotate --inclusive=yes --threshold=100 "$work/out" 2>/dev/null |
			awk -v f="$f" '!found && $0 ~ (":" f " ") { gsub(/,/, "", $1); v = $1; found = 1 }
				END { print found ? v : 0 }'
	done
}

declare -A ir
for v in 0.3.0 0.4.0; do
	db=a2_qi_${v//./}
	mapfile -t lo < <(count "$db" "$warm")
	mapfile -t hi < <(count "$db" $((warm + n)))
	for i in "${!fns[@]}"; do
		ir[$v,$i]=$(((hi[i] - lo[i]) / n))
	done
done
bash "$root/scripts/cluster.sh" start >/dev/null
for v in 0.3.0 0.4.0; do psql -X -q -d postgres -c "DROP DATABASE a2_qi_${v//./} WITH (FORCE)"; done

printf '%-14s %12s %12s %7s\n' call "0.3.0 objects" "0.4.0 objects" ratio
for i in "${!fns[@]}"; do
	printf '%-14s %12d %12d %7.3f\n' "${fns[i]}" "${ir[0.3.0,$i]}" "${ir[0.4.0,$i]}" \
		"$(awk -v a="${ir[0.4.0,$i]}" -v b="${ir[0.3.0,$i]}" 'BEGIN { print (b ? a / b : 0) }')"
done
