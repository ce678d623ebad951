#!/usr/bin/env bash
#
# 80-node-client.sh: the TypeScript client (clients/node) against the test
# cluster, as a fresh machine would run it:
#
#  1. node and npm: used as found; when missing, Debian's nodejs and npm are
#     installed through scripts/deps.sh.
#  2. npm ci in clients/node: exactly the committed package-lock.json, into
#     a node_modules it deletes first.
#  3. a transaction-mode pgbouncer in front of the cluster
#     (scripts/pgbouncer.sh), for test/pgbouncer.test.ts; stopped at the end.
#  4. npm test: tsc (strict), then node --test on the compiled tests, which
#     create and drop their own databases a2_node_* on the cluster that
#     PGHOST/PGPORT/PGUSER name. Among them the differential run
#     (test/differential.test.ts): 900 seeded calls against the store and a
#     model of the contract, failing on any disagreement.
#  5. examples/node-worker.mjs in a fresh database a2_node_example: it must
#     ship the four good demo orders and dead-letter the bad one.
#
# Environment: PGHOST/PGPORT/PGUSER and A2_PGDATA/A2_PGPORT as exported by
# scripts/test.sh; A2_ROOT.  About half a minute once npm's cache is warm.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
cd "$A2_ROOT"

[[ -n ${PGHOST:-} && -n ${PGPORT:-} ]] ||
	a2_die "node-client: PGHOST and PGPORT must name the test cluster (scripts/test.sh exports them)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	a2_log "node-client: node or npm missing; installing Debian's nodejs and npm"
	A2_EXTRA_PACKAGES="nodejs npm" bash scripts/deps.sh
fi
major=$(node -p 'process.versions.node.split(".")[0]')
a2_log "node-client: node $(node --version), npm $(npm --version)"
((major >= 18)) || a2_die "node-client: node $major is too old (the client targets Node 20; 18 is the oldest that runs the tests)"
((major >= 20)) || a2_warn "node-client: node $major is older than the Node 20 the client targets"

bouncer_started=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ $bouncer_started -eq 1 ]]; then
		bash scripts/pgbouncer.sh stop || a2_warn "node-client: could not stop pgbouncer"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

a2_log "node-client: npm ci"
(cd clients/node && npm ci --no-audit --no-fund)

[[ -x scripts/pgbouncer.sh ]] || a2_die "node-client: scripts/pgbouncer.sh is missing"
bouncer_started=1
bash scripts/pgbouncer.sh start
eval "$(bash scripts/pgbouncer.sh env)"
export A2_PGBOUNCER_URL A2_NODE_REQUIRE_PGBOUNCER=1

a2_log "node-client: npm test (pgbouncer at $A2_PGBOUNCER_URL)"
(cd clients/node && npm test)

a2_log "node-client: examples/node-worker.mjs"
db=a2_node_example
dropdb --if-exists --force "$db"
createdb "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2'
if [[ $PGHOST == /* ]]; then
	url="postgresql://${PGUSER:-postgres}@/$db?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")&port=$PGPORT"
else
	url="postgresql://${PGUSER:-postgres}@$PGHOST:$PGPORT/$db"
fi
out=$(A2_DATABASE_URL=$url timeout 60 node examples/node-worker.mjs)
printf '%s\n' "$out"
dropdb --if-exists --force "$db"
grep -qx 'shipments of order-42: 2 tea, 6 cups, 1 sugar, 4 spoons' <<<"$out" ||
	a2_die "node-client: the example did not ship the four good orders"
grep -q '^#3 order.placed: dead_lettered (3/3)' <<<"$out" ||
	a2_die "node-client: the example did not dead-letter the bad order"
