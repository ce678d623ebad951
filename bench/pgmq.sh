#!/usr/bin/env bash
#
# bench/pgmq.sh -- W4n, a2's work cycle with nothing returned (append,
# a2_claim, a2_complete), against P4, pgmq's cycle of the same work (send,
# read, archive), each client on a session / queue of its own, in one
# database with both extensions.  Issue 30's "W4n / pgmq".  See
# bench/README.md, "pgmq".
#
# Settings (environment; defaults in brackets):
#   A2_PGMQ_SRC          pgmq's pgmq-extension directory, from a copy
#                        fetched by hand (required; bench/lib.sh)
#   A2_BENCH_SECONDS     duration of each pgbench run [10]
#   A2_BENCH_REPEAT      runs per point; medians are reported [3]
#   A2_BENCH_CLIENTS     client counts [1 4]
#   A2_BENCH_OUT         output directory [$(dirname A2_PGDATA)/results-pgmq/<timestamp>]
#   A2_PGDATA, A2_PGPORT the cluster, as for bench/run.sh
#
# Every run starts on new sessions and new queues; the two members of a
# pair run back to back, in alternating order.  With pg_stat_statements
# preloaded each run also gives its buffers per cycle (all of the run's
# statements, nested ones included, over pgbench's transactions).

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-10}
REPEAT=${A2_BENCH_REPEAT:-3}
CLIENTS=${A2_BENCH_CLIENTS:-1 4}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-pgmq/$(date +%Y%m%d-%H%M%S)}
DB=a2pgmq

bench_cluster_start
mkdir -p "$OUT/pgbench"
: >"$OUT/runs.tsv"
bench_machine >"$OUT/machine.md"
bench_pgmq_install

pgss_on=false
[[ $("$PSQL" -X -A -t -c 'SHOW shared_preload_libraries') != *pg_stat_statements* ]] || pgss_on=true

"$PGBIN/dropdb" --if-exists "$DB"
"$PGBIN/createdb" "$DB"
bench_psql "$DB" -c 'CREATE EXTENSION a2' -c 'CREATE EXTENSION pgmq'
! $pgss_on || bench_psql "$DB" -c 'CREATE EXTENSION pg_stat_statements'
printf -- '- pgmq: %s\n' "$("$PSQL" -X -A -t -d "$DB" -c "SELECT extversion FROM pg_extension WHERE extname = 'pgmq'")" >>"$OUT/machine.md"

# The statements' buffers since the last reset, over n cycles.
buffers_per_cycle() {
	$pgss_on || { echo -; return; }
	"$PSQL" -X -A -t -d "$DB" -c "SELECT round(coalesce(sum(shared_blks_hit + shared_blks_read), 0) / $1::numeric, 1)
	  FROM pg_stat_statements
	 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
	   AND toplevel AND query NOT LIKE '%pg_stat%'"
}

# One pgbench run: key clients script prefix
run_one() {
	local key=$1 c=$2 script=$3 prefix=$4 j=$(($2 < NPROC ? $2 : NPROC)) out tps n
	out=$OUT/pgbench/${key}_c${c}_r${rep}.out
	bench_psql "$DB" -c CHECKPOINT
	! $pgss_on || bench_psql "$DB" -c 'SELECT pg_stat_statements_reset()' >/dev/null
	bench_log "run $rep/$REPEAT: $key, $c client(s), ${SECS}s"
	"$PGBENCH" -n -M prepared -r -f "$BENCH_DIR/$script" -T "$SECS" -c "$c" -j "$j" \
		-D prefix="$prefix" "$DB" >"$out" 2>&1 ||
		{ cat "$out" >&2; bench_die "pgbench failed: $key"; }
	grep -q '^number of failed transactions: 0 ' "$out" ||
		{ cat "$out" >&2; bench_die "failed transactions: $key"; }
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")
	n=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$out")
	printf '%s\t%s\t%s\t%s\n' "$key" "$c" "$rep" "$tps" >>"$OUT/runs.tsv"
	printf '%s\t%s\t%s\t%s\n' "${key}_buffers" "$c" "$rep" "$(buffers_per_cycle "$n")" >>"$OUT/runs.tsv"
}

# P4's queues of this run: <prefix>0 .. <prefix>(c-1), made before the clock starts
pgmq_run() {
	local c=$1 prefix=p${rep}c${1}_
	bench_psql "$DB" -c "SELECT pgmq.create('$prefix' || i) FROM generate_series(0, $c - 1) i" >/dev/null
	run_one P4 "$c" pgmq_cycle.sql "$prefix"
}

for ((rep = 1; rep <= REPEAT; rep++)); do
	for c in $CLIENTS; do
		if ((rep % 2)); then
			run_one W4n "$c" w4n_cycle.sql "w4n-r$rep-c$c-"
			pgmq_run "$c"
		else
			pgmq_run "$c"
			run_one W4n "$c" w4n_cycle.sql "w4n-r$rep-c$c-"
		fi
	done
done

# Medians per (key, clients), then the table.
bench_medians "$OUT/runs.tsv" >"$OUT/medians.tsv"
med() { bench_med "$OUT/medians.tsv" "$1" "$2"; }
ratio() { bench_ratio "$1" "$2"; }

{
	printf '# W4n against pgmq (%s s per run, %s repeats, medians)\n\n' "$SECS" "$REPEAT"
	cat "$OUT/machine.md"
	echo
	echo '| clients | W4n TPS | P4 (pgmq) TPS | W4n/P4 | W4n buffers/cycle | P4 buffers/cycle | ratio |'
	echo '|---|---|---|---|---|---|---|'
	for c in $CLIENTS; do
		w=$(med W4n "$c") p=$(med P4 "$c") wb=$(med W4n_buffers "$c") pb=$(med P4_buffers "$c")
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$c" "$w" "$p" "$(ratio "$w" "$p")" \
			"$wb" "$pb" "$(ratio "$wb" "$pb")"
	done
	echo
	echo 'All runs (per repeat):'
	echo
	echo '```'
	cat "$OUT/medians.tsv"
	echo '```'
} | tee "$OUT/table.md"
