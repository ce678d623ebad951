#!/usr/bin/env bash
#
# 40-fuzz.sh: hostile input to every a2 function (issue "Prove it" section 4).
#
# test/fuzz/gen_cases.py writes A2_FUZZ_CASES seeded cases (wrong JSON
# types, deep nesting, huge strings and batches, negative and overflowing
# numbers, unicode edge cases, NULL in every position); a2_fuzz.run() calls
# each in its own subtransaction and records the outcome.  A case passes
# when it succeeded with a result of the contract's shape, or raised one of
# the SPEC section 5 SQLSTATEs the case allows -- never another one -- and,
# when it raised 22004 or 22023, wrote no row first (SPEC 5: bad input is
# rejected before anything is written).  Each chunk of cases commits under
# LISTEN a2_events, and the NOTIFYs received must be exactly one per session
# that got new events (check_notify.py): a failed call must not leak one.
# A backend crash ends the psql run and fails the suite; so does a
# postmaster restart (pg_postmaster_start_time).
# Scheduling (SPEC 7.1): events carry notBefore (past, now, future of the
# case's a2.now, other offsets, the range's ends; bad ones -- numbers,
# non-timestamps, infinity, beyond 8.64e15 ms -- must raise 22023 and write
# nothing), a2_fail gets retry_after_ms (negative or overflowing: 22023),
# no claimed event may be claimed before its notBefore, and session fz:s4
# holds scheduled work that falls due during the run.  Due announcements
# follow the wall clock, not a2.now, so they arrive when a scheduler passes,
# not when a case runs: a notification naming a stored event with a
# notBefore is counted as one (allowed), any other unexpected one fails.
# Dispatch control (0.4.0): events carry queue, priority and concurrencyKey
# (valid, the defaults, and wrong types, empty or 1025-byte names,
# priorities beyond -32768..32767: 22023), which the returned events must
# show as sent (the defaults absent); a2_claim and a2_claim_next get a
# queues argument (NULL, names, '{}' and bad names 22023, a NULL element
# 22004, 10,001 names) and must claim only from those queues.  Schedules
# (0.4.0): a2_schedule (specs, zones, options and events, valid and not),
# a2_unschedule, a2_pause/resume_schedule, a2_fire_schedules,
# a2_schedule_ticks and a2_list_schedules, at a clock 14 years ahead so
# that only the cases' fire passes fire (no tick returned twice, each
# stored as returned, none stored unreturned).  a2_cancel: indexes and
# reasons, and the invariant "a cancelled event is never processed".
# test/fuzz/limits.sql then checks the 1024-byte and 10,000-element limits
# are enforced by errors, not truncation.
#
# Environment: PGHOST/PGPORT/PGUSER as exported by scripts/test.sh; A2_ROOT;
# A2_FUZZ_SEED (default 20260301), A2_FUZZ_CASES (default 3000);
# A2_FUZZ_KEEP=1 keeps the databases (a2_fuzz_suite, a2_fuzz_limits).

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
if [[ -x /usr/lib/postgresql/15/bin/psql ]]; then
	PATH=/usr/lib/postgresql/15/bin:$PATH
fi
export PGCLIENTENCODING=UTF8

seed=${A2_FUZZ_SEED:-20260301}
cases=${A2_FUZZ_CASES:-3000}
chunk=250
db=a2_fuzz_suite
db_limits=a2_fuzz_limits
fuzz=$A2_ROOT/test/fuzz

[[ $seed =~ ^[0-9]+$ ]] || { echo "A2_FUZZ_SEED must be a number" >&2; exit 2; }
[[ $cases =~ ^[1-9][0-9]*$ ]] || { echo "A2_FUZZ_CASES must be a positive number" >&2; exit 2; }

work=$(mktemp -d)
cleanup() {
	rm -rf -- "$work"
	if [[ ${A2_FUZZ_KEEP:-0} != 1 ]]; then
		# --force: scheduled work (fz:s4) keeps a2's scheduler connected
		dropdb --if-exists --force "$db" >/dev/null 2>&1 || true
		dropdb --if-exists --force "$db_limits" >/dev/null 2>&1 || true
	fi
}
trap cleanup EXIT

psql_db() {
	psql -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}

started=$(psql -X -At -d postgres -c 'SELECT pg_postmaster_start_time()')
echo "fuzz: seed $seed, $cases cases (reproduce: A2_FUZZ_SEED=$seed A2_FUZZ_CASES=$cases $0)"

SECONDS=0
python3 "$fuzz/gen_cases.py" --seed "$seed" --cases "$cases" >"$work/cases.sql"
echo "fuzz: generated in ${SECONDS}s"

dropdb --if-exists --force "$db" 2>/dev/null
createdb "$db"
psql_db -f "$fuzz/setup.sql"
psql_db -f "$work/cases.sql" >/dev/null

# One session runs every chunk (so SPI plans are reused across thousands of
# calls); each chunk is a transaction, so results survive a later crash.
{
	echo "SET statement_timeout = '300s';"
	echo "LISTEN a2_events;"
	for ((first = 1; first <= cases; first += chunk)); do
		echo "SELECT a2_fuzz.run($first, $((first + chunk - 1)));"
		# the notifier announces after commit: wait for this chunk's
		# announcements, so psql prints them before the next chunk
		echo "SELECT CASE WHEN a2_notify_wait(30000) THEN 'notified' ELSE 'notifier timed out' END;"
	done
} >"$work/run.sql"

SECONDS=0
status=0
psql_db -At -f "$work/run.sql" >"$work/run.out" 2>&1 || status=$?
echo "fuzz: ran in ${SECONDS}s"
if [[ $status -ne 0 ]]; then
	tail -n 20 "$work/run.out" >&2
	echo "fuzz: FAILED: the run stopped (psql exit status $status); the last committed case is:" >&2
	psql -X -At -d "$db" -c 'SELECT max(id) FROM a2_fuzz.results' >&2 || true
	exit 1
fi

psql_db -f "$fuzz/report.sql" || status=$?

# Each chunk's NOTIFYs: one per session that got events, none for failures.
# (base64: psql's result printing drops some characters, such as U+10FFFF)
psql_db -At -c "SELECT encode(convert_to(a2_fuzz.expected_notifications($chunk)::text, 'UTF8'), 'base64')" >"$work/expected.b64"
psql_db -At -c "SELECT encode(convert_to(a2_fuzz.scheduled_events()::text, 'UTF8'), 'base64')" >"$work/scheduled.b64"
python3 "$fuzz/check_notify.py" "$work/run.out" "$work/expected.b64" "$work/scheduled.b64" || status=$?

# The limits in a database of their own, so the plans they get do not
# depend on what the random cases left behind.
SECONDS=0
dropdb --if-exists --force "$db_limits" 2>/dev/null
createdb "$db_limits"
psql -X -q -v ON_ERROR_STOP=1 -d "$db_limits" -f "$fuzz/setup.sql"
psql -X -q -v ON_ERROR_STOP=1 -d "$db_limits" -f "$fuzz/limits.sql" || status=$?
echo "fuzz: limits checked in ${SECONDS}s"

now_started=$(psql -X -At -d postgres -c 'SELECT pg_postmaster_start_time()')
if [[ $now_started != "$started" ]]; then
	echo "fuzz: FAILED: the server restarted during the run (started $started, now $now_started)" >&2
	status=1
fi

if [[ $status -ne 0 ]]; then
	echo "fuzz: FAILED" >&2
	exit 1
fi
echo "fuzz: passed"
