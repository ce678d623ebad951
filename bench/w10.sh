#!/usr/bin/env bash
#
# bench/w10.sh -- W10, a scheduled workload (issue 17): A2_W10_EVENTS events
# [100000] fall due uniformly over A2_W10_SECONDS [60] s; A2_W10_WORKERS [4]
# workers run a2_claim_next (max_sessions A2_W10_BATCH [100]) and complete
# each claimed batch in one statement, waking by announcement (LISTEN + the
# scheduler's due announcements, else claim_next's retryAt) versus polling
# every second.  Prints one JSON line per run (bench/w10.py): events per
# second, lateness after the due time p50/p99/max, CPU of the workers'
# backends, of the worker processes and of the server's background
# processes, for the idle phase before the first due time and for the run.
#
#   A2_W10_REPEAT   runs per mode, alternating which mode goes first [1]
#   A2_W10_LEAD     seconds from the start of the append to the first due
#                   time [w10.py: idle + 15 + events/2000]
#   A2_W10_GRACE    seconds after the last due time before the workers stop [5]
#   A2_W10_IDLE     seconds the workers wait before the first due time (the
#                   idle phase, measured on its own) [30]
#   A2_PGDATA, A2_PGPORT  the cluster [/tmp/a2-bench/data, 54349]; a2 is preloaded

set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export A2_PRELOAD=1
bench_cluster_start
run() {
	local extra=()
	[[ -z ${A2_W10_LEAD:-} ]] || extra+=(--lead "$A2_W10_LEAD")
	/usr/bin/python3 "$BENCH_DIR/w10.py" --mode "$1" \
		--events "${A2_W10_EVENTS:-100000}" --seconds "${A2_W10_SECONDS:-60}" \
		--workers "${A2_W10_WORKERS:-4}" --batch "${A2_W10_BATCH:-100}" \
		--grace "${A2_W10_GRACE:-5}" --idle "${A2_W10_IDLE:-30}" "${extra[@]}"
}
for ((rep = 1; rep <= ${A2_W10_REPEAT:-1}; rep++)); do
	if ((rep % 2)); then run announce; run poll; else run poll; run announce; fi
done
