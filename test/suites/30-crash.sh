#!/usr/bin/env bash
#
# test/suites/30-crash.sh: crash safety.
#
# Starts a second, private cluster (scripts/cluster.sh with A2_PGDATA under
# a fresh temporary directory and port A2_CRASH_PGPORT, default 54339), so
# killing it disturbs nothing else.  Under the stress load (pgbench,
# test/stress/run.sh) and client loops that append events with known ids
# and complete them, it kills the postmaster with SIGKILL, restarts it and
# lets crash recovery run, A2_CRASH_ROUNDS times (default 2).  The loops log
# an id (or a completion) to a client-side file only after the commit
# returned.  Then it runs the load once more on the recovered cluster, loads
# the logs and runs the invariant checker (test/stress/invariants.sql),
# which also checks that every logged id and completion is in a2_events.
#
# fsync, synchronous_commit and full_page_writes are on (scripts/cluster.sh
# sets them; checked below).  A2_SOAK_SECONDS=N makes the rounds more
# numerous (one per 10 s, at least 2).  The cluster and its directory are
# removed at the end; on failure the server log's tail is printed first.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

rounds=${A2_CRASH_ROUNDS:-2}
if [[ -n ${A2_SOAK_SECONDS:-} ]]; then
	rounds=$((A2_SOAK_SECONDS / 10))
	((rounds >= 2)) || rounds=2
fi
loops=3

tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-crash.XXXXXX")
chmod 0755 "$tmp"
export A2_PGDATA=$tmp/pg/data
export A2_PGPORT=${A2_CRASH_PGPORT:-54339}
cluster() { bash "$root/scripts/cluster.sh" "$@"; }

