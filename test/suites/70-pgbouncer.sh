#!/usr/bin/env bash
#
# test/suites/70-pgbouncer.sh: a2 through pgbouncer in transaction mode.
#
# Starts Debian's pgbouncer (scripts/pgbouncer.sh: 127.0.0.1, a private
# port, pool_mode=transaction, default_pool_size=2, as the postgres user)
# in front of the test cluster, runs test/pooler/worker.py (psycopg 3,
# python3-psycopg) with 8 clients for A2_POOLER_SECONDS (default 15) in a
# fresh database, and stops pgbouncer again.  The worker checks that every
# append and completion a client saw commit is stored as it saw it, that
# indexes stay dense, and that a transaction-local a2.now never reaches
# another client.  The database (a2_pooler) is dropped on success.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

db=a2_pooler
seconds=${A2_POOLER_SECONDS:-15}
python=/usr/bin/python3
if ! [[ -x $python ]] || ! "$python" -c 'import psycopg' 2>/dev/null; then
	a2_die "pooler: $python with psycopg 3 is needed (python3-psycopg; run scripts/deps.sh)"
fi

stop_bouncer() {
	bash "$root/scripts/pgbouncer.sh" stop || true
}
trap stop_bouncer EXIT

psql -X -q -v ON_ERROR_STOP=1 -d postgres \
	-c "DROP DATABASE IF EXISTS $db" -c "CREATE DATABASE $db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2'

bash "$root/scripts/pgbouncer.sh" start
eval "$(bash "$root/scripts/pgbouncer.sh" env)"
pooled=${A2_PGBOUNCER_URL%/*}/$db
direct="host=$PGHOST port=$PGPORT user=$PGUSER dbname=$db"

rc=0
"$python" "$root/test/pooler/worker.py" "$pooled" "$direct" "$seconds" 8 || rc=1

# The pool really was transaction-mode with 2 server connections.
config=$(psql -X -At "${A2_PGBOUNCER_URL%/*}/pgbouncer" -c 'SHOW CONFIG')
grep -qE '^pool_mode\|transaction\|' <<<"$config" || { a2_warn "pooler: pgbouncer is not in transaction mode"; rc=1; }
grep -qE '^default_pool_size\|2\|' <<<"$config" || { a2_warn "pooler: pgbouncer's pool is not 2"; rc=1; }
stop_bouncer

if [[ $rc -ne 0 ]]; then
	a2_warn "pooler: FAILED; database $db kept for inspection"
	exit 1
fi
psql -X -q -d postgres -c "DROP DATABASE $db"
a2_log "pooler: passed"
