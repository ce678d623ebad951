#!/usr/bin/env bash
#
# bench/run.sh -- the a2 benchmark suite in one command.
#
# Starts (or reuses) a throwaway cluster through scripts/cluster.sh, creates
# the benchmark databases, runs every workload with pgbench (custom scripts,
# -M prepared, fixed duration, 1 and 4 clients), repeats each run and prints
# one table of medians: TPS, mean and p99 latency, and the ratios against
# the plain-SQL baselines measured in the same run.  See bench/README.md.
#
# Settings (environment; defaults in brackets):
#   A2_BENCH_SECONDS   duration of each pgbench run [10]
#   A2_BENCH_REPEAT    runs per (workload, clients); medians are reported [3]
#   A2_BENCH_CLIENTS   client counts [1 4]
#   A2_BENCH_BIG       events in each W5 large session (W6 reads one) [1000000]
#   A2_BENCH_W6_EVENTS events in the W6 medium sessions [10000]
#   A2_BENCH_W8_SESSIONS  sessions in the W8 large database [100000]
#   A2_BENCH_W8_SMALL     sessions in the W8 small database [100]
#   A2_BENCH_ONLY      workload groups to run, e.g. "W1 W4" [all: W1 W2 W3 W4 W5 W6 W7 W8]
#                      (W1 includes B1, W4 includes B2 and B3)
#   A2_BENCH_DB        name of the main database [a2bench]; W6 also uses
#                      <name>_w6, W8 <name>_w8big and <name>_w8small.  All
#                      are recreated.
#   A2_BENCH_OUT       directory for per-run pgbench output and the table
#                      [$(dirname A2_PGDATA)/results/<timestamp>]
#   A2_BENCH_KEEP_LOGS=1  keep the per-transaction logs (large)
#   A2_BENCH_VACUUM    VACUUM (INDEX_CLEANUP ON) a2_events after the untimed resets [1]
#   A2_PGDATA, A2_PGPORT  the cluster [/tmp/a2-bench/data, 54349]
#   A2_BENCH_KEEP=1    leave the cluster running at the end
#
# Quick smoke run:  A2_BENCH_SECONDS=2 A2_BENCH_REPEAT=1 A2_BENCH_BIG=100000 \
#                   A2_BENCH_W8_SESSIONS=10000 bench/run.sh

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-10}
REPEAT=${A2_BENCH_REPEAT:-3}
CLIENTS=${A2_BENCH_CLIENTS:-1 4}
BIG=${A2_BENCH_BIG:-1000000}
W6_EVENTS=${A2_BENCH_W6_EVENTS:-10000}
W8_SESSIONS=${A2_BENCH_W8_SESSIONS:-100000}
W8_SMALL=${A2_BENCH_W8_SMALL:-100}
W8_EVENTS=10
ONLY=${A2_BENCH_ONLY:-W1 W2 W3 W4 W5 W6 W7 W8}
DB=${A2_BENCH_DB:-a2bench}
DB_W6=${DB}_w6
DB_W8BIG=${DB}_w8big
DB_W8SMALL=${DB}_w8small
VACUUM=${A2_BENCH_VACUUM:-1}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results/$(date +%Y%m%d-%H%M%S)}

is_uint() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }
is_uint "$SECS" || bench_die "A2_BENCH_SECONDS must be a positive integer"
is_uint "$REPEAT" || bench_die "A2_BENCH_REPEAT must be a positive integer"
if ! is_uint "$W8_SESSIONS" || ! is_uint "$W8_SMALL"; then
	bench_die "A2_BENCH_W8_SESSIONS and A2_BENCH_W8_SMALL must be positive integers"
fi
if ! is_uint "$W6_EVENTS" || ((W6_EVENTS <= 100)); then
	bench_die "A2_BENCH_W6_EVENTS must be an integer > 100"
fi
if ! is_uint "$BIG" || ((BIG <= 100)); then
	bench_die "A2_BENCH_BIG must be an integer > 100"
