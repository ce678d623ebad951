#!/usr/bin/env bash
#
# test/suites/45-matrix.sh: the generated isolation matrix (SPEC 7.2).
#
# Every ordered pair of a2 operations (append, caused append, claim,
# claim_next, renew, complete, fail, redrive, cancel, put_snapshots, read_state,
# presence set and read, drop_session) in two concurrent transactions, on
# one session (each transaction optionally holding a claim first) and on
# two sessions with crossing locks, under READ COMMITTED, REPEATABLE READ
# and SERIALIZABLE, both commit orders: test/matrix/matrix.py, which says
# what each case asserts.  In a fresh database (A2_MATRIX_DB, default
# a2_matrix) of the cluster libpq's environment names; dropped on success,
# kept on failure.  A2_MATRIX_LEVELS (e.g. rc,rr) and A2_MATRIX_FILTER (a
# substring of the case names) narrow the run.  Uses Debian's
# python3-psycopg (scripts/deps.sh installs it).

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

py=/usr/bin/python3
"$py" -c 'import psycopg' 2>/dev/null || a2_die "matrix: $py cannot import psycopg (python3-psycopg)"

db=${A2_MATRIX_DB:-a2_matrix}
export PGDATABASE=$db
psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS \"$db\"" -c "CREATE DATABASE \"$db\""
psql -X -q -v ON_ERROR_STOP=1 -c 'SET client_min_messages = warning' \
	-c 'CREATE EXTENSION a2' -f "$root/test/matrix/fixture.sql" -c 'SELECT matrix_prepare()' >/dev/null

rc=0
PYTHONDONTWRITEBYTECODE=1 "$py" "$root/test/matrix/matrix.py" \
	--levels "${A2_MATRIX_LEVELS:-rc,rr,ser}" --filter "${A2_MATRIX_FILTER:-}" || rc=$?
if [[ $rc -ne 0 ]]; then
	a2_warn "matrix: FAILED; database $db kept for inspection"
	exit 1
fi
psql -X -q -d postgres -c "DROP DATABASE \"$db\""
a2_log "matrix: passed"