bg_pids=()
ok=0
cleanup() {
	local pid
	touch "$tmp/stop" 2>/dev/null || true
	for pid in "${bg_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	if [[ $ok -ne 1 && -f $tmp/pg/log ]]; then
		printf -- '--- last lines of the crash cluster log ---\n' >&2
		tail -n 40 "$tmp/pg/log" >&2 || true
	fi
	cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT

cluster start
eval "$(cluster env)"
export PGDATABASE=a2_crash
pgdata=$A2_PGDATA

for setting in fsync synchronous_commit full_page_writes; do
	value=$(psql -X -At -d postgres -c "SHOW $setting")
	[[ $value == on ]] || a2_die "crash: $setting is '$value'; the test needs it on"
done
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "CREATE DATABASE a2_crash"
psql -X -q -v ON_ERROR_STOP=1 -c "CREATE EXTENSION a2" \
	-f "$root/test/stress/setup.sql" -f "$root/test/stress/crash.sql"

# A client loop: one transaction per iteration through psql; its result is
# logged only when psql reports success, i.e. after COMMIT returned.  While
# the server is down, psql fails to connect and the loop retries.
append_loop() {
	local k=$1 i=0 id sess=crash-a$1
	while [[ ! -e $tmp/stop ]]; do
		i=$((i + 1))
		id=crash-a$k-$i
		if psql -X -q -At -1 -v ON_ERROR_STOP=1 -c \
			"SELECT a2_append('$sess', '[{\"id\": \"$id\", \"type\": \"crash\"}, {\"id\": \"$id-b\", \"type\": \"crash\", \"lane\": \"l\"}]') IS NOT NULL" \
			>/dev/null 2>>"$tmp/loop-$k.err"; then
			printf '%s\t%s\n%s-b\t%s\n' "$id" "$sess" "$id" "$sess" >>"$tmp/ids.log"
		else
			sleep 0.05
		fi
	done
}

work_loop() {
	local k=$1 i=0 id sess=crash-w$1 out
	while [[ ! -e $tmp/stop ]]; do
		i=$((i + 1))
		id=crash-w$k-$i
		if out=$(psql -X -q -At -1 -v ON_ERROR_STOP=1 -c \
			"SELECT crash_work('$sess', $((100 + k)), '$id')" 2>>"$tmp/loop-w$k.err"); then
			printf '%s\t%s\n' "$id" "$sess" >>"$tmp/ids.log"
			while read -r idx attempt; do
				[[ -n $idx ]] && printf '%s\t%s\t%s\n' "$sess" "$idx" "$attempt" >>"$tmp/done.log"
			done <<<"$out"
		else
			sleep 0.05
		fi
	done
}

: >"$tmp/ids.log"
: >"$tmp/done.log"
for ((k = 1; k <= loops; k++)); do
	append_loop "$k" &
	bg_pids+=("$!")
done
work_loop 1 &
bg_pids+=("$!")

logged() { wc -l <"$1" | tr -d ' '; }

before=0
load_txns=0
for ((round = 1; round <= rounds; round++)); do
	a2_log "crash: round $round of $rounds: load running"
	STRESS_SECONDS=60 STRESS_OUT=$tmp/pgbench-$round.out \
		"$root/test/stress/run.sh" --allow-disconnect >"$tmp/stress-$round.txt" 2>&1 &
	stress_pid=$!
	bg_pids+=("$stress_pid")
	# a random moment 3 to 6 s into the load
	sleep "$((3 + RANDOM % 4)).$((RANDOM % 10))"

	now=$(logged "$tmp/ids.log")
	((now > before)) || a2_die "crash: the client loops committed nothing in round $round"
	before=$now
	pid=$(head -n 1 "$pgdata/postmaster.pid")
	a2_log "crash: kill -9 postmaster $pid ($now ids logged so far)"
	kill -9 "$pid"

	stress_rc=0
	wait "$stress_pid" || stress_rc=$?
	cat "$tmp/stress-$round.txt"
	[[ $stress_rc -eq 0 ]] || a2_die "crash: the load before the kill failed (see above)"
	txns=$(sed -n 's/^stress figures: \([0-9]*\) transactions.*/\1/p' "$tmp/stress-$round.txt")
	((${txns:-0} > 0)) || a2_die "crash: the load committed nothing before the kill in round $round"
	load_txns=$((load_txns + txns))

	cluster start
	psql -X -At -d postgres -c 'SELECT 1' >/dev/null
	sleep 1
done

# Let the loops commit after the last recovery too, then stop them.
sleep 2
touch "$tmp/stop"
for pid in "${bg_pids[@]}"; do
	wait "$pid" 2>/dev/null || true
done
bg_pids=()

recoveries=$(grep -c 'database system was interrupted' "$tmp/pg/log" || true)
a2_log "crash: server log shows $recoveries crash recoveries"
[[ $recoveries -ge $rounds ]] || a2_die "crash: expected $rounds crash recoveries in the server log, saw $recoveries"

if grep -h 'ERROR:' "$tmp"/loop-*.err; then
	a2_die "crash: a client loop got an error from the server (above)"
fi

# The recovered store keeps working under the same load, strictly.
a2_log "crash: load on the recovered cluster"
STRESS_SECONDS=${A2_CRASH_AFTER_SECONDS:-5} "$root/test/stress/run.sh"

ids=$(logged "$tmp/ids.log")
done_n=$(logged "$tmp/done.log")
((ids > 0 && done_n > 0)) || a2_die "crash: the client loops logged nothing ($ids ids, $done_n completions)"
psql -X -q -v ON_ERROR_STOP=1 \
	-c "\\copy crash_client_log (event_id, session_id) FROM '$tmp/ids.log'" \
	-c "\\copy crash_client_done (session_id, idx, attempt) FROM '$tmp/done.log'"

a2_log "crash: checking invariants and the client-side logs"
psql -X -v ON_ERROR_STOP=1 -f "$root/test/stress/invariants.sql"

printf 'crash figures: %s rounds of kill -9 under %s pgbench clients (%s transactions before the kills) and %s client loops; %s ids and %s completions logged by clients, all present after recovery\n' \
	"$rounds" "${STRESS_CLIENTS:-4}" "$load_txns" "$((loops + 1))" "$ids" "$done_n"
ok=1
a2_log "crash: passed"
