#!/usr/bin/env bash
#
# The README's first command: install dependencies, build and install a2,
# start a throwaway cluster, run examples/quickstart.sql in a fresh database
# a2_demo, and stop the cluster again (also on failure or Ctrl-C).
#
# A2_KEEP_CLUSTER=1 leaves the cluster running afterwards, for poking at
# a2_demo with psql:  eval "$(scripts/cluster.sh env)"; psql a2_demo

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cd "$A2_ROOT"
example=examples/quickstart.sql
[[ -f $example ]] ||
	a2_die "demo: $A2_ROOT/$example is missing; nothing to demonstrate"

bash scripts/deps.sh
bash scripts/build.sh
a2_find_pg_config

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ ${A2_KEEP_CLUSTER:-0} == 1 ]]; then
		a2_log "demo: leaving the cluster running (A2_KEEP_CLUSTER=1)"
	else
		bash scripts/cluster.sh stop || rc=1
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash scripts/cluster.sh start
eval "$(bash scripts/cluster.sh env)"

a2_log "demo: fresh database a2_demo"
dropdb --if-exists --force a2_demo
createdb a2_demo
psql -X -q -v ON_ERROR_STOP=1 -d a2_demo -c 'CREATE EXTENSION a2'

a2_log "demo: psql -f $example"
psql -X -v ON_ERROR_STOP=1 -f "$example" a2_demo </dev/null
a2_log "demo: done"
