#!/usr/bin/env bash
#
# A throwaway pgbouncer (Debian's package) in front of scripts/cluster.sh's cluster.
#
#   scripts/pgbouncer.sh start   write the config, start, wait until it accepts
#   scripts/pgbouncer.sh stop    stop it by its pid file; succeeds if not running
#   scripts/pgbouncer.sh env     print shell lines:  eval "$(scripts/pgbouncer.sh env)"
#
# It fronts the cluster that A2_PGDATA/A2_PGPORT name (see scripts/cluster.sh,
# whose unix socket it connects to), listens on 127.0.0.1 port
# A2_PGBOUNCER_PORT (default A2_PGPORT+1) and nowhere else, and pools in
# transaction mode with default_pool_size=2, as a production pooler in front
# of a2 would.  Every database name is forwarded ("*" entry).  Clients need no
# password: auth_type=trust, and a role is accepted when it exists in the
# cluster (pgbouncer looks it up through auth_query as postgres).  Only
# local clients can reach 127.0.0.1; this is for tests, never production.
#
# It runs as the postgres OS user; its config, pid file and log live in
# $(dirname A2_PGDATA)/pgbouncer.  `start` always rewrites the config and, if
# one is already running from that directory, restarts it.
#
# `env` prints A2_PGBOUNCER_PORT and A2_PGBOUNCER_URL, a libpq connection
# URI for user postgres and database postgres through the pooler.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '3,7s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

[[ $# -eq 1 ]] || usage
cmd=$1

A2_PGDATA=${A2_PGDATA:-/tmp/a2-pg/data}
A2_PGPORT=${A2_PGPORT:-54329}
A2_PGDATA=$(realpath -m -- "$A2_PGDATA")
[[ -n $A2_PGDATA && $A2_PGDATA != / ]] || a2_die "A2_PGDATA must not be /"
case $A2_PGDATA in
*"'"* | *$'\n'* | *\\* | *' '*) a2_die "A2_PGDATA must not contain quotes, backslashes, spaces or newlines" ;;
esac
if ! [[ $A2_PGPORT =~ ^[1-9][0-9]{3,4}$ ]] || ((A2_PGPORT < 1024 || A2_PGPORT > 65535)); then
	a2_die "A2_PGPORT must be a port number in 1024..65535, not '$A2_PGPORT'"
fi
A2_PGBOUNCER_PORT=${A2_PGBOUNCER_PORT:-$((A2_PGPORT + 1))}
if ! [[ $A2_PGBOUNCER_PORT =~ ^[1-9][0-9]{3,4}$ ]] ||
	((A2_PGBOUNCER_PORT < 1024 || A2_PGBOUNCER_PORT > 65535)); then
	a2_die "A2_PGBOUNCER_PORT must be a port number in 1024..65535, not '$A2_PGBOUNCER_PORT'"
fi

base=$(dirname -- "$A2_PGDATA")
sockdir=$base/sock
dir=$base/pgbouncer
ini=$dir/pgbouncer.ini
users=$dir/userlist.txt
pidfile=$dir/pgbouncer.pid
logfile=$dir/pgbouncer.log


# The pid in the pid file, if that process is alive and is a pgbouncer.
live_pid() {
	local pid
	pid=$(sed -n 1p "$pidfile" 2>/dev/null || true)
	[[ $pid =~ ^[0-9]+$ && -r /proc/$pid/stat ]] || return 1
	[[ $(cat "/proc/$pid/comm" 2>/dev/null) == pgbouncer ]] || return 1
	local state
	state=$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)
	[[ -n $state && $state != Z && $state != X ]] || return 1
	echo "$pid"
}

settings() {
	cat <<EOF
; Written by scripts/pgbouncer.sh on every start; edits here are overwritten.
[databases]
* = host=$sockdir port=$A2_PGPORT

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = $A2_PGBOUNCER_PORT
unix_socket_dir =
pool_mode = transaction
default_pool_size = 2
max_client_conn = 200
auth_type = trust
auth_file = $users
auth_user = postgres
auth_query = SELECT usename, passwd FROM pg_catalog.pg_shadow WHERE usename = \$1
ignore_startup_parameters = extra_float_digits
server_reset_query = DISCARD ALL
pidfile = $pidfile
logfile = $logfile
admin_users = postgres
EOF
}

do_stop() {
	local pid i
	pid=$(live_pid) || {
		rm -f -- "$pidfile"
		return 0
	}
	a2_log "pgbouncer: stopping pid $pid"
	kill -INT "$pid" 2>/dev/null || true
	for ((i = 0; i < 100; i++)); do
		live_pid >/dev/null || {
			rm -f -- "$pidfile"
			return 0
		}
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		live_pid >/dev/null || {
			rm -f -- "$pidfile"
			return 0
		}
		sleep 0.1
	done
	a2_die "pgbouncer: pid $pid did not stop"
}

do_start() {
	command -v pgbouncer >/dev/null 2>&1 || [[ -x /usr/sbin/pgbouncer ]] ||
		a2_die "pgbouncer is not installed; run scripts/deps.sh"
	local bin
	bin=$(command -v pgbouncer 2>/dev/null || echo /usr/sbin/pgbouncer)
	id postgres >/dev/null 2>&1 || a2_die "no postgres OS user; run scripts/deps.sh"
	[[ -S $sockdir/.s.PGSQL.$A2_PGPORT ]] ||
		a2_die "no cluster on $sockdir port $A2_PGPORT; run scripts/cluster.sh start first"

	do_stop
	if [[ ! -d $dir ]]; then
		mkdir -p -- "$dir"
		chown postgres:postgres -- "$dir"
		chmod 0700 -- "$dir"
	elif ! as_postgres test -w "$dir" -a -x "$dir"; then
		a2_die "$dir exists but the postgres user cannot write to it"
	fi
	settings | as_postgres tee "$ini" >/dev/null
	# auth_user itself must be in the auth file; every other role comes
	# from auth_query.  trust ignores the (empty) password.
	printf '"postgres" ""\n' | as_postgres tee "$users" >/dev/null

	a2_log "pgbouncer: starting on 127.0.0.1:$A2_PGBOUNCER_PORT -> $sockdir port $A2_PGPORT (log $logfile)"
	if ! as_postgres "$bin" -d -q "$ini"; then
		tail -n 20 -- "$logfile" >&2 2>/dev/null || true
		a2_die "pgbouncer: did not start"
	fi
	local i
	for ((i = 0; i < 100; i++)); do
		if live_pid >/dev/null &&
			psql -X -q -At "host=127.0.0.1 port=$A2_PGBOUNCER_PORT user=postgres dbname=postgres connect_timeout=2" \
				-c 'SELECT 1' >/dev/null 2>&1; then
			a2_log "pgbouncer: ready (pid $(live_pid))"
			return 0
		fi
		sleep 0.1
	done
	tail -n 20 -- "$logfile" >&2 2>/dev/null || true
	do_stop || true
	a2_die "pgbouncer: started but not accepting connections on 127.0.0.1:$A2_PGBOUNCER_PORT"
}

do_env() {
	printf 'export A2_PGBOUNCER_PORT=%q\n' "$A2_PGBOUNCER_PORT"
	printf 'export A2_PGBOUNCER_URL=%q\n' "postgresql://postgres@127.0.0.1:$A2_PGBOUNCER_PORT/postgres"
}

case $cmd in
start)
	a2_find_pg_config
	do_start
	;;
stop) do_stop ;;
env) do_env ;;
-h | --help | help) usage ;;
*) usage ;;
esac
