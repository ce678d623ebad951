#!/usr/bin/env bash
#
# 86-cookbook.sh: every program of docs/clients.md (examples/clients/), run
# against the test cluster directly and through pgbouncer.
#
#  1. Installs what the programs need, from Debian (scripts/deps.sh: only
#     what is missing): python3-psycopg(-pool), python3-asyncpg, a JDK with
#     pgjdbc, HikariCP, SLF4J and Jackson, Go with lib/pq and pgx v4, and
#     node/npm when missing; then `npm ci` in examples/clients/node (the
#     committed package-lock.json), javac into a temporary directory, and
#     `go build` offline against Debian's sources (GO111MODULE=off,
#     GOPATH=/usr/share/gocode).
#  2. Restarts the cluster with A2_PGLISTEN=127.0.0.1 (pgjdbc has no unix
#     sockets) and starts a transaction-mode pgbouncer (scripts/pgbouncer.sh,
#     a pool of 2).  Both are put back as they were at the end.
#  3. For each program and each mode, in a fresh database a2_cookbook with
#     a2 and the app's table shipments: runs it with A2_URL (the server, or
#     pgbouncer), A2_LISTEN_URL (always direct; A2_JDBC_* for Java),
#     A2_PGBOUNCER (0/1) and A2_RESTART (restarts the cluster: every
#     program goes through a server restart).  Its stdout must equal
#     examples/clients/expected.txt (psql: psql/expected.txt), and the
#     database must hold what the transcript claims: no unfinished event,
#     the shipments it reports.
#
# A2_COOKBOOK_ONLY="pgx psql" runs only those programs (names below);
# A2_COOKBOOK_MODES="direct" only one mode.  Environment as for every
# suite (scripts/test.sh): PGHOST/PGPORT/PGUSER, A2_PGDATA/A2_PGPORT, A2_ROOT.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
a2_find_pg_config
cd "$A2_ROOT"

[[ -n ${PGHOST:-} && -n ${PGPORT:-} ]] ||
	a2_die "cookbook: PGHOST and PGPORT must name the test cluster (scripts/test.sh exports them)"

examples=$A2_ROOT/examples/clients
db=a2_cookbook
read -r -a modes <<<"${A2_COOKBOOK_MODES:-direct pgbouncer}"
programs=(psql psycopg asyncpg node-postgres postgres.js kysely drizzle pgjdbc hikaricp lib-pq pgx)
if [[ -n ${A2_COOKBOOK_ONLY:-} ]]; then
	read -r -a programs <<<"$A2_COOKBOOK_ONLY"
fi
started=$SECONDS

# --- 1. installs and builds -------------------------------------------------

packages="python3-psycopg python3-psycopg-pool python3-asyncpg default-jdk-headless
	libpostgresql-jdbc-java libhikaricp-java libslf4j-java libjackson2-databind-java
	golang-go golang-github-lib-pq-dev golang-github-jackc-pgx-v4-dev pgbouncer"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	packages+=" nodejs npm"
fi
A2_EXTRA_PACKAGES=$(tr -s '[:space:]' ' ' <<<"$packages") bash scripts/deps.sh

work=$(mktemp -d /tmp/a2-cookbook.XXXXXX)
chmod 0755 "$work"
bouncer_started=0
original_listen=${A2_PGLISTEN:-}
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ $bouncer_started -eq 1 ]]; then
		bash scripts/pgbouncer.sh stop || a2_warn "cookbook: could not stop pgbouncer"
	fi
	# The cluster as the caller had it (a program may have died mid-restart).
	A2_PGLISTEN=$original_listen bash scripts/cluster.sh start >/dev/null 2>&1 ||
		a2_warn "cookbook: could not restart the cluster"
	rm -rf -- "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

a2_log "cookbook: npm ci in examples/clients/node"
(cd "$examples/node" && npm ci --no-audit --no-fund --loglevel=error)