fi
MAXC=0
for c in $CLIENTS; do
	is_uint "$c" || bench_die "A2_BENCH_CLIENTS must list positive integers"
	((c > MAXC)) && MAXC=$c
done
for g in $ONLY; do
	case $g in
	W[1-8]) ;;
	*) bench_die "A2_BENCH_ONLY: unknown group '$g' (use W1 .. W8)" ;;
	esac
done
want() { [[ " $ONLY " == *" $1 "* ]]; }

# Human-readable sizes for labels: 1000000 -> 1M, 10000 -> 10k.
human() {
	local n=$1
	if ((n % 1000000 == 0)); then echo "$((n / 1000000))M"
	elif ((n % 1000 == 0)); then echo "$((n / 1000))k"
	else echo "$n"; fi
}
HBIG=$(human "$BIG")
HW6=$(human "$W6_EVENTS")
HW8=$(human "$W8_SESSIONS")
HW8S=$(human "$W8_SMALL")

mkdir -p "$OUT/pgbench" "$OUT/logs"
: >"$OUT/runs.tsv"
: >"$OUT/keys.tsv"
: >"$OUT/ratios.tsv"

# ---------------------------------------------------------------- registry
# key <TAB> label <TAB> events appended per pgbench transaction (0: n/a)
key() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$OUT/keys.tsv"; }
# name <TAB> numerator key <TAB> denominator key <TAB> numerator factor
# <TAB> denominator factor <TAB> op (>= or <=, - for none) <TAB> target
ratio() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >>"$OUT/ratios.tsv"; }

if want W1; then
	key W1_on "W1 append 1 event, own session (sync commit on)" 1
	key B1_on "B1 plain INSERT, bench_events (sync commit on)" 1
	key W1_off "W1 append 1 event, own session (sync commit off)" 1
	key B1_off "B1 plain INSERT, bench_events (sync commit off)" 1
	key W1q_on "W1 with a2.notify=off (sync commit on)" 1
	key W1q_off "W1 with a2.notify=off (sync commit off)" 1
fi
want W2 && key W2 "W2 append 1 event, one shared session" 1
want W3 && key W3 "W3 append batch of 10 events, own session" 10
if want W4; then
	key W4 "W4 cycle append+claim+complete (3 tx)" 0
	key B2 "B2 plain SQL cycle, bench_events (3 tx)" 0
	key B3 "B3 TypeScript-backend statements cycle (16 round trips, 3 tx)" 0
fi
if want W5; then
	key W5_app_fresh "W5 append 1 event, fresh session" 1
	key W5_app_big "W5 append 1 event, $HBIG-event session" 1
	key W5_cyc_fresh "W5 cycle (as W4), fresh session" 0
	key W5_cyc_big "W5 cycle (as W4), $HBIG-event session" 0
	key W5_clm_fresh "W5 claim, 1 eligible event, fresh session" 0
	key W5_clm_big "W5 claim, 1 eligible event in a $HBIG-event session" 0
fi
if want W6; then
	key W6_snap "W6 read_state, snapshot + 100-event tail, $HW6-event session" 0
	key W6_full "W6 read_state, full log, $HW6-event session" 0
	key W6_snap_big "W6 read_state, snapshot + 100-event tail, $HBIG-event session" 0
	key W6_snap_alone "W6 read_state, snapshot + 100-event tail, $HW6-event session alone in its database" 0
fi
want W7 && key W7 "W7 cycle with put_snapshots (pin) + complete (4 tx)" 0
if want W8; then
	key W8_app_small "W8 append 1 event, random session of $HW8S" 1
	key W8_app_big "W8 append 1 event, random session of $HW8" 1
	key W8_clm_small "W8 claim, random session of $HW8S" 0
	key W8_clm_big "W8 claim, random session of $HW8" 0
fi

