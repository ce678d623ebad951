#!/usr/bin/env bash
#
# test/suites/20-stress.sh: concurrent load with invariants.
#
# In a fresh database of the cluster libpq's environment names (PGHOST,
# PGPORT, PGUSER), runs the stress driver (test/stress/run.sh: pgbench,
# STRESS_CLIENTS clients on STRESS_SESSIONS sessions claiming, completing,
# failing (some with retry_after_ms backoff), renewing, appending with
# causes, lanes and notBefore (past, now, due within 3 s, a day ahead), and
# writing pinned snapshots while short leases expire under them), then the
# invariant checker (test/stress/invariants.sql), which includes "no event
# is claimed before its not_before"; then a dispatch-control phase
# (test/stress/limits.sql) whose invariant is "never over a concurrency
# limit".  Fails on any failed transaction,
# deadlock, unexpected error or violated invariant.
#
# Duration: 20 s by default; A2_SOAK_SECONDS=N for a longer soak.
# The database (A2_STRESS_DB, default a2_stress) is dropped on success and
# kept on failure for inspection.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

db=${A2_STRESS_DB:-a2_stress}
export PGDATABASE=$db
export STRESS_SECONDS=${A2_SOAK_SECONDS:-${STRESS_SECONDS:-20}}

psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS \"$db\" WITH (FORCE)" -c "CREATE DATABASE \"$db\""

rc=0
"$root/test/stress/run.sh" --setup || rc=1

echo
a2_log "stress: checking invariants"
inv_rc=0
inv_out=$(psql -X -v ON_ERROR_STOP=1 -f "$root/test/stress/invariants.sql" 2>&1) || inv_rc=1
printf '%s\n' "$inv_out"
[[ $inv_rc -eq 0 ]] || rc=1

# Dispatch control (0.4.0): queues, priorities, concurrency and rate limits
# and pause under concurrent claimers; every claim is followed by the check
# "never over a concurrency limit" (test/stress/limits.sql).
echo
a2_log "stress: dispatch control (limits)"
psql -X -q -v ON_ERROR_STOP=1 -f "$root/test/stress/limits.sql" >/dev/null || rc=1
lim_seconds=$(( STRESS_SECONDS < 10 ? STRESS_SECONDS : 10 ))
lim_out=$(pgbench -n -c "${STRESS_CLIENTS:-4}" -j 2 -T "$lim_seconds" --max-tries=1 \
	-f "$root/test/stress/limits.pgbench" 2>&1) || { rc=1; printf '%s\n' "$lim_out" | tail -20; }
grep -E '^number of (transactions actually processed|failed transactions)' <<<"$lim_out" || true
psql -X -q -v ON_ERROR_STOP=1 -c "SELECT lstress_check()" >/dev/null || rc=1
printf 'limits phase: worst committed live leases per key (limit): %s\n' \
	"$(psql -X -At -c "SELECT string_agg(s.key || '=' || s.worst || '(' || m.max_leased || ')', ' ' ORDER BY s.key) FROM lstress_seen s JOIN lstress_max m USING (key)")"

if [[ $rc -ne 0 ]]; then
	a2_warn "stress: FAILED; database $db kept for inspection"
	exit 1
fi
summary=$(psql -X -At -F ' ' -c "
	SELECT COALESCE(sum(n), 0),
		   COALESCE(sum(n) FILTER (WHERE outcome LIKE 'Z200_'), 0),
		   COALESCE(sum(n) FILTER (WHERE outcome = 'superseded'), 0)
	  FROM stress_outcomes")
read -r ops refused superseded <<<"$summary"
checked=$(sed -n 's/^\([0-9]*\) invariants checked.*/\1/p' <<<"$inv_out")
# WITH (FORCE): events a day ahead keep a2's scheduler connected to it
psql -X -q -d postgres -c "DROP DATABASE \"$db\" WITH (FORCE)"
printf 'stress summary: %s a2 operations (%s expected Z2001/Z2002/Z2003 refusals, %s superseded outcomes) by %s clients on %s sessions in %s s; %s invariants held\n' \
	"$ops" "$refused" "$superseded" "${STRESS_CLIENTS:-4}" "${STRESS_SESSIONS:-8}" \
	"$STRESS_SECONDS" "$checked"
a2_log "stress: passed"
