#!/usr/bin/env bash
#
# bench/notify.sh -- what announcements cost the commit path, three ways,
# in one run:
#
#   notifier        a2 preloaded: the background notifier sends NOTIFY
#   in-transaction  a2 not preloaded: the appending transaction sends it (0.1)
#   off             a2 preloaded, a2.notify = off (nothing is announced)
#
# For each mode: W1 (a2_append of one event, each client on its own
# session) and B1 (the plain single-row INSERT of bench/b1_insert.sql) at
# 1, 4 and 8 clients, and W4 (append, claim, complete) at 4 clients, with
# pgbench -M prepared; W1/B1 is computed from runs on the same server
# instance.  The modes are interleaved, in alternating order, A2_BENCH_REPEAT
# times, and medians are reported.  Then the latency from commit to a
# listener (bench/notify_latency.py) at 1 and 4 writers, notifier and
# in-transaction.
#
# Settings (environment; defaults in brackets):
#   A2_BENCH_SECONDS  duration of each pgbench run [10]
#   A2_BENCH_REPEAT   rounds [3]
#   A2_BENCH_CLIENTS  client counts for W1/B1 [1 4 8]
#   A2_PGDATA, A2_PGPORT  the cluster [/tmp/a2-bench/data, 54349]

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-10}
REPEAT=${A2_BENCH_REPEAT:-3}
CLIENTS=${A2_BENCH_CLIENTS:-1 4 8}
DB=a2notify
OUT=$(dirname "$A2_PGDATA")/results/notify-$(date +%Y%m%d-%H%M%S)
raw=$OUT/raw.tsv

start_mode() { # start_mode MODE: the server that mode needs
	case $1 in
	in-transaction) A2_PRELOAD=0 bash "$CLUSTER_SH" start >/dev/null ;;
	*) A2_PRELOAD=1 bash "$CLUSTER_SH" start >/dev/null ;;
	esac
}

pgb() { # pgb MODE CLIENTS SCRIPT PREFIX -> tps
	local mode=$1 c=$2 script=$3 prefix=$4 opts=
	[[ $mode == off ]] && opts='-c a2.notify=off'
	PGOPTIONS=$opts "$PGBENCH" -n -M prepared -T "$SECS" -c "$c" -j "$c" \
		-D prefix="$prefix" -f "$BENCH_DIR/$script" "$DB" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\) (without initial connection time)/\1/p'
}

bench_cluster_start
mkdir -p "$OUT"
: >"$raw"
bench_log "notify bench: ${SECS}s runs, $REPEAT round(s), clients $CLIENTS"
start_mode notifier
"$PGBIN/dropdb" --if-exists "$DB"
"$PGBIN/createdb" "$DB"
bench_psql "$DB" -c 'CREATE EXTENSION a2' -f "$BENCH_DIR/setup/schema.sql"
{
	echo "## machine"
	bench_machine
} >"$OUT/machine.md"

modes=(notifier off in-transaction)
for ((r = 1; r <= REPEAT; r++)); do
	order=("${modes[@]}")
	if ((r % 2 == 0)); then
		order=(in-transaction off notifier)
	fi
	for mode in "${order[@]}"; do
		start_mode "$mode"
		for c in $CLIENTS; do
			w1=$(pgb "$mode" "$c" w1_append.sql "w1-$mode-$r-$c-")
			b1=$(pgb "$mode" "$c" b1_insert.sql "b1-$mode-$r-$c-")
			printf '%s\tW1\t%s\t%s\t%s\n%s\tB1\t%s\t%s\t%s\n' "$mode" "$c" "$w1" "$r" "$mode" "$c" "$b1" "$r" >>"$raw"
			bench_log "round $r $mode c=$c: W1 $w1 tps, B1 $b1 tps"
		done
		w4=$(pgb "$mode" 4 w4_cycle.sql "w4-$mode-$r-")
		printf '%s\tW4\t4\t%s\t%s\n' "$mode" "$w4" "$r" >>"$raw"
		bench_log "round $r $mode c=4: W4 $w4 tps"
		# Empty the tables between modes, but never ANALYZE them empty: a2's
		# statements keep generic plans, and plans made from the statistics
		# of an empty a2_events scan it (until autovacuum's next analyze
		# replaces them), which measures that, not the mode.
		bench_psql "$DB" -c 'TRUNCATE a2_events, bench_events'
	done
done

lat=$OUT/latency.txt
: >"$lat"
for mode in notifier in-transaction; do
	start_mode "$mode"
	for w in 1 4; do
		printf '%s\t' "$mode" >>"$lat"
		/usr/bin/python3 "$BENCH_DIR/notify_latency.py" "$DB" "$w" "$SECS" >>"$lat"
	done
done
start_mode notifier

median() { sort -n | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR % 2) print a[(NR+1)/2]; else printf "%.1f\n", (a[NR/2]+a[NR/2+1])/2}'; }
med() { awk -F'\t' -v m="$1" -v w="$2" -v c="$3" '$1==m && $2==w && $3==c {print $4}' "$raw" | median; }
# the median over rounds of W1/B1, each pair measured back to back
med_ratio() {
	awk -F'\t' -v m="$1" -v c="$2" '$1==m && $3==c && $2=="W1" {w[$5]=$4} $1==m && $3==c && $2=="B1" {b[$5]=$4}
		END {for (r in w) if (b[r] > 0) printf "%.3f\n", w[r] / b[r]}' "$raw" | median
}

{
	echo "a2 notify bench: medians of $REPEAT round(s) of ${SECS}s runs, pgbench -M prepared, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	echo "(tps: medians; W1/B1: the median of the rounds' ratios, each pair run back to back)"
	echo
	echo "| workload | clients | notifier tps | in-transaction tps | off tps | W1/B1 notifier | W1/B1 in-transaction | W1/B1 off |"
	echo "|---|---|---|---|---|---|---|---|"
	for c in $CLIENTS; do
		row="| W1 append | $c"
		ratios=""
		for mode in notifier in-transaction off; do
			w=$(med "$mode" W1 "$c")
			b=$(med "$mode" B1 "$c")
			row="$row | $w"
			ratios="$ratios | $(med_ratio "$mode" "$c")"
		done
		echo "$row$ratios |"
	done
	for c in $CLIENTS; do
		echo "| B1 insert | $c | $(med notifier B1 "$c") | $(med in-transaction B1 "$c") | $(med off B1 "$c") | | | |"
	done
	echo "| W4 cycle | 4 | $(med notifier W4 4) | $(med in-transaction W4 4) | $(med off W4 4) | | | |"
	echo
	echo "Latency from commit to delivery (bench/notify_latency.py, ${SECS}s):"
	echo
	echo '```'
	cat "$lat"
	echo '```'
} | tee "$OUT/table.md"
bench_log "raw results in $OUT"