if want W1; then
	ratio "W1/B1 TPS, synchronous_commit=on" W1_on B1_on 1 1 ">=" 0.8
	ratio "W1/B1 TPS, synchronous_commit=off" W1_off B1_off 1 1 ">=" 0.8
	ratio "W1/B1 TPS, a2.notify=off, synchronous_commit=on" W1q_on B1_on 1 1 - -
	ratio "W1/B1 TPS, a2.notify=off, synchronous_commit=off" W1q_off B1_off 1 1 - -
fi
want W1 && want W3 && ratio "W3 per-event / W1 per-event throughput" W3 W1_on 10 1 ">=" 3
if want W4; then
	ratio "W4/B2 cycles per second" W4 B2 1 1 ">=" 0.75
	ratio "W4/B3 cycles per second" W4 B3 1 1 ">=" 4
fi
if want W5; then
	ratio "W5 append: fresh/$HBIG TPS" W5_app_fresh W5_app_big 1 1 "<=" 1.2
	ratio "W5 cycle: fresh/$HBIG TPS" W5_cyc_fresh W5_cyc_big 1 1 "<=" 1.2
	ratio "W5 claim: fresh/$HBIG TPS" W5_clm_fresh W5_clm_big 1 1 "<=" 1.2
fi
if want W6; then
	ratio "W6 snapshot+tail / full $HW6 log TPS" W6_snap W6_full 1 1 - -
	ratio "W6 snapshot read: $HW6/$HBIG-event session TPS" W6_snap W6_snap_big 1 1 "<=" 1.2
	ratio "W6 snapshot read: $HW6 session alone/in the main database TPS" W6_snap_alone W6_snap 1 1 "<=" 1.2
fi
if want W8; then
	ratio "W8 append: $HW8S/$HW8 sessions TPS" W8_app_small W8_app_big 1 1 "<=" 1.2
	ratio "W8 claim: $HW8S/$HW8 sessions TPS" W8_clm_small W8_clm_big 1 1 "<=" 1.2
fi

# ---------------------------------------------------------------- running
rep=0

