#!/usr/bin/env bash
#
# bench/notifier_cpu.sh -- what the background notifier costs W1 (issue
# 30): W1 (bench/w1_append.sql, one append per transaction, one client)
# with a2.notify on and off, alternated, and the CPU time the notifier
# process used during each run (utime + stime from /proc, in clock ticks),
# per transaction.  The cluster must preload a2 (A2_PRELOAD=1 for
# scripts/cluster.sh), or there is no notifier to watch.
#
# Settings (environment; defaults in brackets):
#   A2_NC_SECONDS   length of each run [10]
#   A2_NC_REPEAT    rounds of (on, off) [3]
#   A2_PGDATA, A2_PGPORT  the cluster, as for bench/run.sh
set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
SECS=${A2_NC_SECONDS:-10}
REPEAT=${A2_NC_REPEAT:-3}
DB=a2notcpu
HZ=$(getconf CLK_TCK)

bench_cluster_start
"$PSQL" -X -q -d postgres -c "DROP DATABASE IF EXISTS $DB WITH (FORCE)" -c "CREATE DATABASE $DB"
bench_psql "$DB" -c "CREATE EXTENSION a2"
pid=$("$PSQL" -X -A -t -d postgres -c \
	"SELECT pid FROM pg_catalog.pg_stat_activity WHERE backend_type = 'a2 notifier'" | head -n 1)
[[ -n $pid ]] || bench_die "no a2 notifier is running (is a2 in shared_preload_libraries?)"
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

bench_machine
echo
echo "| a2.notify | transactions | TPS | notifier CPU ms | notifier µs per transaction |"
echo "|---|---|---|---|---|"
for ((r = 1; r <= REPEAT; r++)); do
	for notify in on off; do
		t0=$(ticks "$pid")
		out=$(PGOPTIONS="-c a2.notify=$notify" "$PGBENCH" -n -c 1 -T "$SECS" \
			-D prefix="'nc-r$r-$notify-'" -f "$BENCH_DIR/w1_append.sql" "$DB" 2>&1)
		t1=$(ticks "$pid")
		tx=$(sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' <<<"$out")
		tps=$(sed -n 's/^tps = \([0-9.]*\).*/\1/p' <<<"$out" | head -n 1)
		[[ -n $tx && $tx -gt 0 ]] || bench_die "pgbench failed: $out"
		awk -v n="$notify" -v tx="$tx" -v tps="$tps" -v dt="$((t1 - t0))" -v hz="$HZ" 'BEGIN {
			printf "| %s | %d | %.0f | %.0f | %.1f |\n", n, tx, tps, dt * 1000 / hz, dt * 1e6 / hz / tx }'
	done
done
