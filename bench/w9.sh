#!/usr/bin/env bash
#
# bench/w9.sh -- W9, the fleet worker loop (a2_claim_next + a2_complete),
# against B9, the pgmq-style FOR UPDATE SKIP LOCKED LIMIT 1 loop on a table
# of the same shape, over growing numbers of sessions with pending work;
# then W1 (append) and W4 (append + claim + complete) with and without the
# index a2_claim_next added (a2_events_available).  See bench/README.md.
#
# Settings (environment; defaults in brackets):
#   A2_BENCH_SECONDS     duration of each pgbench run [5]
#   A2_BENCH_REPEAT      runs per point; medians are reported [3]
#   A2_BENCH_CLIENTS     client counts [1 4]
#   A2_BENCH_W9_SIZES    sessions with pending work, one database each
#                        [1000 100000 1000000]
#   A2_BENCH_W9_DONE     finished events added to a copy of the smallest
#                        size, for flatness in finished events (0: skip)
#                        [1000000]
#   A2_BENCH_W9_ONLY     "W9", "W14" or both ["W9 W14"]
#   A2_BENCH_W9_PGOPTIONS  PGOPTIONS for every run, e.g. "-c synchronous_commit=off"
#                        to take the commit flush out of the figures [none]
#   A2_BENCH_OUT         output directory [$(dirname A2_PGDATA)/results-w9/<timestamp>]
#   A2_PGDATA, A2_PGPORT the cluster, as for bench/run.sh
#
# Every point is one pgbench run (-n -M prepared -T SECS); repeats are
# interleaved and the members of each compared pair run back to back, in
# alternating order.  The table shows median TPS and the ratios.

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-5}
REPEAT=${A2_BENCH_REPEAT:-3}
CLIENTS=${A2_BENCH_CLIENTS:-1 4}
SIZES=${A2_BENCH_W9_SIZES:-1000 100000 1000000}
DONE=${A2_BENCH_W9_DONE:-1000000}
ONLY=${A2_BENCH_W9_ONLY:-W9 W14}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-w9/$(date +%Y%m%d-%H%M%S)}

want() { [[ " $ONLY " == *" $1 "* ]]; }
smallest=$(printf '%s\n' $SIZES | sort -n | head -n 1)

# the cluster first: it creates (and owns) the data directory's parent
bench_cluster_start
mkdir -p "$OUT/pgbench"
: >"$OUT/runs.tsv"
bench_machine >"$OUT/machine.md"

# One pgbench run: key clients db script [-D definitions...]
run_one() {
	local key=$1 c=$2 db=$3 script=$4
	shift 4
	local j=$((c < NPROC ? c : NPROC)) defs=() kv tps out
	for kv in "$@"; do defs+=(-D "$kv"); done
	out=$OUT/pgbench/${key}_c${c}_r${rep}.out
	bench_log "run $rep/$REPEAT: $key, $c client(s), ${SECS}s"
	PGOPTIONS=${A2_BENCH_W9_PGOPTIONS:-} "$PGBENCH" -n -M prepared -r -f "$BENCH_DIR/$script" \
		-T "$SECS" -c "$c" -j "$j" "${defs[@]}" "$db" >"$out" 2>&1 ||
		{ cat "$out" >&2; bench_die "pgbench failed: $key"; }
	grep -q '^number of failed transactions: 0 ' "$out" ||
		{ cat "$out" >&2; bench_die "failed transactions: $key"; }
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")
	printf '%s\t%s\t%s\t%s\n' "$key" "$c" "$rep" "$tps" >>"$OUT/runs.tsv"
	# the claim statement's own mean latency (pgbench -r: first statement)
	lat=$(awk '/statement latencies in milliseconds/ { getline; print $1; exit }' "$out")
	printf '%s\t%s\t%s\t%s\n' "${key}_claim_ms" "$c" "$rep" "${lat:-0}" >>"$OUT/runs.tsv"
}

# Run two commands back to back, the first first on odd repeats.
alternate() {
	if ((rep % 2)); then eval "$1"; eval "$2"; else eval "$2"; eval "$1"; fi
}

w9_db() { echo "a2w9_$1"; }

