#!/usr/bin/env bash
#
# 89-dashboard.sh: the web dashboard (dashboard/) against the test cluster.
#
#  1. node and npm as found, else Debian's (scripts/deps.sh); npm ci in
#     clients/node and dashboard/ (the committed lockfiles), strict tsc.
#  2. a transaction-mode pgbouncer in front of the cluster
#     (scripts/pgbouncer.sh), stopped at the end.
#  3. node --test on the unit and HTTP tests (dashboard/test/): every page,
#     /metrics parsed as Prometheus text and compared with a2_metrics(), a
#     monitor role read-only (no action shown, 403), CSRF, token and basic
#     auth, the flags, redrive of one / a selection / all that match, the
#     0.4.0 pages (queues, cancel, schedules), and everything through
#     pgbouncer (required here: A2_DASHBOARD_REQUIRE_PGBOUNCER=1).
#  4. the browser tests in Debian's chromium, driven by playwright-core:
#     installed here with apt-get when missing; where it cannot be
#     installed the browser part is skipped with one line and the rest
#     still runs.  Screenshots go to dashboard/screenshots/ (git-ignored).
#  5. scripts/dashboard.sh against a URL: it serves, /healthz answers.
#
# The tests create and drop their own databases (a2_dash_*) and the roles
# a2_dash_monitor and a2_dash_worker.  Environment: PGHOST/PGPORT/PGUSER
# and A2_PGDATA/A2_PGPORT as exported by scripts/test.sh.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
cd "$A2_ROOT"

[[ -n ${PGHOST:-} && -n ${PGPORT:-} ]] ||
	a2_die "dashboard: PGHOST and PGPORT must name the test cluster (scripts/test.sh exports them)"

if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	a2_log "dashboard: node or npm missing; installing Debian's nodejs and npm"
	A2_EXTRA_PACKAGES="nodejs npm" bash scripts/deps.sh
fi
a2_log "dashboard: node $(node --version), npm $(npm --version)"

bouncer_started=0
server=
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	if [[ $bouncer_started -eq 1 ]]; then
		bash scripts/pgbouncer.sh stop || a2_warn "dashboard: could not stop pgbouncer"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

a2_log "dashboard: npm ci and tsc in clients/node and dashboard"
(cd clients/node && npm ci --no-audit --no-fund >/dev/null && npx tsc -p tsconfig.json)
(cd dashboard && npm ci --no-audit --no-fund >/dev/null && npx tsc -p tsconfig.json)

bouncer_started=1
bash scripts/pgbouncer.sh start
eval "$(bash scripts/pgbouncer.sh env)"
export A2_PGBOUNCER_URL A2_DASHBOARD_REQUIRE_PGBOUNCER=1

a2_log "dashboard: unit and HTTP tests (pgbouncer at $A2_PGBOUNCER_URL)"
(cd dashboard && node --test build/test/unit.test.js build/test/http.test.js)

chromium=${A2_CHROMIUM:-}
if [[ -z $chromium ]]; then
	if ! command -v chromium >/dev/null 2>&1; then
		a2_log "dashboard: installing Debian's chromium (scripts/deps.sh)"
		A2_EXTRA_PACKAGES=chromium bash scripts/deps.sh >/dev/null 2>&1 || true
	fi
	chromium=$(command -v chromium || true)
fi
if [[ -n $chromium && -x $chromium ]]; then
	a2_log "dashboard: browser tests in $("$chromium" --version 2>/dev/null || echo "$chromium")"
	(cd dashboard && A2_CHROMIUM=$chromium node --test build/test/browser.test.js)
	a2_log "dashboard: screenshots in dashboard/screenshots/: $(cd dashboard/screenshots && echo *.png)"
else
	echo "dashboard: browser tests skipped: chromium could not be installed"
fi

a2_log "dashboard: scripts/dashboard.sh with a URL"
db=a2_dash_script
dropdb --if-exists --force "$db"
createdb "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2'
url="postgresql://${PGUSER:-postgres}@/$db?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")&port=$PGPORT"
port=$((PGPORT + 3))
# GET a URL and print the body, failing on an error status (node: no curl needed).
get() {
	node -e 'fetch(process.argv[1]).then(async (r) => { if (!r.ok) process.exit(1); process.stdout.write(await r.text()) }, () => process.exit(1))' "$1"
}
bash scripts/dashboard.sh "$url" --port "$port" --read-only &
server=$!
ok=0
for _ in $(seq 1 100); do
	if get "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
		ok=1
		break
	fi
	sleep 0.2
done
[[ $ok -eq 1 ]] || a2_die "dashboard: scripts/dashboard.sh did not answer on port $port"
get "http://127.0.0.1:$port/" | grep -q 'id="mode">read-only<' ||
	a2_die "dashboard: scripts/dashboard.sh --read-only did not serve a read-only overview"
get "http://127.0.0.1:$port/metrics" | grep -q '^a2_up 1$' ||
	a2_die "dashboard: /metrics from scripts/dashboard.sh has no a2_up 1"
kill "$server"
wait "$server" 2>/dev/null || true
server=
dropdb --if-exists --force "$db"
a2_log "dashboard: passed"
