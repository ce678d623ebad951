#!/usr/bin/env bash
#
# test/suites/25-reentrancy.sh: a2 called again from triggers on its own
# tables, while ANALYZE, VACUUM, REINDEX CONCURRENTLY and ALTER TABLE run
# (SPEC 7.2, "Re-entrancy"; issue 15 items 1 and 6).
#
# In a fresh database (A2_REENTRY_DB, default a2_reentry) of the test
# cluster: CREATE EXTENSION a2, then test/reentry/setup.sql puts triggers on
# every a2 table that call a2 again (a2_events inserts sleep
# A2_REENTRY_SLEEP_MS first, then append a mirror event) and insert into
# app.audit through its bare name.  test/reentry/driver.py runs the whole
# protocol on A2_REENTRY_WORKERS workers (default 4) for A2_REENTRY_SECONDS
# (default 40; A2_SOAK_SECONDS overrides) beside back-to-back ANALYZE and a
# VACUUM / ADD COLUMN / DROP COLUMN / REINDEX TABLE CONCURRENTLY cycle over
# the a2 tables.  Then:
#
#  - no backend crashed: the server log written during the run has no
#    "terminated by signal" and no "reinitializing", the postmaster pid is
#    the one before, and the driver lost no connection;
#  - every a2 call succeeded (maintenance may only time out on its lock or
#    lose a deadlock against a worker);
#  - test/stress/invariants.sql holds: the store's invariants, and (since
#    the database has app.audit) the checks of test/reentry/check.sql,
#    which it includes: the audit rows exist, saw the caller's
#    search_path, and the nested calls' mirrors match what a2 stored.
#
# The counts (cycles, calls, maintenance runs) are printed.  The database
# is dropped on success and kept on failure.  About a minute.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

py=/usr/bin/python3
"$py" -c 'import psycopg' 2>/dev/null || a2_die "reentrancy: $py cannot import psycopg (python3-psycopg)"

db=${A2_REENTRY_DB:-a2_reentry}
seconds=${A2_SOAK_SECONDS:-${A2_REENTRY_SECONDS:-40}}
workers=${A2_REENTRY_WORKERS:-4}
sleep_ms=${A2_REENTRY_SLEEP_MS:-200}
for v in seconds workers sleep_ms; do
	[[ ${!v} =~ ^[0-9]+$ ]] || a2_die "reentrancy: $v must be a whole number, not '${!v}'"
done

# The server log and postmaster.pid of the cluster (scripts/test.sh exports
# A2_PGLOG and A2_PGDATA; scripts/cluster.sh puts the log next to the data).
pgdata=${A2_PGDATA:-/tmp/a2-pg/data}
log=${A2_PGLOG:-$(dirname "$pgdata")/log}
[[ -r $log ]] || a2_die "reentrancy: cannot read the server log $log (set A2_PGLOG)"
[[ -r $pgdata/postmaster.pid ]] || a2_die "reentrancy: cannot read $pgdata/postmaster.pid (set A2_PGDATA)"
postmaster_pid() { head -n 1 "$pgdata/postmaster.pid"; }

psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS \"$db\"" -c "CREATE DATABASE \"$db\""
export PGDATABASE=$db
psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE EXTENSION a2' -f "$root/test/reentry/setup.sql"

pid_before=$(postmaster_pid)
log_from=$(($(stat -c %s "$log") + 1))

a2_log "reentrancy: $workers workers for $seconds s, trigger sleep $sleep_ms ms, beside ANALYZE, VACUUM, ALTER TABLE and REINDEX CONCURRENTLY"
rc=0
out=$("$py" "$root/test/reentry/driver.py" "dbname=$db" "$seconds" "$workers" "$sleep_ms") || rc=1
printf '%s\n' "$out"

crashes=$(tail -c +"$log_from" "$log" | grep -E 'terminated by signal|all server processes terminated; reinitializing' || true)
if [[ -n $crashes ]]; then
	a2_warn "reentrancy: the server crashed during the run:"
	printf '%s\n' "$crashes" >&2
	tail -c +"$log_from" "$log" | grep -E -A2 'terminated by signal' | head -n 20 >&2 || true
	rc=1
fi
pid_after=$(postmaster_pid)
if [[ $pid_after != "$pid_before" ]]; then
	a2_warn "reentrancy: the postmaster changed ($pid_before -> $pid_after)"
	rc=1
fi

echo
a2_log "reentrancy: checking the invariants and the triggers' work"
inv_out=$(psql -X -v ON_ERROR_STOP=1 -f "$root/test/stress/invariants.sql" 2>&1) || rc=1
printf '%s\n' "$inv_out"
if ! grep -q 'reentry: ' <<<"$inv_out"; then
	a2_warn "reentrancy: test/stress/invariants.sql ran none of test/reentry/check.sql's checks"
	rc=1
fi
echo 'what the triggers saw (audit rows by table, operation and depth):'
psql -X -v ON_ERROR_STOP=1 -P footer=off \
	-c 'SELECT tbl, op, depth, count(*) FROM app.audit GROUP BY 1, 2, 3 ORDER BY 1, 2, 3' || rc=1

if [[ $rc -ne 0 ]]; then
	a2_warn "reentrancy: FAILED; database $db kept for inspection"
	exit 1
fi
counts=$(psql -X -At -F ' ' -c "
	SELECT (SELECT count(*) FROM app.audit),
		   (SELECT count(*) FROM app.audit WHERE depth > 1),
		   (SELECT count(*) FROM public.a2_events WHERE session_id LIKE 'fan:%')")
read -r audited nested mirrors <<<"$counts"
psql -X -q -d postgres -c "DROP DATABASE \"$db\""
summary=$("$py" -c '
import json, sys
s = json.loads(sys.stdin.read())
m = s["maintenance"]
def n(action):
    return sum(v for k, v in m.items() if k.startswith(action + " ") and k.endswith(" ok"))
print("%d cycles, %d a2 calls by %d workers in %s s; ANALYZE %d, VACUUM %d, ADD COLUMN %d, DROP COLUMN %d, REINDEX CONCURRENTLY %d" % (
    s["cycles"], s["calls"], s["workers"], s["seconds"], n("ANALYZE"), n("VACUUM"),
    n("ADD COLUMN"), n("DROP COLUMN"), n("REINDEX CONCURRENTLY")))
' <<<"$out")
printf 'reentrancy summary: %s; %s audit rows (%s from nested calls), %s mirror events stored; no crash\n' \
	"$summary" "$audited" "$nested" "$mirrors"
a2_log "reentrancy: passed"
