#!/usr/bin/env bash
#
# A throwaway PostgreSQL cluster for development and tests, of the major
# that PG_CONFIG names (scripts/lib.sh: 15 on the host by default).
#
#   scripts/cluster.sh start    initdb if needed, start, wait until ready
#   scripts/cluster.sh stop     fast shutdown; succeeds if it is not running
#   scripts/cluster.sh env      print shell lines:  eval "$(scripts/cluster.sh env)"
#   scripts/cluster.sh status   exit 0 if running, 3 if not
#   scripts/cluster.sh destroy  stop and delete the data directory
#
# The server runs as the postgres OS user (PostgreSQL refuses root), listens
# only on a unix socket in a private directory, and trusts local clients, who
# connect as PGUSER=postgres.
#
# Settings (environment):
#   A2_PGDATA  data directory            (default /tmp/a2-pg/data)
#   A2_PGPORT  port, names the socket    (default 54329)
#   A2_PRELOAD 1 = shared_preload_libraries = 'a2', so the background
#              notifier runs (default); 0 = not preloaded, the in-transaction
#              NOTIFY path of a plain CREATE EXTENSION
#   A2_NOTIFY_QUEUE_SIZE  a2.notify_queue_size (default: a2's own, 4096)
#   A2_PGLISTEN  listen_addresses (default empty: the unix socket only);
#              127.0.0.1 lets TCP-only clients (JDBC) connect, trusted
# The socket directory and the server log live next to the data directory:
# $(dirname A2_PGDATA)/sock and $(dirname A2_PGDATA)/log.  A second cluster
# (crash tests, dump/restore) therefore needs its own parent directory and
# port, e.g. A2_PGDATA=/tmp/a2-pg2/data A2_PGPORT=54330.
#
# `start` is idempotent: a cluster that is already running with the wanted
# port and settings is reused; one running with other settings is restarted;
# a stale postmaster.pid left by a crash is handled by PostgreSQL itself.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '3,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

