#!/usr/bin/env bash
#
# The web dashboard and /metrics (dashboard/, docs/operations.md "Dashboard").
#
#   bash scripts/dashboard.sh DATABASE_URL [options]   serve that database
#   bash scripts/dashboard.sh [options]                a throwaway cluster with the demo's data
#
# With a URL it connects as the role the URL names (read-only unless that
# role may act: docs/operations.md) and serves until Ctrl-C.  Without one
# it does what scripts/demo.sh does (dependencies, build, a throwaway
# cluster as the postgres OS user on a private port and socket), loads
# examples/quickstart.sql and dashboard/seed.sql into a fresh database
# a2_dashboard, serves it, and stops the cluster on exit.
#
# Options go to the dashboard (--help lists them): --port (default 8450,
# or A2_DASHBOARD_PORT), --host (default 127.0.0.1), --read-only,
# --no-payloads, --metrics-only, --no-metrics, --token-file, ...
# Node 20 and npm are used as found, else Debian's are installed.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$A2_ROOT"

url=
if [[ $# -gt 0 && $1 != -* ]]; then
	url=$1
	shift
fi
opts=("$@")
if [[ -n ${A2_DASHBOARD_PORT:-} ]]; then
	opts=(--port "$A2_DASHBOARD_PORT" "${opts[@]}")
fi

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	a2_log "dashboard: node or npm missing; installing Debian's nodejs and npm"
	A2_EXTRA_PACKAGES="nodejs npm" bash scripts/deps.sh
fi

# Build clients/node (the dashboard's client) and the dashboard; npm ci
# only when node_modules is missing or older than the lockfile.
build_js() {
	local dir
	for dir in clients/node dashboard; do
		if [[ ! -d $dir/node_modules || $dir/package-lock.json -nt $dir/node_modules ]]; then
			a2_log "dashboard: npm ci in $dir"
			(cd "$dir" && npm ci --no-audit --no-fund >/dev/null)
		fi
		(cd "$dir" && npx tsc -p tsconfig.json)
	done
}

if [[ -n $url ]]; then
	build_js
	exec node dashboard/build/src/main.js "${opts[@]}" "$url"
fi

bash scripts/deps.sh
bash scripts/build.sh
a2_find_pg_config
build_js

server=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	bash scripts/cluster.sh stop || rc=1
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

bash scripts/cluster.sh start
eval "$(bash scripts/cluster.sh env)"

db=a2_dashboard
a2_log "dashboard: fresh database $db with the demo's data"
dropdb --if-exists --force "$db"
createdb "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2'
# quickstart.sql shows two refusals on purpose (ERROR lines on stderr), as in scripts/demo.sh.
psql -X -q -v ON_ERROR_STOP=1 -f examples/quickstart.sql "$db" </dev/null >/dev/null
psql -X -q -v ON_ERROR_STOP=1 -f dashboard/seed.sql "$db" </dev/null

url="postgresql://$PGUSER@/$db?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")&port=$PGPORT"
a2_log "dashboard: serving $db (Ctrl-C stops it and the cluster)"
# In the background and waited for, so that a TERM reaches the trap at once.
node dashboard/build/src/main.js "${opts[@]}" "$url" &
server=$!
wait "$server"
