#!/usr/bin/env bash
#
# test/suites/20-stress.sh: concurrent load with invariants.
#
# In a fresh database of the cluster libpq's environment names (PGHOST,
# PGPORT, PGUSER), runs the stress driver (test/stress/run.sh: pgbench,
# STRESS_CLIENTS clients on STRESS_SESSIONS sessions claiming, completing,
# failing (some with retry_after_ms backoff), renewing, appending with
# causes, lanes and notBefore (past, now, due within 3 s, a day ahead), and
# writing pinned snapshots while short leases expire under them); then a
# dispatch-control phase
# (test/stress/limits.sql) whose invariant is "never over a concurrency
# limit"; a recurring-schedules phase (test/stress/schedules.sql: fire
# passes racing while a2.now advances, "no tick twice"); a cancel phase
# (test/stress/cancel.sql: a2_cancel racing claims, completions and
# failures, "never a cancelled event processed"); and last the invariant
# checker (test/stress/invariants.sql) over the events of every phase,
# which includes "no event is claimed before its not_before".  Fails on any failed transaction,
# deadlock, unexpected error or violated invariant.
#
# Duration: 20 s by default, then up to 10 s of limits and 8 s each of
# schedules and cancel; A2_SOAK_SECONDS=N for a longer soak.
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

# A phase: its setup file, then pgbench with its script for phase_seconds,
# then its check function, whose text result is printed.  Fails the run on
# a failed transaction (a broken invariant raises ZS000), an error or a
# failed check.
phase_seconds=$(( STRESS_SECONDS < 8 ? STRESS_SECONDS : 8 ))
run_phase() {
	local name=$1 check=$2 out
	psql -X -q -v ON_ERROR_STOP=1 -f "$root/test/stress/$name.sql" >/dev/null || { rc=1; return; }
	out=$(timeout --kill-after=10 $((phase_seconds + 60)) \
		pgbench -n -c "${STRESS_CLIENTS:-4}" -j 2 -T "$phase_seconds" --max-tries=1 \
		--failures-detailed --verbose-errors \
		-f "$root/test/stress/$name.pgbench" 2>&1) || { rc=1; printf '%s\n' "$out" | grep -v '^CONTEXT\|^PL/pgSQL\|^SQL statement' | tail -20; }
	grep -E '^number of (transactions actually processed|failed transactions)' <<<"$out" || true
	if grep -qE 'ERROR:|^number of failed transactions: [1-9]' <<<"$out"; then
		# a deadlock or serialization failure does not abort the client
		grep -E 'ERROR:|^number of (deadlock|serialization) failures' <<<"$out" | head -10 || true
		rc=1
	fi
	out=$(psql -X -At -v ON_ERROR_STOP=1 -c "SELECT $check()" 2>&1) || rc=1
	printf '%s phase: %s\n' "$name" "$out"
}

# Recurring schedules (0.4.0): concurrent fire passes while a2.now
# advances, pause/resume in between; "no tick twice" and the missed-tick
# policies (test/stress/schedules.sql).
echo
a2_log "stress: recurring schedules"
run_phase schedules sstress_check

# a2_cancel (0.4.0) racing claims, completions, failures and renewals;
# "never a cancelled event processed" (test/stress/cancel.sql).
echo
a2_log "stress: cancel"
run_phase cancel cstress_check

# The invariants of the store, over every phase's events.
echo
a2_log "stress: checking invariants"
inv_rc=0
inv_out=$(psql -X -v ON_ERROR_STOP=1 -f "$root/test/stress/invariants.sql" 2>&1) || inv_rc=1
printf '%s\n' "$inv_out"
[[ $inv_rc -eq 0 ]] || rc=1

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