[[ $# -eq 1 ]] || usage
cmd=$1

A2_PGDATA=${A2_PGDATA:-/tmp/a2-pg/data}
A2_PGPORT=${A2_PGPORT:-54329}
A2_PRELOAD=${A2_PRELOAD:-1}
[[ $A2_PRELOAD == 0 || $A2_PRELOAD == 1 ]] || a2_die "A2_PRELOAD must be 0 or 1, not '$A2_PRELOAD'"
A2_NOTIFY_QUEUE_SIZE=${A2_NOTIFY_QUEUE_SIZE:-}
[[ -z $A2_NOTIFY_QUEUE_SIZE || $A2_NOTIFY_QUEUE_SIZE =~ ^[1-9][0-9]*$ ]] ||
	a2_die "A2_NOTIFY_QUEUE_SIZE must be a positive number, not '$A2_NOTIFY_QUEUE_SIZE'"

A2_PGLISTEN=${A2_PGLISTEN:-}
[[ $A2_PGLISTEN =~ ^[0-9A-Za-z.:,\ -]*$ ]] ||
	a2_die "A2_PGLISTEN must be a list of host names or addresses, not '$A2_PGLISTEN'"

# Absolute and free of symlinks: it is compared with /proc/PID/cwd below.
A2_PGDATA=$(realpath -m -- "$A2_PGDATA")
[[ -n $A2_PGDATA && $A2_PGDATA != / ]] || a2_die "A2_PGDATA must not be /"
case $A2_PGDATA in
*"'"* | *$'\n'* | *\\*) a2_die "A2_PGDATA must not contain quotes, backslashes or newlines" ;;
esac
if ! [[ $A2_PGPORT =~ ^[1-9][0-9]{3,4}$ ]] || ((A2_PGPORT < 1024 || A2_PGPORT > 65535)); then
	a2_die "A2_PGPORT must be a port number in 1024..65535, not '$A2_PGPORT'"
fi

base=$(dirname -- "$A2_PGDATA")
sockdir=$base/sock
logfile=$base/log
initdb_tmp=$A2_PGDATA.initdb-tmp
# Our settings live in this file inside the data directory.  Its presence
# also marks the directory as one this script created, so `destroy` and
# `start` never touch a data directory they do not own.
conf_name=a2-cluster.conf
conf=$A2_PGDATA/$conf_name

# Unix socket paths are limited to 107 bytes.
sockpath=$sockdir/.s.PGSQL.$A2_PGPORT
((${#sockpath} <= 107)) ||
	a2_die "socket path $sockpath is longer than 107 bytes; use a shorter A2_PGDATA"


# Processes whose working directory is the data directory: the postmaster
# and its children all chdir there.  Needs root (or postgres) to read
# /proc/PID/cwd; returns nothing otherwise.
cluster_pids() {
	local d
	for d in /proc/[0-9]*; do
		[[ $(readlink "$d/cwd" 2>/dev/null) == "$A2_PGDATA" ]] && echo "${d#/proc/}"
	done
	return 0
}

# Is process PID alive?  A zombie (a killed process whose parent, often PID
# 1 in a container, has not reaped it yet) is not, although kill -0 and
# hence pg_ctl status and PostgreSQL's own lock-file checks think it is.
pid_alive() {
	local state
	[[ $1 =~ ^[0-9]+$ && -r /proc/$1/stat ]] || return 1
	state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
	[[ -n $state && $state != Z && $state != X ]]
}

# Is the postmaster named in postmaster.pid alive?  Besides zombies, guard
# against an unrelated process that reused the pid after a reboot by
# checking its working directory when we may read it.
running() {
	local pid cwd
	pid=$(pid_line 1)
	pid_alive "$pid" || return 1
	if cwd=$(readlink "/proc/$pid/cwd" 2>/dev/null); then
		[[ $cwd == "$A2_PGDATA" ]]
	else
		as_postgres "$PGBIN/pg_ctl" status -D "$A2_PGDATA" >/dev/null 2>&1
	fi
}

# After a crash (kill -9 of the postmaster) its children exit on their own
# within moments, and PostgreSQL refuses to start while they still hold the
# old shared memory, or while postmaster.pid or the socket lock file names a
# zombie.  Wait for the children, then remove the stale lock files
# ourselves: only root or postgres can see the children, so only they do.
clear_stale_locks() {
	local sock_lock=$sockpath.lock
	[[ -f $A2_PGDATA/postmaster.pid || -f $sock_lock ]] || return 0
	[[ $EUID -eq 0 || $(id -un) == postgres ]] || return 0
	local i left=
	for ((i = 0; i < 120; i++)); do
		left=$(cluster_pids)
		[[ -z $left ]] && break
		sleep 0.5
	done
	if [[ -n $left ]]; then
		a2_die "cluster: processes of a dead server still use $A2_PGDATA: $(echo "$left" | tr '\n' ' ')"
	fi
	if [[ -f $A2_PGDATA/postmaster.pid ]]; then
		a2_log "cluster: removing the stale postmaster.pid of a crashed server"
		rm -f -- "$A2_PGDATA/postmaster.pid"
	fi
	# The socket lock may belong to a live server of another data directory
	# that shares this socket directory and port; leave that one alone.
	if [[ -f $sock_lock ]] && ! pid_alive "$(sed -n 1p "$sock_lock" 2>/dev/null)"; then
		rm -f -- "$sock_lock" "$sockpath"
	fi
}

# Line N of postmaster.pid (4 = port, 5 = socket directory, 8 = status).
pid_line() {
	sed -n "${1}p" "$A2_PGDATA/postmaster.pid" 2>/dev/null || true
}

settings() {
	cat <<EOF
# Written by scripts/cluster.sh on every start; edits here are overwritten.
listen_addresses = '$A2_PGLISTEN'
port = $A2_PGPORT
unix_socket_directories = '$sockdir'
max_connections = 100
# two-phase commit tests (PREPARE TRANSACTION after an append)
max_prepared_transactions = 10
shared_buffers = 128MB
# Crash tests kill the server and rely on committed data surviving.
fsync = on
synchronous_commit = on
full_page_writes = on
timezone = 'UTC'
log_timezone = 'UTC'
lc_messages = 'C'
logging_collector = off
log_line_prefix = '%m [%p] %q%u@%d '
log_lock_waits = on
EOF
	if [[ $A2_PRELOAD == 1 ]]; then
		echo "shared_preload_libraries = 'a2'"
	fi
	if [[ -n $A2_NOTIFY_QUEUE_SIZE ]]; then
		echo "a2.notify_queue_size = $A2_NOTIFY_QUEUE_SIZE"
	fi
}

# A preloaded a2 is loaded once, by the postmaster: a library installed
# after the server started is not the one it runs.
library_newer_than_server() {
	[[ $A2_PRELOAD == 1 ]] || return 1
	local lib
	lib=$("$PG_CONFIG" --pkglibdir)/a2.so
	[[ -f $lib && $lib -nt $A2_PGDATA/postmaster.pid ]]
}

# Create DIR (mode MODE, owned by postgres) unless it exists; an existing one
# must already be writable by postgres: we never chown what we did not make.
ensure_dir() {
	local dir=$1 mode=$2
	if [[ ! -d $dir ]]; then
		mkdir -p -- "$dir"
		chown postgres:postgres -- "$dir"
		chmod "$mode" -- "$dir"
	elif ! as_postgres test -w "$dir" -a -x "$dir"; then
		a2_die "$dir exists but the postgres user cannot write to it; remove it or pick another A2_PGDATA"
	fi
}

do_initdb() {
	local locale=C
	# C.UTF-8 ships with Debian's libc-bin; fall back to plain C elsewhere.
	if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then
		locale=C.UTF-8
	fi
	a2_log "cluster: initdb $A2_PGDATA (UTF8, locale $locale)"
	# Initialise beside the target and rename, so an interrupted initdb
	# never leaves a half-made data directory at $A2_PGDATA.
	rm -rf -- "$initdb_tmp"
	as_postgres "$PGBIN/initdb" --pgdata="$initdb_tmp" --username=postgres \
		--auth=trust --encoding=UTF8 --locale="$locale" --data-checksums \
		>"$base/initdb.out" 2>&1 || {
		cat "$base/initdb.out" >&2
		rm -rf -- "$initdb_tmp"
		a2_die "initdb failed"
	}
	printf "\n# a2 test settings\ninclude_if_exists = '%s'\n" "$conf_name" |
		as_postgres tee -a "$initdb_tmp/postgresql.conf" >/dev/null
	settings | as_postgres tee "$initdb_tmp/$conf_name" >/dev/null
	mv -- "$initdb_tmp" "$A2_PGDATA"
}

do_start() {
	id postgres >/dev/null 2>&1 ||
		a2_die "no postgres OS user; run scripts/deps.sh (it installs postgresql-15)"
	[[ -x $PGBIN/pg_ctl ]] || a2_die "$PGBIN/pg_ctl missing; run scripts/deps.sh"

	ensure_dir "$base" 0755
	# Only root and postgres may use the socket: the cluster trusts anyone
	# who can reach it.  Other users' clients need a 0755 socket directory.
	if [[ $EUID -eq 0 ]]; then
		ensure_dir "$sockdir" 0700
	else
		ensure_dir "$sockdir" 0755
	fi
	if [[ ! -e $logfile ]]; then
		install -o postgres -g postgres -m 0640 /dev/null "$logfile"
	elif ! as_postgres test -w "$logfile"; then
		a2_die "$logfile exists but the postgres user cannot write to it"
	fi

	if [[ -e $A2_PGDATA && ! -f $conf ]]; then
		if [[ -d $A2_PGDATA ]] && [[ -z $(ls -A -- "$A2_PGDATA") ]]; then
			rmdir -- "$A2_PGDATA"
		else
			a2_die "$A2_PGDATA exists but was not made by scripts/cluster.sh (no $conf_name); remove it or pick another A2_PGDATA"
		fi
	fi
	if [[ ! -e $A2_PGDATA ]]; then
		do_initdb
	fi
	local version
	version=$(cat "$A2_PGDATA/PG_VERSION" 2>/dev/null || true)
	[[ $version == "$A2_PG_MAJOR" ]] ||
		a2_die "$A2_PGDATA holds a PostgreSQL '${version:-?}' cluster, not $A2_PG_MAJOR; run: scripts/cluster.sh destroy"

	local want changed=0
	want=$(settings)
	if [[ $(cat "$conf") != "$want" ]]; then
		printf '%s\n' "$want" | as_postgres tee "$conf" >/dev/null
		changed=1
	fi

	if running; then
		if library_newer_than_server; then
			a2_log "cluster: a2.so was installed after the server started; restarting it"
			do_stop
		elif [[ $changed -eq 0 && $(pid_line 4) == "$A2_PGPORT" &&
			$(pid_line 5) == "$sockdir" ]] &&
			"$PGBIN/pg_isready" -q -h "$sockdir" -p "$A2_PGPORT" -t 10; then
			a2_log "cluster: reusing the running cluster (pid $(pid_line 1), port $A2_PGPORT)"
			return 0
		else
			a2_log "cluster: a cluster with other settings is running on $A2_PGDATA; restarting it"
			do_stop
		fi
	fi
	if ! running; then
		clear_stale_locks
	fi

	a2_log "cluster: starting $A2_PGDATA on port $A2_PGPORT (socket $sockdir, log $logfile)"
	if ! as_postgres "$PGBIN/pg_ctl" start -D "$A2_PGDATA" -l "$logfile" \
		-w -t "${A2_PG_START_TIMEOUT:-300}" -s; then
		printf -- '--- last lines of %s ---\n' "$logfile" >&2
		tail -n 40 -- "$logfile" >&2 || true
		a2_die "cluster: the server did not start"
	fi
	local i
	for ((i = 0; i < 60; i++)); do
		if "$PGBIN/pg_isready" -q -h "$sockdir" -p "$A2_PGPORT" -d postgres -U postgres; then
			a2_log "cluster: ready (pid $(pid_line 1))"
			return 0
		fi
		sleep 1
	done
	tail -n 40 -- "$logfile" >&2 || true
	a2_die "cluster: started but not accepting connections on $sockpath"
}

do_stop() {
	running || return 0
	a2_log "cluster: stopping $A2_PGDATA"
	if as_postgres "$PGBIN/pg_ctl" stop -D "$A2_PGDATA" -m fast -w -t 60 -s; then
		return 0
	fi
	a2_warn "cluster: fast shutdown timed out; using immediate shutdown"
	as_postgres "$PGBIN/pg_ctl" stop -D "$A2_PGDATA" -m immediate -w -t 60 -s ||
		a2_die "cluster: could not stop the server in $A2_PGDATA"
}

do_destroy() {
	if [[ -e $A2_PGDATA && ! -f $conf ]]; then
		a2_die "refusing to delete $A2_PGDATA: it was not made by scripts/cluster.sh (no $conf_name)"
	fi
	if [[ -n ${PGBIN:-} ]]; then
		do_stop
	fi
	rm -rf -- "$A2_PGDATA" "$initdb_tmp"
	rm -f -- "$base/initdb.out"
	rmdir -- "$sockdir" 2>/dev/null || true
	a2_log "cluster: removed $A2_PGDATA (the log $logfile is kept)"
}

do_env() {
	# PG* are for clients; A2_PGDATA/A2_PGPORT let child scripts address the
	# same cluster with scripts/cluster.sh; A2_PGLOG is informational only.
	local name value
	# Variables that would send clients elsewhere or change their session.
	echo 'unset PGHOSTADDR PGSERVICE PGSERVICEFILE PGOPTIONS PGSSLMODE PGTZ PGDATESTYLE PGCLIENTENCODING'
	for name in PGHOST PGPORT PGUSER PGDATABASE A2_PGDATA A2_PGPORT A2_PGLOG; do
		case $name in
		PGHOST) value=$sockdir ;;
		PGPORT | A2_PGPORT) value=$A2_PGPORT ;;
		PGUSER) value=postgres ;;
		PGDATABASE) value=postgres ;;
		A2_PGDATA) value=$A2_PGDATA ;;
		A2_PGLOG) value=$logfile ;;
		esac
		printf 'export %s=%q\n' "$name" "$value"
	done
}

case $cmd in
start)
	a2_find_pg_config
	do_start
	;;
stop)
	# Nothing can be running without a data directory or a postgres user;
	# say so before needing pg_config, so stop works on a bare machine too.
	if [[ -d $A2_PGDATA ]] && id postgres >/dev/null 2>&1; then
		a2_find_pg_config
		do_stop
	fi
	;;
status)
	a2_find_pg_config
	if running; then
		echo "running (pid $(pid_line 1), port $(pid_line 4), socket $(pid_line 5))"
	else
		echo "not running"
		exit 3
	fi
	;;
destroy)
	if [[ -d $A2_PGDATA ]] && id postgres >/dev/null 2>&1; then
		a2_find_pg_config
	fi
	do_destroy
	;;
env) do_env ;;
-h | --help | help) usage ;;
*) usage ;;
esac
