# shellcheck shell=bash
#
# Helpers shared by bench/run.sh and bench/memory.sh.  Source it:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# It starts (or reuses) a throwaway cluster through scripts/cluster.sh on a
# data directory and port of its own, so benchmarks never disturb the
# development cluster (scripts/cluster.sh defaults: /tmp/a2-pg, 54329):
#
#   A2_PGDATA   data directory   (default /tmp/a2-bench/data)
#   A2_PGPORT   port             (default 54349)
#   A2_BENCH_KEEP=1   leave the cluster running at the end
#
# A cluster that was already running before the script started is always
# left running.

set -euo pipefail

BENCH_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
A2_ROOT=$(dirname "$BENCH_DIR")
CLUSTER_SH=$A2_ROOT/scripts/cluster.sh

export A2_PGDATA=${A2_PGDATA:-/tmp/a2-bench/data}
export A2_PGPORT=${A2_PGPORT:-54349}
# The scripts write their results next to the data directory, before the
# cluster starts: make that directory as scripts/cluster.sh would (owned by
# postgres), or cluster.sh refuses a directory root made.
if [[ ! -d $(dirname "$A2_PGDATA") ]]; then
	mkdir -p -- "$(dirname "$A2_PGDATA")"
	chown postgres:postgres -- "$(dirname "$A2_PGDATA")"
fi
A2_BENCH_KEEP=${A2_BENCH_KEEP:-0}
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGBENCH=${PGBENCH:-$PGBIN/pgbench}
PSQL=$PGBIN/psql
NPROC=$(nproc 2>/dev/null || echo 1)

bench_log() {
	printf '==> %s\n' "$*" >&2
}

bench_die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 1
}

_bench_cluster_was_running=1

bench_cluster_stop() {
	if [[ $_bench_cluster_was_running -eq 0 && $A2_BENCH_KEEP != 1 ]]; then
		bash "$CLUSTER_SH" stop || true
	elif [[ $_bench_cluster_was_running -eq 0 ]]; then
		bench_log "cluster left running (A2_BENCH_KEEP=1): A2_PGDATA=$A2_PGDATA A2_PGPORT=$A2_PGPORT"
	fi
}

# Start or reuse the cluster, export PGHOST/PGPORT/PGUSER, stop it on exit.
bench_cluster_start() {
	[[ -x $PGBENCH ]] || bench_die "pgbench not found at $PGBENCH (set PGBENCH)"
	if bash "$CLUSTER_SH" status >/dev/null 2>&1; then
		_bench_cluster_was_running=1
	else
		_bench_cluster_was_running=0
	fi
	trap bench_cluster_stop EXIT
	bash "$CLUSTER_SH" start
	eval "$(bash "$CLUSTER_SH" env)"
	export PGDATABASE=postgres
}

# psql against database $1, quiet, stop on the first error.
bench_psql() {
	local db=$1
	shift
	"$PSQL" -X -q -v ON_ERROR_STOP=1 -d "$db" "$@"
}

# A fresh database with the a2 extension and the benchmark helpers.
bench_create_db() {
	local db=$1
	"$PGBIN/dropdb" --if-exists "$db"
	"$PGBIN/createdb" "$db"
	bench_psql "$db" -c 'CREATE EXTENSION a2' -f "$BENCH_DIR/setup/schema.sql"
}

# pgmq's SQL extension, installed from a copy of pgmq's repository fetched
# by hand (the scripts never download anything): A2_PGMQ_SRC names its
# pgmq-extension directory (pgmq.control, sql/pgmq.sql).  The two files go
# into the running server's extension directory (bench/README.md, "pgmq").
bench_pgmq_install() {
	local src=${A2_PGMQ_SRC:-} dir ver
	[[ -n $src ]] || bench_die "A2_PGMQ_SRC is not set: the directory pgmq-extension of a pgmq copy (bench/README.md, \"pgmq\")"
	[[ -f $src/pgmq.control && -f $src/sql/pgmq.sql ]] ||
		bench_die "$src has no pgmq.control and sql/pgmq.sql"
	ver=$(sed -n "s/^default_version *= *'\([^']*\)'.*/\1/p" "$src/pgmq.control")
	[[ -n $ver ]] || bench_die "$src/pgmq.control names no default_version"
	dir=$("$PSQL" -X -A -t -d postgres -c "SELECT setting FROM pg_catalog.pg_config() WHERE name = 'SHAREDIR'")/extension
	install -m 644 "$src/pgmq.control" "$dir/pgmq.control"
	install -m 644 "$src/sql/pgmq.sql" "$dir/pgmq--$ver.sql"
	bench_log "pgmq $ver installed into $dir"
}

# Medians of a runs file (key, clients, repeat, value per line): one line
# per (key, clients) with the median and the values, sorted.  A value that
# is not a number ("-": not measured) makes the median "-".
bench_medians() {
	local runs=$1 k c vals m
	cut -f1,2 "$runs" | sort -u | while IFS=$'\t' read -r k c; do
		vals=$(awk -F'\t' -v k="$k" -v c="$c" '$1 == k && $2 == c { print $4 }' "$runs" | sort -n)
		m=$(awk '$1 !~ /^[0-9.]+$/ { bad = 1 } { v[NR] = $1 }
			END { if (bad || NR == 0) print "-"; else printf "%.3f", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }' <<<"$vals")
		printf '%s\t%s\t%s\t%s\n' "$k" "$c" "$m" "$(tr '\n' ' ' <<<"$vals")"
	done
}

# bench_med MEDIANS KEY CLIENTS: the median bench_medians gave
bench_med() { awk -F'\t' -v k="$2" -v c="$3" '$1 == k && $2 == c { print $3 }' "$1"; }

# bench_ratio A B: A / B to two places, "?" when either is missing
bench_ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "" || b == "" || a == "-" || b == "-" || b == 0) print "?"; else printf "%.2f", a / b }'; }

bench_machine() {
	local cpu mem
	cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)
	mem=$(awk '/^MemTotal:/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
	printf -- '- CPU: %s, %s logical CPUs (nproc)\n' "${cpu:-unknown}" "$NPROC"
	printf -- '- Memory: %s\n' "$mem"
	printf -- '- PostgreSQL: %s\n' "$("$PSQL" -X -A -t -d postgres -c 'SELECT version()')"
	printf -- '- Server settings: shared_buffers=%s, synchronous_commit=%s, fsync=%s (scripts/cluster.sh defaults)\n' \
		"$("$PSQL" -X -A -t -d postgres -c 'SHOW shared_buffers')" \
		"$("$PSQL" -X -A -t -d postgres -c 'SHOW synchronous_commit')" \
		"$("$PSQL" -X -A -t -d postgres -c 'SHOW fsync')"
	printf -- '- Kernel: %s; load average at start: %s\n' "$(uname -sr)" "$(cut -d' ' -f1-3 /proc/loadavg)"
	local so rev
	# the running server's library directory (a private build may serve it)
	so=$("$PSQL" -X -A -t -d postgres -c "SELECT setting FROM pg_catalog.pg_config() WHERE name = 'PKGLIBDIR'" 2>/dev/null ||
		"$PGBIN/pg_config" --pkglibdir)/a2.so
	rev=$(git -C "$A2_ROOT" describe --always --dirty 2>/dev/null || echo unknown)
	printf -- '- a2: %s installed %s (md5 %.12s); source tree %s\n' \
		"$so" "$(date -u -r "$so" '+%Y-%m-%d %H:%M UTC' 2>/dev/null || echo '?')" \
		"$(md5sum <"$so" 2>/dev/null | cut -c1-12)" "$rev"
}
