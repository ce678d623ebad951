#!/usr/bin/env bash
#
# bench/notify_versions.sh -- the background notifier on PostgreSQL 18 and
# 19, each in its CI-matrix root (scripts/matrix.sh VERSION --run: the same
# debootstrap roots, the same cluster settings), one version after the
# other, A2_NV_ROUNDS times in alternating order.  In each root:
#
#   bench/notify.sh at 1 and 4 clients (W1, B1, W4; notifier,
#     in-transaction and off; commit-to-listener latency)
#   bench/notify_fanout.py: W1 at 4 clients through the notifier with 0 and
#     A2_NV_LISTENERS idle listeners, on channel a2_events and on another
#     channel (what a listener costs that is not interested, as it would
#     be with a channel per session)
#
#   sudo bash bench/notify_versions.sh     # PG_CONFIG: the host's 15 (scripts/matrix.sh)
#
# Settings (environment; defaults in brackets):
#   A2_BENCH_SECONDS  each pgbench run [10]
#   A2_BENCH_REPEAT   bench/notify.sh's rounds per root visit [3]
#   A2_NV_VERSIONS    [18 19]
#   A2_NV_ROUNDS      visits to each root [1]
#   A2_NV_LISTENERS   listeners of the fan-out runs [16]
#   A2_NV_OUT         where the results go [/tmp/a2-notify-versions/DATE]
# and those of scripts/matrix.sh (A2_MATRIX_PGPORT, A2_ROOTS_DIR).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(dirname "$here")
secs=${A2_BENCH_SECONDS:-10}
repeat=${A2_BENCH_REPEAT:-3}
versions=${A2_NV_VERSIONS:-18 19}
rounds=${A2_NV_ROUNDS:-1}
listeners=${A2_NV_LISTENERS:-16}
out=${A2_NV_OUT:-/tmp/a2-notify-versions/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p -- "$out"

# What runs in the root, in /a2 (A2_PGDATA and PGBIN are the root's).
# shellcheck disable=SC2016 # expanded in the root
inner='set -euo pipefail
A2_BENCH_CLIENTS="1 4" A2_BENCH_SECONDS='"$secs"' A2_BENCH_REPEAT='"$repeat"' A2_BENCH_KEEP=1 bash bench/notify.sh
eval "$(bash scripts/cluster.sh env)"
res=$(dirname "$A2_PGDATA")/results
for r in $(seq '"$repeat"'); do
	for spec in "0 a2_events" "'"$listeners"' a2_events" "'"$listeners"' a2_elsewhere"; do
		set -- $spec
		line=$(/usr/bin/python3 bench/notify_fanout.py a2notify "$1" "$2" -- \
			"$PGBIN/pgbench" -n -M prepared -T '"$secs"' -c 4 -j 4 -D prefix="fan-$r-$1-$2-" -f bench/w1_append.sql a2notify)
		echo "round $r $line" | tee -a "$res/fanout.txt"
		psql -X -q -d a2notify -c "TRUNCATE a2_events"
	done
done
bash scripts/cluster.sh stop'

for ((i = 1; i <= rounds; i++)); do
	read -r -a order <<<"$versions"
	if ((i % 2 == 0)); then
		mapfile -t order < <(printf '%s\n' "${order[@]}" | tac)
	fi
	for v in "${order[@]}"; do
		echo "==> round $i: PostgreSQL $v"
		bash "$root/scripts/matrix.sh" "$v" --run "$inner" "$out/pg$v-round$i"
	done
done

for d in "$out"/pg*-round*; do
	echo
	echo "## ${d##*/}"
	cat "$d"/notify-*/machine.md "$d"/notify-*/table.md "$d"/fanout.txt 2>/dev/null || true
done | tee "$out/summary.md"
echo "==> results in $out"