if want W9; then
	dbs=()
	for n in $SIZES; do dbs+=("$n:0"); done
	[[ $DONE -gt 0 ]] && dbs+=("$smallest:$DONE")
	for spec in "${dbs[@]}"; do
		n=${spec%%:*} d=${spec##*:}
		db=$(w9_db "$n")
		[[ $d -gt 0 ]] && db=${db}_done
		bench_log "setup $db: $n sessions with pending work, $d finished events"
		"$PGBIN/dropdb" --if-exists "$db"
		"$PGBIN/createdb" "$db"
		bench_psql "$db" -c 'CREATE EXTENSION a2' -v sessions="$n" -v done="$d" \
			-f "$BENCH_DIR/setup/w9.sql"
	done
fi
# the setup's WAL is checkpointed before anything is timed
[[ -z ${dbs+x} ]] || bench_psql postgres -c CHECKPOINT
if want W14; then
	bench_log "setup a2w9_w14 (W1, W4 with and without a2_events_available)"
	"$PGBIN/dropdb" --if-exists a2w9_w14
	"$PGBIN/createdb" a2w9_w14
	bench_psql a2w9_w14 -c 'CREATE EXTENSION a2'
fi

index_on() { bench_psql a2w9_w14 -c 'SET client_min_messages = warning' -c 'CREATE INDEX IF NOT EXISTS a2_events_available ON a2_events ((COALESCE(claim_expires_at, created_at)), session_id) WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL'; }
index_off() { bench_psql a2w9_w14 -c 'DROP INDEX IF EXISTS a2_events_available'; }

for ((rep = 1; rep <= REPEAT; rep++)); do
	for c in $CLIENTS; do
		if want W9; then
			for spec in "${dbs[@]}"; do
				n=${spec%%:*} d=${spec##*:}
				db=$(w9_db "$n")
				[[ $d -gt 0 ]] && db=${db}_done
				alternate "run_one W9_${n}_${d} $c $db w9_cycle.sql" \
					"run_one B9_${n}_${d} $c $db b9_cycle.sql"
			done
		fi
		if want W14; then
			alternate "index_on; run_one W1_idx $c a2w9_w14 w1_append.sql prefix=w1i-r$rep-c$c-" \
				"index_off; run_one W1_noidx $c a2w9_w14 w1_append.sql prefix=w1n-r$rep-c$c-"
			alternate "index_on; run_one W4_idx $c a2w9_w14 w4_cycle.sql prefix=w4i-r$rep-c$c-" \
				"index_off; run_one W4_noidx $c a2w9_w14 w4_cycle.sql prefix=w4n-r$rep-c$c-"
		fi
	done
done
if want W14; then index_on; fi

# Medians per (key, clients), then the table.
bench_medians "$OUT/runs.tsv" >"$OUT/medians.tsv"
med() { bench_med "$OUT/medians.tsv" "$1" "$2"; }
ratio() { bench_ratio "$1" "$2"; }

{
	printf '# W9 results (%s s per run, %s repeats, medians; PGOPTIONS=%s)\n\n' "$SECS" "$REPEAT" "${A2_BENCH_W9_PGOPTIONS:-none}"
	cat "$OUT/machine.md"
	echo
	if want W9; then
		echo '| sessions with work | finished events | clients | W9 TPS | B9 TPS | W9/B9 | W9 vs smallest | a2_claim_next ms | B9 claim ms |'
		echo '|---|---|---|---|---|---|---|---|---|'
		for c in $CLIENTS; do
			base=$(med "W9_${smallest}_0" "$c")
			for spec in "${dbs[@]}"; do
				n=${spec%%:*} d=${spec##*:}
				w=$(med "W9_${n}_${d}" "$c")
				b=$(med "B9_${n}_${d}" "$c")
				printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$n" "$d" "$c" "$w" "$b" \
					"$(ratio "$w" "$b")" "$(ratio "$w" "$base")" \
					"$(med "W9_${n}_${d}_claim_ms" "$c")" "$(med "B9_${n}_${d}_claim_ms" "$c")"
			done
		done
		echo
	fi
	if want W14; then
		echo '| workload | clients | with a2_events_available | without | with/without |'
		echo '|---|---|---|---|---|'
		for k in W1 W4; do
			for c in $CLIENTS; do
				w=$(med "${k}_idx" "$c")
				o=$(med "${k}_noidx" "$c")
				printf '| %s | %s | %s | %s | %s |\n' "$k" "$c" "$w" "$o" "$(ratio "$w" "$o")"
			done
		done
		echo
	fi
	echo 'All runs (TPS per repeat):'
	echo
	echo '```'
	cat "$OUT/medians.tsv"
	echo '```'
} | tee "$OUT/table.md"
