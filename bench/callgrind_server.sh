#!/usr/bin/env bash
#
# bench/callgrind_server.sh start|stop -- run the cluster of A2_PGDATA /
# A2_PGPORT (made by scripts/cluster.sh) under valgrind's callgrind, so
# that bench/bytes.sh counts instructions (BYTES_CALLGRIND_DIR) instead of
# timing CPU:
#
#   A2_PGDATA=... A2_PGPORT=... bash bench/bytes.sh          # once: builds, configures
#   A2_PGDATA=... A2_PGPORT=... bash bench/callgrind_server.sh start
#   BYTES_CALLGRIND_DIR=$(dirname $A2_PGDATA)/callgrind A2_BYTES_SIZES=0 \
#     A2_BYTES_OPS=200 A2_BYTES_LABEL=ir-... bash bench/bytes.sh
#   A2_PGDATA=... A2_PGPORT=... bash bench/callgrind_server.sh stop
#
# Every server process runs under callgrind (--trace-children), many
# times slower.  Instructions are collected only inside PostgresMain(),
# i.e. in backends (not in the postmaster, the notifier or the other
# auxiliary processes); each backend writes its count when it exits
# (cg.<pid>).  bytes.sh runs each operation in two sessions, warm-up plus
# N calls and warm-up alone, and divides the difference by N: what is
# left is the N calls (statement, commit, and the wait for the next
# statement between them).

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"

: "${A2_PGDATA:?}" "${A2_PGPORT:?}"
dir=$(dirname "$A2_PGDATA")/callgrind
case ${1:-} in
start)
	bash "$A2_ROOT/scripts/cluster.sh" stop
	mkdir -p "$dir"
	chown postgres:postgres "$dir"
	rm -f "$dir"/cg.*
	runuser -u postgres -- valgrind --tool=callgrind --trace-children=yes \
		--callgrind-out-file="$dir/cg.%p" --dump-instr=no \
		--collect-atstart=no --toggle-collect=PostgresMain \
		"$PGBIN/postgres" -D "$A2_PGDATA" >"$dir/server.log" 2>&1 &
	for _ in $(seq 300); do
		"$PGBIN/pg_isready" -q -h "$(dirname "$A2_PGDATA")/sock" -p "$A2_PGPORT" && exit 0
		sleep 1
	done
	a2_die "the server under callgrind did not start; see $dir/server.log"
	;;
stop)
	runuser -u postgres -- "$PGBIN/pg_ctl" -D "$A2_PGDATA" -m fast -w -t 300 stop
	;;
*) a2_die "usage: $0 start|stop" ;;
esac