jars=/usr/share/java
classpath=$work/java:$jars/postgresql.jar:$jars/HikariCP.jar:$jars/slf4j-api.jar:$jars/slf4j-nop.jar
classpath+=:$jars/jackson-databind.jar:$jars/jackson-core.jar:$jars/jackson-annotations.jar
a2_log "cookbook: javac"
mkdir -p "$work/java"
javac -Xlint:all -Werror -d "$work/java" -cp "$classpath" "$examples"/java/*.java

a2_log "cookbook: go build (GOPATH=/usr/share/gocode, offline)"
# go needs a build cache; keep it between runs (pgx takes a while cold).
export GOCACHE=${GOCACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/go-build}
for prog in pq pgx; do
	(cd "$examples/go/$prog" && env GO111MODULE=off GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off \
		go build -o "$work/go-$prog" .)
done
a2_log "cookbook: installs and builds took $((SECONDS - started)) s"

# --- 2. the cluster on TCP, and pgbouncer -----------------------------------

export A2_PGLISTEN=127.0.0.1
bash scripts/cluster.sh start
bouncer_started=1
bash scripts/pgbouncer.sh start
eval "$(bash scripts/pgbouncer.sh env)"

direct_url="postgresql://${PGUSER:-postgres}@127.0.0.1:$A2_PGPORT/$db?sslmode=disable"
pooled_url="postgresql://${PGUSER:-postgres}@127.0.0.1:$A2_PGBOUNCER_PORT/$db?sslmode=disable"
jdbc_direct="jdbc:postgresql://127.0.0.1:$A2_PGPORT/$db?user=${PGUSER:-postgres}"
jdbc_pooled="jdbc:postgresql://127.0.0.1:$A2_PGBOUNCER_PORT/$db?user=${PGUSER:-postgres}"
export A2_RESTART="bash '$A2_ROOT/scripts/cluster.sh' stop >&2 && bash '$A2_ROOT/scripts/cluster.sh' start >&2"

command_of() {
	case $1 in
	psql) echo "bash $examples/psql/run.sh" ;;
	psycopg) echo "/usr/bin/python3 $examples/python/psycopg_worker.py" ;;
	asyncpg) echo "/usr/bin/python3 $examples/python/asyncpg_worker.py" ;;
	node-postgres) echo "node $examples/node/pg.mjs" ;;
	postgres.js) echo "node $examples/node/postgresjs.mjs" ;;
	kysely) echo "node $examples/node/kysely.mjs" ;;
	drizzle) echo "node $examples/node/drizzle.mjs" ;;
	pgjdbc) echo "java -cp $classpath PlainWorker" ;;
	hikaricp) echo "java -cp $classpath HikariWorker" ;;
	lib-pq) echo "$work/go-pq" ;;
	pgx) echo "$work/go-pgx" ;;
	*) return 1 ;;
	esac
}

fresh_db() {
	dropdb --if-exists --force "$db" &&
		createdb "$db" &&
		psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2' \
			-c 'CREATE TABLE shipments (order_id text NOT NULL, sku text NOT NULL, qty integer NOT NULL)'
}

# What the transcript claims, checked in the database: nothing unfinished,
# and the shipments (2 for order-1, 40 for the burst; psql has no burst).
check_db() {
	local want=$1 state
	state=$(psql -X -At -d "$db" -c "SELECT (SELECT count(*) FROM a2_events WHERE processed_at IS NULL)
		|| ' ' || (SELECT count(*) FROM shipments) || ' ' || (SELECT max(idx) FROM a2_events WHERE session_id = 'order-1')")
	[[ $state == "$want" ]] || {
		a2_warn "cookbook: database holds 'unfinished shipments last-index' = '$state', not '$want'"
		return 1
	}
}

results=()
failed=0
for prog in "${programs[@]}"; do
	cmd=$(command_of "$prog") || a2_die "cookbook: no program named $prog"
	expected=$examples/expected.txt
	want_db="0 42 5"
	if [[ $prog == psql ]]; then
		expected=$examples/psql/expected.txt
		want_db="0 2 4"
	fi
	for mode in "${modes[@]}"; do
		a2_log "cookbook: $prog ($mode)"
		bash scripts/cluster.sh start >/dev/null 2>&1
		fresh_db
		if [[ $mode == pgbouncer ]]; then
			url=$pooled_url jdbc=$jdbc_pooled behind=1
		else
			url=$direct_url jdbc=$jdbc_direct behind=0
		fi
		t0=$SECONDS
		rc=0
		# shellcheck disable=SC2086 # cmd is a command line
		A2_URL=$url A2_LISTEN_URL=$direct_url A2_JDBC_URL=$jdbc A2_JDBC_LISTEN_URL=$jdbc_direct \
			A2_PGBOUNCER=$behind timeout 180 $cmd >"$work/out" 2>"$work/err" || rc=$?
		took=$((SECONDS - t0))
		ok=1
		if [[ $rc -ne 0 ]]; then
			a2_warn "cookbook: $prog ($mode) exited with $rc"
			ok=0
		fi
		if ! diff -u "$expected" "$work/out" >"$work/diff"; then
			a2_warn "cookbook: $prog ($mode): the transcript differs from $expected"
			cat "$work/diff" >&2
			ok=0
		fi
		bash scripts/cluster.sh start >/dev/null 2>&1
		check_db "$want_db" || ok=0
		if [[ $ok -eq 1 ]]; then
			results+=("$(printf 'PASS  %-14s %-9s %3d s' "$prog" "$mode" "$took")")
		else
			sed 's/^/    stderr: /' "$work/err" >&2
			results+=("$(printf 'FAIL  %-14s %-9s %3d s' "$prog" "$mode" "$took")")
			failed=$((failed + 1))
		fi
	done
done

printf '%s\n' "${results[@]}"
a2_log "cookbook: ${#results[@]} runs, $failed failed, $((SECONDS - started)) s in all"
if [[ $failed -ne 0 ]]; then
	a2_warn "cookbook: FAILED; database $db kept for inspection"
	exit 1
fi
dropdb --if-exists --force "$db"
a2_log "cookbook: passed"
