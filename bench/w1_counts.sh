#!/usr/bin/env bash
#
# bench/w1_counts.sh -- what one W1 transaction does beside one B1
# transaction, counted rather than timed (issue 30): WAL bytes per
# transaction (from the WAL insert position), and per call the WAL
# records, full-page images, shared buffers hit and dirtied and execution
# time that pg_stat_statements records for a2_append and for B1's INSERT.
# W1 and B1 run alternated, A2_WC_TXNS transactions each, at each client
# count, after a CHECKPOINT (so full-page images start from the same
# point).  Needs pg_stat_statements preloaded (scripts/cluster.sh's
# A2_PRELOAD does it).
#
# Settings (environment; defaults in brackets):
#   A2_WC_TXNS      transactions per run, over all clients [10000]
#   A2_WC_CLIENTS   client counts ["1 4"]
#   A2_WC_REPEAT    rounds [2]
#   A2_WC_PERF=1    also count, with `perf stat -a` around each run, what
#                   the whole machine did per transaction: system calls
#                   (every process's: backends, pgbench, WAL writer, a2's
#                   notifier), context switches and CPU milliseconds
#                   (task-clock).  Needs perf and its tracepoints.
#   A2_PGDATA, A2_PGPORT  the cluster, as for bench/run.sh
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TXNS=${A2_WC_TXNS:-10000}
CLIENTS=${A2_WC_CLIENTS:-1 4}
REPEAT=${A2_WC_REPEAT:-2}
DB=a2w1counts

bench_cluster_start
bench_create_db "$DB"
bench_psql "$DB" -c "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"

PERF=${A2_WC_PERF:-0}
perf_out=$(dirname "$A2_PGDATA")/w1-counts-perf.csv

# perf stat's count of one event (-x, output: value,unit,event,...)
perf_count() {
	awk -F, -v e="$1" '$3 == e || index($3, e) == 1 { print $1; exit }' "$perf_out"
}

one() {
	local name=$1 script=$2 clients=$3 round=$4 lsn0 lsn1 out tps kernel=""
	local run=("$PGBENCH" -n -M prepared -c "$clients" -t $((TXNS / clients))
		-D prefix="'wc-$name-$clients-$round-'" -f "$BENCH_DIR/$script" "$DB")
	bench_psql "$DB" -c "SELECT pg_stat_statements_reset()" -c "CHECKPOINT" >/dev/null
	lsn0=$("$PSQL" -X -A -t -d "$DB" -c "SELECT pg_current_wal_insert_lsn()")
	if [ "$PERF" = 1 ]; then
		out=$(perf stat -a -x, -o "$perf_out" \
			-e raw_syscalls:sys_enter,context-switches,task-clock -- "${run[@]}" 2>&1)
		kernel=$(awk -v s="$(perf_count raw_syscalls:sys_enter)" \
			-v c="$(perf_count context-switches)" -v t="$(perf_count task-clock)" -v n="$TXNS" \
			'BEGIN { printf " %.1f | %.2f | %.4f |", s / n, c / n, t / n }')
	else
		out=$("${run[@]}" 2>&1)
	fi
	lsn1=$("$PSQL" -X -A -t -d "$DB" -c "SELECT pg_current_wal_insert_lsn()")
	tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
	"$PSQL" -X -A -t -F ' | ' -d "$DB" -c "
		SELECT '$name', $clients, $round,
			   round(pg_wal_lsn_diff('$lsn1', '$lsn0') / $TXNS::numeric, 1),
			   round(wal_records / calls::numeric, 2), round(wal_fpi / calls::numeric, 3),
			   round(shared_blks_hit / calls::numeric, 2),
			   round(shared_blks_dirtied / calls::numeric, 3),
			   round((total_exec_time / calls)::numeric, 4), round($tps)
		  FROM pg_stat_statements
		 WHERE calls >= $TXNS / 2 AND query NOT LIKE '%pg_stat_statements%'
		 ORDER BY calls DESC LIMIT 1" | sed "s/^/| /; s/\$/ |$kernel/"
}

bench_machine
echo
if [ "$PERF" = 1 ]; then
	echo "| workload | clients | round | WAL B/tx | WAL records/call | FPI/call | buffers hit/call | dirtied/call | exec ms/call | TPS | syscalls/tx | context switches/tx | CPU ms/tx |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
else
	echo "| workload | clients | round | WAL B/tx | WAL records/call | FPI/call | buffers hit/call | dirtied/call | exec ms/call | TPS |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
fi
for ((r = 1; r <= REPEAT; r++)); do
	for c in $CLIENTS; do
		one W1 w1_append.sql "$c" "$r"
		one B1 b1_insert.sql "$c" "$r"
	done
done
