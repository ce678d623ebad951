#!/usr/bin/env bash
#
# bench/w10.sh -- W10, a scheduled workload (issue 17): A2_W10_EVENTS events
# [100000] fall due uniformly over A2_W10_SECONDS [60] s; 4 workers run
# a2_claim_next/a2_complete, waking by announcement (LISTEN + the
# scheduler's due announcements, else claim_next's retryAt) versus polling
# every second.  Prints one JSON line per mode (bench/w10.py): events per
# second, lateness after the due time p50/p99/max, CPU of the workers'
# backends, of the server's background processes and of the clients.
#
#   A2_PGDATA, A2_PGPORT  the cluster [/tmp/a2-bench/data, 54349]; a2 is preloaded

set -euo pipefail
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
export A2_PRELOAD=1
bench_cluster_start
for mode in announce poll; do
	/usr/bin/python3 "$BENCH_DIR/w10.py" --mode "$mode" \
		--events "${A2_W10_EVENTS:-100000}" --seconds "${A2_W10_SECONDS:-60}" --workers 4
done
