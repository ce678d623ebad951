#!/usr/bin/env bash
#
# test/citus/cluster.sh: a throwaway 3-node Citus cluster on loopback.
#
#   test/citus/cluster.sh start   initdb (if needed) and start coordinator + 2 workers,
#                                 CREATE EXTENSION citus, add the workers
#   test/citus/cluster.sh start-spare
#                                 initdb (if needed) and start a third worker, w3,
#                                 with CREATE EXTENSION citus, not added to the
#                                 cluster (test/citus/moves.sh adds it)
#   test/citus/cluster.sh stop    stop every node (by data directory)
#   test/citus/cluster.sh env     shell lines: PGHOST/PGPORT of the coordinator, A2_CITUS_*
#   test/citus/cluster.sh destroy stop and delete the data directories
#
# The nodes run as the postgres OS user, listen on 127.0.0.1 only, trust
# loopback and local clients, and preload 'citus,a2' (Citus must come
# first; a2 is preloaded so that delegated writes use its notifier and a
# transaction Citus commits with two-phase commit can PREPARE), with
# wal_level = logical (shard moves in modes auto and force_logical use
# logical replication).
#
# Environment:
#   A2_CITUS_BASE  parent of the three data directories (default /tmp/a2-citus)
#   A2_CITUS_PORT  the coordinator's port; the workers take the next two
#                  and the spare worker the one after (default 54340)
#   A2_CITUS_FSYNC fsync setting of every node (default off: the tests
#                  check behaviour, not durability; bench/citus.sh uses on)
#   A2_CITUS_WAL_LEVEL wal_level of every node (default logical, which shard
#                  moves in modes auto and force_logical need)
#
# Needs Citus installed in the PostgreSQL that PG_CONFIG names; the caller
# (test/citus/run.sh) checks that first.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"

[[ $# -eq 1 ]] || { sed -n '3,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2; }
cmd=$1

base=$(realpath -m -- "${A2_CITUS_BASE:-/tmp/a2-citus}")
port0=${A2_CITUS_PORT:-54340}
[[ $port0 =~ ^[1-9][0-9]{3,4}$ ]] && ((port0 >= 1024 && port0 <= 65532)) ||
	a2_die "A2_CITUS_PORT must be a port number in 1024..65532, not '$port0'"
[[ -n $base && $base != / ]] || a2_die "A2_CITUS_BASE must not be /"
sockdir=$base/sock
nodes=(coord w1 w2)
all_nodes=(coord w1 w2 w3)
marker=a2-citus.conf


node_port() {
	local i
	for i in 0 1 2 3; do
		if [[ ${all_nodes[$i]} == "$1" ]]; then
			echo $((port0 + i))
		fi
	done
}

settings() {
	cat <<EOF
# Written by test/citus/cluster.sh on every start.
listen_addresses = '127.0.0.1'
port = $1
unix_socket_directories = '$sockdir'
shared_preload_libraries = 'citus,a2'
max_connections = 100
max_prepared_transactions = 40
wal_level = ${A2_CITUS_WAL_LEVEL:-logical}
shared_buffers = 64MB
fsync = ${A2_CITUS_FSYNC:-off}
timezone = 'UTC'
log_timezone = 'UTC'
lc_messages = 'C'
log_line_prefix = '%m [%p] %q%u@%d '
citus.node_conninfo = 'sslmode=disable'
citus.log_remote_commands = off
EOF
}

psql_node() {
	local port=$1
	shift
	"$PGBIN/psql" -X -q -v ON_ERROR_STOP=1 -h "$sockdir" -p "$port" -U postgres -d postgres "$@"
}

# start_node NAME: initdb (if needed) and start one node.
start_node() {
	local n=$1 port dir
	mkdir -p -- "$base" "$sockdir"
	chown postgres:postgres -- "$base" "$sockdir"
	chmod 0700 -- "$sockdir"
	port=$(node_port "$n")
	dir=$base/$n
	if [[ -e $dir && ! -f $dir/$marker ]]; then
		a2_die "$dir exists but was not made by test/citus/cluster.sh"
	fi
	if [[ ! -e $dir ]]; then
		as_postgres "$PGBIN/initdb" --pgdata="$dir" --username=postgres --auth=trust \
			--encoding=UTF8 --locale=C >"$base/$n.initdb.out" 2>&1 ||
			{ cat "$base/$n.initdb.out" >&2; a2_die "initdb $dir failed"; }
		printf "\ninclude_if_exists = '%s'\n" "$marker" | as_postgres tee -a "$dir/postgresql.conf" >/dev/null
		printf 'host all all 127.0.0.1/32 trust\n' | as_postgres tee -a "$dir/pg_hba.conf" >/dev/null
	fi
	settings "$port" | as_postgres tee "$dir/$marker" >/dev/null
	if ! as_postgres "$PGBIN/pg_ctl" status -D "$dir" >/dev/null 2>&1; then
		as_postgres "$PGBIN/pg_ctl" start -D "$dir" -l "$base/$n.log" -w -t 120 -s ||
			{ tail -n 30 "$base/$n.log" >&2; a2_die "node $n did not start"; }
	fi
}

do_start() {
	local n
	for n in "${nodes[@]}"; do
		start_node "$n"
	done
	for n in "${nodes[@]}"; do
		psql_node "$(node_port "$n")" -c 'CREATE EXTENSION IF NOT EXISTS citus'
	done
	psql_node "$port0" \
		-c "SELECT pg_catalog.citus_set_coordinator_host('127.0.0.1', $port0)" \
		-c "SELECT pg_catalog.citus_add_node('127.0.0.1', $((port0 + 1)))" \
		-c "SELECT pg_catalog.citus_add_node('127.0.0.1', $((port0 + 2)))" >/dev/null
	a2_log "citus: coordinator 127.0.0.1:$port0, workers :$((port0 + 1)) :$((port0 + 2)) (logs in $base)"
}

do_stop() {
	local n dir
	for n in "${all_nodes[@]}"; do
		dir=$base/$n
		[[ -f $dir/$marker ]] || continue
		if as_postgres "$PGBIN/pg_ctl" status -D "$dir" >/dev/null 2>&1; then
			as_postgres "$PGBIN/pg_ctl" stop -D "$dir" -m fast -w -t 60 -s ||
				as_postgres "$PGBIN/pg_ctl" stop -D "$dir" -m immediate -w -t 60 -s || true
		fi
	done
}

case $cmd in
start)
	a2_find_pg_config
	do_start
	;;
start-spare)
	a2_find_pg_config
	start_node w3
	psql_node "$(node_port w3)" -c 'CREATE EXTENSION IF NOT EXISTS citus'
	;;
stop)
	a2_find_pg_config
	do_stop
	;;
destroy)
	a2_find_pg_config
	do_stop
	for n in "${all_nodes[@]}"; do
		[[ -f $base/$n/$marker ]] && rm -rf -- "${base:?}/$n"
	done
	rm -rf -- "$sockdir"
	;;
env)
	printf 'export PGHOST=%q PGPORT=%q PGUSER=postgres PGDATABASE=postgres\n' "$sockdir" "$port0"
	printf 'export A2_CITUS_SOCK=%q A2_CITUS_COORD=%q A2_CITUS_W1=%q A2_CITUS_W2=%q A2_CITUS_W3=%q A2_CITUS_LOGS=%q\n' \
		"$sockdir" "$port0" "$((port0 + 1))" "$((port0 + 2))" "$((port0 + 3))" "$base"
	;;
*) a2_die "unknown command '$cmd'" ;;
esac
