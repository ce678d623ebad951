#!/usr/bin/env bash
#
# bench/queues_callgrind.sh -- instructions per a2_claim_next call (issue
# 27), counted by callgrind inside a2_claim_next and what it calls
# (--toggle-collect), in a single-user backend on a stopped cluster's data
# directory.  Runs "VACUUM a2_events; BEGIN;" then N calls and ROLLBACK,
# once with N = 1 and once with N = 1 + A2_QC_CALLS, and prints
# (I(1 + calls) - I(1)) / calls: the first call's planning is left out.
#
#   bench/queues_callgrind.sh DB "SELECT a2_claim_next('b', 30000)"
#   A2_PGDATA: the data directory (the cluster must be stopped); PG_CONFIG;
#   A2_QC_CALLS [50]; A2_QC_SETTINGS: more settings for the backend, e.g.
#   "a2.direct_writes=off" (a single-user backend does not apply ALTER
#   DATABASE ... SET); A2_QC_EACH=1: each call its own transaction, as
#   W9 runs them, the calls committed on a copy of the data directory
#   (made afresh for each count, so the stopped cluster is left as it
#   was).  The database is prepared beforehand (e.g. the rows
#   bench/queues_buffers.sh loads).  Needs valgrind; runs as postgres.
set -euo pipefail
db=$1 call=$2
calls=${A2_QC_CALLS:-50}
settings=()
for s in ${A2_QC_SETTINGS:-}; do settings+=(-c "$s"); done
bin=$("${PG_CONFIG:-pg_config}" --bindir)
work=$(mktemp -d)
chmod 755 "$work"
trap 'rm -rf "$work"' EXIT

count() {
	local n=$1 data=$A2_PGDATA
	if [ "${A2_QC_EACH:-0}" = 1 ]; then
		data=$work/data
		rm -rf "$data"
		cp -a "$A2_PGDATA" "$data"
		{ echo "VACUUM a2_events"
		  for ((k = 0; k < n; k++)); do echo "$call"; done; } >"$work/script.sql"
	else
		{ echo "VACUUM a2_events"; echo "BEGIN"
		  for ((k = 0; k < n; k++)); do echo "$call"; done
		  echo "ROLLBACK"; } >"$work/script.sql"
	fi
	chmod 644 "$work/script.sql"
	chmod 777 "$work"
	runuser -u postgres -- valgrind --tool=callgrind --toggle-collect=a2_claim_next \
		--callgrind-out-file="$work/out" "$bin/postgres" --single -D "$data" \
		-c shared_preload_libraries=a2 "${settings[@]}" "$db" <"$work/script.sql" >/dev/null 2>"$work/err" ||
		{ tail -5 "$work/err" >&2; exit 1; }
	if grep -q ERROR "$work/err"; then
		grep -m 3 ERROR "$work/err" >&2
		exit 1
	fi
	awk '/^(summary|totals):/ { print $2; exit }' "$work/out"
}

one=$(count 1)
many=$(count $((calls + 1)))
echo "$(( (many - one) / calls )) instructions/call ($call, $db)"
