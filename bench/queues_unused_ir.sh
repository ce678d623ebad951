#!/usr/bin/env bash
#
# bench/queues_unused_ir.sh -- instructions that 0.4.0's objects (queues,
# priorities, limits, cancel, waits: their columns, indexes and statement
# texts) add to W1/W4/W9-shaped calls that use none of them (issue 27;
# bench/queues_unused.sh counts their WAL and buffers).  The same library
# on two databases, one at CREATE EXTENSION a2 VERSION '0.3.0' (the library
# runs its 0.3.0 statement texts: no new columns, no new indexes) and one
# at 0.4.0, each with 1,000 pending sessions.
#
# A single-user backend on the cluster's data directory runs A2_QI_WARM +
# A2_QI_N cycles of four autocommit statements: a2_append, a2_claim,
# a2_complete (W1 and W4) and a2_claim_next (W9), under callgrind, which
# collects in the backend's main loop and writes one count per statement
# (a dump as each statement's transaction starts).
# Per call, the mean over the last A2_QI_N cycles of:
#   statement  the whole statement, as issue 17 counted a transaction:
#              parse, plan, the call, commit;
#   function   inside the a2 function only (and what it calls).
#
#   PGHOST/PGPORT/PGUSER: the running cluster (its databases are made
#   there); A2_PGDATA: its data directory; PG_CONFIG.  The script stops
#   the cluster for the single-user runs and starts it again with
#   scripts/cluster.sh.  Needs valgrind; the backend runs as postgres.
#   A2_QI_WARM [20]  A2_QI_N [60]  A2_QI_KEEP=1 keeps the dumps (the
#   directory is printed on stderr)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
warm=${A2_QI_WARM:-20}
n=${A2_QI_N:-60}
bin=$("${PG_CONFIG:-pg_config}" --bindir)
: "${A2_PGDATA:?}"
fns=(a2_append a2_claim a2_complete a2_claim_next)
work=$(mktemp -d)
[[ -z ${A2_QI_KEEP:-} ]] || echo "dumps: $work" >&2
chmod 777 "$work"
trap '[[ -n ${A2_QI_KEEP:-} ]] || rm -rf "$work"' EXIT

for v in 0.3.0 0.4.0; do
	db=a2_qi_${v//./}
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db" 2>/dev/null
	psql -X -q -d "$db" -c "CREATE EXTENSION a2 VERSION '$v'"
	psql -X -q -d "$db" -c "SELECT count(a2_append('bg-' || i, '[{\"type\": \"t\"}]')) FROM generate_series(1, 1000) i" >/dev/null
	psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
done
bash "$root/scripts/cluster.sh" stop >/dev/null

# count DB: lines "OP STATEMENT FUNCTION", one per measured call
count() {
	local db=$1 dir=$work/$1
	mkdir -m 777 "$dir"
	{
		for ((k = 1; k <= warm + n; k++)); do
			echo "SELECT a2_append('w-$k', '[{\"type\": \"t\"}]')"
			echo "SELECT a2_claim('w-$k', 'w', 60000)"
			echo "SELECT a2_complete('w-$k', 1, 1, '[]')"
			echo "SELECT a2_claim_next('w', 60000)"
		done
	} >"$dir/script.sql"
	chmod 644 "$dir/script.sql"
	runuser -u postgres -- valgrind --tool=callgrind --collect-atstart=no \
		--toggle-collect=PostgresMain --dump-before=StartTransactionCommand \
		--dump-instr=no --callgrind-out-file="$dir/cg" "$bin/postgres" --single -D "$A2_PGDATA" \
		-c shared_preload_libraries=a2 "$db" <"$dir/script.sql" >"$dir/out" 2>"$dir/err" ||
		{ tail -5 "$dir/err" >&2; exit 1; }
	# a dump as each statement's transaction starts: cg.1 and cg.2 hold the
	# start-up (its own two transactions), cg.(S + 2) statement S, and cg
	# (written at exit) the last one
	local last=$((4 * (warm + n)))
	[[ -f $dir/cg.$((last + 1)) && ! -f $dir/cg.$((last + 2)) ]] ||
		{ echo "unexpected dumps in $dir (a statement failed?)" >&2; exit 1; }
	for ((s = 4 * warm + 1; s <= last; s++)); do
		local f="$dir/cg.$((s + 2))" op=$(((s - 1) % 4))
		((s < last)) || f=$dir/cg
		[[ -f $f ]] || { echo "missing $f" >&2; exit 1; }
		echo "$op $(awk '/^(summary|totals):/ { print $2; exit }' "$f")" \
			"$(callgrind_annotate --inclusive=yes --threshold=100 "$f" 2>/dev/null |
				awk -v f="${fns[op]}" '!found && $0 ~ (":" f "( |$)") { gsub(/,/, "", $1); v = $1; found = 1 }
					END { print found ? v : 0 }')"
	done
}

declare -A st fn
for v in 0.3.0 0.4.0; do
	count "a2_qi_${v//./}" >"$work/counts.$v"
	while read -r op s f; do
		st[$v,$op]=$((${st[$v,$op]:-0} + s))
		fn[$v,$op]=$((${fn[$v,$op]:-0} + f))
	done <"$work/counts.$v"
done
bash "$root/scripts/cluster.sh" start >/dev/null
for v in 0.3.0 0.4.0; do psql -X -q -d postgres -c "DROP DATABASE a2_qi_${v//./} WITH (FORCE)"; done

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b ? a / b : 0) }'; }
printf '%-14s %-9s %10s %10s %7s\n' call counted "0.3.0" "0.4.0" ratio
for i in "${!fns[@]}"; do
	for kind in statement function; do
		if [[ $kind == statement ]]; then a=${st[0.3.0,$i]} b=${st[0.4.0,$i]}; else a=${fn[0.3.0,$i]} b=${fn[0.4.0,$i]}; fi
		printf '%-14s %-9s %10d %10d %7s\n' "${fns[i]}" "$kind" $((a / n)) $((b / n)) "$(ratio "$b" "$a")"
	done
done