# run_one KEY CLIENTS DB SCRIPT PGOPTIONS [VAR=VALUE ...]
run_one() {
	local key=$1 c=$2 db=$3 script=$4 opts=$5
	shift 5
	local j=$((c < NPROC ? c : NPROC))
	local tag=${key}_c${c}_r${rep}
	local out=$OUT/pgbench/$tag.out
	local defs=() kv stats tps
	for kv in "$@"; do defs+=(-D "$kv"); done
	bench_log "run $rep/$REPEAT: $key, $c client(s), ${SECS}s"
	rm -f -- "$OUT/logs/$tag".*
	if ! PGOPTIONS=$opts "$PGBENCH" -n -M prepared -f "$BENCH_DIR/$script" \
		-T "$SECS" -c "$c" -j "$j" -r -l --log-prefix="$OUT/logs/$tag" \
		"${defs[@]}" "$db" >"$out" 2>&1; then
		cat "$out" >&2
		bench_die "pgbench failed for $key with $c client(s) (output: $out)"
	fi
	if ! grep -q '^number of failed transactions: 0 ' "$out"; then
		cat "$out" >&2
		bench_die "pgbench reported failed transactions for $key (output: $out)"
	fi
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")
	[[ -n $tps ]] || bench_die "no tps line in $out"
	# Per-transaction log: client, transaction no, latency (us), script,
	# epoch, us.  Mean and p99 of the latencies, in ms.
	stats=$(cat "$OUT/logs/$tag".* | awk '{print $3}' | sort -n |
		awk '{ v[NR] = $1; s += $1 }
			END {
				if (NR == 0) { print "nan nan 0"; exit }
				k = int(0.99 * NR); if (k < 0.99 * NR) k++; if (k < 1) k = 1
				printf "%.3f %.3f %d\n", s / NR / 1000, v[k] / 1000, NR
			}')
	[[ ${A2_BENCH_KEEP_LOGS:-0} == 1 ]] || rm -f -- "$OUT/logs/$tag".*
	printf '%s\t%s\t%s\t%s\t%s\n' "$key" "$c" "$rep" "$tps" "${stats// /$'\t'}" >>"$OUT/runs.tsv"
}

# Run the argument commands in order on odd repeats and in reverse order on
# even ones, so that drift during a run does not favour one side of a ratio.
alternate() {
	local i
	if ((rep % 2 == 1)); then
		for ((i = 1; i <= $#; i++)); do eval "${!i}"; done
	else
		for ((i = $#; i >= 1; i--)); do eval "${!i}"; done
	fi
}

sql() {
	local db=$1
	shift
	bench_psql "$db" -A -t -c "$*" >/dev/null
}

# INDEX_CLEANUP ON: with few dead rows in a large table VACUUM would skip
# the indexes (PostgreSQL's bypass optimization), and the dead entries left
# in the long-lived sessions' key ranges would slow the next run down.
vacuum_events() {
	[[ $VACUUM == 1 ]] || return 0
	sql "$1" "VACUUM (INDEX_CLEANUP ON) a2_events"
}

# Settle whatever the W5 runs left unprocessed in the large sessions.
settle_big() {
	sql "$DB" "SELECT bench_settle(bench_sessions('w5big-', $MAXC))"
	vacuum_events "$DB"
}

# W5 claim: exactly one eligible event in each large session of the first
# $1 clients, and $1 fresh sessions holding one eligible event each.
prepare_claim() {
	local c=$1 fresh=$2
	sql "$DB" "SELECT bench_settle(bench_sessions('w5big-', $MAXC))"
	vacuum_events "$DB"
	sql "$DB" "SELECT a2_append(s, '[{\"type\": \"job\"}]')
		FROM unnest(bench_sessions('w5big-', $c) || bench_sessions('$fresh', $c)) s"
}

bench_cluster_start
mkdir -p "$OUT"
{
	echo "Machine:"
	bench_machine
} | tee "$OUT/machine.md" >&2

# ---------------------------------------------------------------- setup
bench_log "setup: database $DB"
bench_create_db "$DB"
if want W5 || want W6; then
	bench_log "setup: W5 prefill ($MAXC x $BIG events)"
	bench_psql "$DB" -v big="$BIG" -v clients="$MAXC" -f "$BENCH_DIR/setup/big.sql"
fi
if want W6; then
	bench_log "setup: W6 prefill (2 x $W6_EVENTS events) in $DB and alone in $DB_W6"
	bench_psql "$DB" -v w6events="$W6_EVENTS" -f "$BENCH_DIR/setup/w6.sql"
	bench_create_db "$DB_W6"
	bench_psql "$DB_W6" -v w6events="$W6_EVENTS" -f "$BENCH_DIR/setup/w6.sql"
	bench_psql "$DB_W6" -c 'VACUUM ANALYZE'
fi
bench_psql "$DB" -c 'VACUUM ANALYZE'
if want W8; then
	for pair in "$DB_W8BIG:$W8_SESSIONS" "$DB_W8SMALL:$W8_SMALL"; do
		bench_log "setup: database ${pair%%:*}, ${pair#*:} sessions x $W8_EVENTS events"
		bench_create_db "${pair%%:*}"
		bench_psql "${pair%%:*}" -v sessions="${pair#*:}" -v events="$W8_EVENTS" \
			-f "$BENCH_DIR/setup/w8.sql"
		bench_psql "${pair%%:*}" -c 'VACUUM ANALYZE'
	done
fi
sql postgres "CHECKPOINT"

# ---------------------------------------------------------------- workloads
SYNC_OFF='-c synchronous_commit=off'
QUIET='-c a2.notify=off'
for ((rep = 1; rep <= REPEAT; rep++)); do
	# Fresh statistics at the start of every repeat, so that plan choices do
	# not depend on when autovacuum last analyzed the tables.
	sql "$DB" "ANALYZE"
	for c in $CLIENTS; do
		if want W1; then
			alternate "run_one W1_on $c $DB w1_append.sql '' prefix=w1on-r$rep-c$c-" \
				"run_one B1_on $c $DB b1_insert.sql '' prefix=b1on-r$rep-c$c-"
			alternate "run_one W1_off $c $DB w1_append.sql '$SYNC_OFF' prefix=w1off-r$rep-c$c-" \
				"run_one B1_off $c $DB b1_insert.sql '$SYNC_OFF' prefix=b1off-r$rep-c$c-"
			alternate "run_one W1q_on $c $DB w1_append.sql '$QUIET' prefix=w1qon-r$rep-c$c-" \
				"run_one W1q_off $c $DB w1_append.sql '$QUIET $SYNC_OFF' prefix=w1qoff-r$rep-c$c-"
		fi
		want W2 && run_one W2 "$c" "$DB" w2_append_shared.sql '' "prefix=w2-r$rep-c$c"
		want W3 && run_one W3 "$c" "$DB" w3_append_batch10.sql '' "prefix=w3-r$rep-c$c-"
		if want W4; then
			alternate "run_one W4 $c $DB w4_cycle.sql '' prefix=w4-r$rep-c$c-" \
				"run_one B2 $c $DB b2_cycle.sql '' prefix=b2-r$rep-c$c-" \
				"run_one B3 $c $DB b3_cycle.sql '' prefix=b3-r$rep-c$c-"
		fi
		if want W5; then
			settle_big
			alternate "run_one W5_app_fresh $c $DB w1_append.sql '' prefix=w5fa-r$rep-c$c-" \
				"run_one W5_app_big $c $DB w1_append.sql '' prefix=w5big-"
			settle_big
			alternate "run_one W5_cyc_fresh $c $DB w4_cycle.sql '' prefix=w5fy-r$rep-c$c-" \
				"run_one W5_cyc_big $c $DB w4_cycle.sql '' prefix=w5big-"
			prepare_claim "$c" "w5fc-r$rep-c$c-"
			alternate "run_one W5_clm_fresh $c $DB w5_claim.sql '' prefix=w5fc-r$rep-c$c-" \
				"run_one W5_clm_big $c $DB w5_claim.sql '' prefix=w5big-"
		fi
		if want W6; then
			alternate "run_one W6_snap $c $DB w6_read_state.sql '' session=w6-snap1 through=$W6_EVENTS" \
				"run_one W6_full $c $DB w6_read_state.sql '' session=w6-full1 through=$W6_EVENTS" \
				"run_one W6_snap_big $c $DB w6_read_state.sql '' session=w5big-0 through=$BIG" \
				"run_one W6_snap_alone $c $DB_W6 w6_read_state.sql '' session=w6-snap1 through=$W6_EVENTS"
		fi
		want W7 && run_one W7 "$c" "$DB" w7_snapshot_cycle.sql '' "prefix=w7-r$rep-c$c-"
		if want W8; then
			alternate "run_one W8_app_small $c $DB_W8SMALL w8_append.sql '' prefix=w8- nsess=$W8_SMALL" \
				"run_one W8_app_big $c $DB_W8BIG w8_append.sql '' prefix=w8- nsess=$W8_SESSIONS"
			for d in "$DB_W8SMALL" "$DB_W8BIG"; do
				sql "$d" "SELECT bench_settle_all($W8_EVENTS)"
				vacuum_events "$d"
			done
			alternate "run_one W8_clm_small $c $DB_W8SMALL w8_claim.sql '' prefix=w8- nsess=$W8_SMALL" \
				"run_one W8_clm_big $c $DB_W8BIG w8_claim.sql '' prefix=w8- nsess=$W8_SESSIONS"
		fi
	done
done

# ---------------------------------------------------------------- report
{
	echo
	echo "a2 benchmark: medians of $REPEAT run(s) of ${SECS}s each, pgbench -M prepared, $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo
	awk -F'\t' -v clients="$CLIENTS" -f "$BENCH_DIR/report.awk" \
		"$OUT/keys.tsv" "$OUT/ratios.tsv" "$OUT/runs.tsv"
} | tee "$OUT/table.md"
bench_log "results in $OUT (table.md, runs.tsv, pgbench/*.out with per-statement latencies)"
