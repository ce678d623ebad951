#!/usr/bin/env bash
#
# test/stress/run.sh: the a2 stress driver.  Runs test/stress/worker.pgbench
# with pgbench against the database libpq's environment names (PGHOST,
# PGPORT, PGUSER, PGDATABASE) and fails unless every transaction succeeded.
#
#   test/stress/run.sh [--setup] [--allow-disconnect]
#
#   --setup             first create the extension (if missing) and the
#                       driver's tables and functions (setup.sql); use a
#                       fresh database
#   --allow-disconnect  the server is going to be killed: clients that lose
#                       their connection are expected; an error the server
#                       reported (ERROR:) still fails the run
#
# Settings (environment):
#   STRESS_CLIENTS   concurrent clients           (default 4)
#   STRESS_JOBS      pgbench threads              (default 2)
#   STRESS_SECONDS   duration                     (default 20)
#   STRESS_SESSIONS  a2 sessions the clients share (default 8)
#   STRESS_OUT       also write pgbench's output to this file
#
# Each pgbench transaction is one plpgsql step from setup.sql; the steps
# catch only the a2 errors the contract allows on their path, so pgbench
# sees an error (a failed transaction or an aborted client) only when
# something is wrong: a broken expectation (SQLSTATE ZS000), a deadlock,
# an unexpected SQLSTATE or a crashed backend.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
# shellcheck source=scripts/lib.sh
. "$here/../../scripts/lib.sh"
a2_find_pg_config

setup=0
allow_disconnect=0
for arg in "$@"; do
	case $arg in
	--setup) setup=1 ;;
	--allow-disconnect) allow_disconnect=1 ;;
	*) a2_die "usage: $0 [--setup] [--allow-disconnect]" ;;
	esac
done

clients=${STRESS_CLIENTS:-4}
jobs=${STRESS_JOBS:-2}
seconds=${STRESS_SECONDS:-20}
sessions=${STRESS_SESSIONS:-8}
for v in clients jobs seconds sessions; do
	[[ ${!v} =~ ^[1-9][0-9]*$ ]] || a2_die "stress: $v must be a positive integer, not '${!v}'"
done
((jobs <= clients)) || jobs=$clients

if [[ $setup -eq 1 ]]; then
	psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION IF NOT EXISTS a2' \
		-f "$here/setup.sql"
fi

a2_log "stress: $clients clients, $sessions sessions, ${seconds}s"
rc=0
# A hung run (a lock wait nobody resolves) fails instead of blocking CI.
limit=$((seconds + 60))
output=$(timeout --kill-after=10 "$limit" \
	pgbench -n -c "$clients" -j "$jobs" -T "$seconds" -D "sessions=$sessions" \
	--max-tries=1 --failures-detailed -f "$here/worker.pgbench" 2>&1) || rc=$?
if [[ -n ${STRESS_OUT:-} ]]; then
	printf '%s\n' "$output" >"$STRESS_OUT"
fi

# pgbench's summary and its errors (one per aborted client), without the
# plpgsql context lines.
{ grep -vE '^(CONTEXT|SQL statement|PL/pgSQL function|	)' <<<"$output" || true; } | head -n 60 || true

field() {
	sed -n "s/^$1\([0-9.]*\).*/\1/p" <<<"$output"
}
processed=$(field 'number of transactions actually processed: ')
failed=$(field 'number of failed transactions: ')
tps=$(field 'tps = ')
processed=${processed:-0}
failed=${failed:-0}

status=ok
if [[ $rc -eq 124 || $rc -eq 137 ]]; then
	status="pgbench still running ${limit}s after a ${seconds}s run: killed (hang)"
elif grep -q 'ERROR:' <<<"$output"; then
	status="the server reported an error"
elif [[ $failed -ne 0 ]]; then
	status="$failed failed transactions (deadlock or serialization failures)"
elif [[ $rc -ne 0 && $allow_disconnect -eq 0 ]]; then
	status="pgbench exited with status $rc (aborted clients)"
elif [[ $processed -eq 0 && $allow_disconnect -eq 0 ]]; then
	status="no transaction completed"
fi

printf 'stress figures: %s transactions, %s clients, %s s, %s sessions, %s tps, %s failed, pgbench status %s\n' \
	"$processed" "$clients" "$seconds" "$sessions" "${tps:-?}" "$failed" "$rc"
if [[ $status != ok ]]; then
	a2_warn "stress: $status"
	exit 1
fi
