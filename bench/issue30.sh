#!/usr/bin/env bash
#
# bench/issue30.sh -- every row of issue 30's table from one run of one
# build: W1 / B1, W4 / B2, W9 / B9, W4n / pgmq, W4 fresh vs warm, the held
# snapshot for W4, W9, pgmq and B9, and instructions per call under
# callgrind.  Each step is one of the scripts beside this one, run with the
# settings written below; this script only runs them in order, keeps their
# output and writes each step's start time and load average (times.txt).
# See bench/README.md, "issue30.sh".
#
#   A2_PGMQ_SRC=/tmp/pgmq-src/pgmq-extension bash bench/issue30.sh
#
# Settings (environment; defaults in brackets):
#   A2_PGMQ_SRC          pgmq's pgmq-extension directory (bench/lib.sh)
#   A2_I30_STEPS         steps to run [w1 w4 fresh w9 pgmq longtx-none
#                        longtx-rr callgrind]
#   A2_I30_W1_ROUNDS     alternated rounds of W1 / B1 [10]
#   A2_I30_HELD          seconds of each held-snapshot run [600]
#   A2_I30_LONGTX        workloads of the two longtx steps [W4 P4 W9 B9]
#   A2_I30_CG_PGDATA, A2_I30_CG_PGPORT  the second cluster, for callgrind
#                        [$(dirname A2_PGDATA)/cg/data, A2_PGPORT + 10]
#   A2_BENCH_OUT         output directory [$(dirname A2_PGDATA)/results-issue30/<timestamp>]
#   A2_PGDATA, A2_PGPORT the cluster, as for bench/run.sh.  It must preload
#                        pg_stat_statements beside a2 (buffers per call):
#                        put shared_preload_libraries = 'a2, pg_stat_statements'
#                        in its postgresql.auto.conf.

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

STEPS=${A2_I30_STEPS:-w1 w4 fresh w9 pgmq longtx-none longtx-rr callgrind}
W1_ROUNDS=${A2_I30_W1_ROUNDS:-10}
HELD=${A2_I30_HELD:-600}
LONGTX=${A2_I30_LONGTX:-W4 P4 W9 B9}
CG_PGDATA=${A2_I30_CG_PGDATA:-$(dirname "$A2_PGDATA")/cg/data}
CG_PGPORT=${A2_I30_CG_PGPORT:-$((A2_PGPORT + 10))}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-issue30/$(date +%Y%m%d-%H%M%S)}
mkdir -p -- "$OUT"
chown postgres:postgres -- "$OUT" 2>/dev/null || true

for step in $STEPS; do
	case $step in
	w1 | w4 | fresh | w9 | pgmq | longtx-none | longtx-rr | callgrind) ;;
	*) bench_die "A2_I30_STEPS: unknown step '$step'" ;;
	esac
done
case " $STEPS " in
*" pgmq "* | *" longtx-"*)
	[[ -n ${A2_PGMQ_SRC:-} ]] || bench_die "A2_PGMQ_SRC is required by the pgmq and longtx steps"
	;;
esac

# callgrind_server.sh runs the server binary itself.
export PGBIN
trap 'bench_log "issue30.sh: a step failed; its output is in $OUT"' ERR

bench_cluster_start
preload=$(bench_psql postgres -Atc "SHOW shared_preload_libraries")
[[ $preload == *pg_stat_statements* && $preload == *a2* ]] ||
	bench_die "the cluster preloads '$preload'; issue 30's table needs a2 and pg_stat_statements"

stamp() {
	printf '%s %s load %s commit %s\n' "$(date -u +%H:%M:%S)" "$1" \
		"$(cut -d' ' -f1-3 /proc/loadavg)" "$(git -C "$A2_ROOT" rev-parse --short HEAD)" |
		tee -a "$OUT/times.txt" >&2
}

longtx() {
	local variant=$1 secs=$2 interval=$3
	A2_LONGTX_SECONDS=$secs A2_LONGTX_INTERVAL=$interval \
		A2_LONGTX_WORKLOADS=$LONGTX A2_LONGTX_VARIANTS=$variant \
		A2_BENCH_OUT=$OUT/longtx bash "$BENCH_DIR/longtx.sh" >"$OUT/longtx-$variant.md"
}

for step in $STEPS; do
	stamp "$step"
	case $step in
	w1)
		A2_BENCH_ONLY=W1 A2_BENCH_SECONDS=5 A2_BENCH_REPEAT=$W1_ROUNDS \
			A2_BENCH_OUT=$OUT/w1 bash "$BENCH_DIR/run.sh" >"$OUT/w1.md"
		;;
	w4)
		A2_BENCH_ONLY=W4 A2_BENCH_SECONDS=5 A2_BENCH_REPEAT=5 \
			A2_BENCH_OUT=$OUT/w4 bash "$BENCH_DIR/run.sh" >"$OUT/w4.md"
		;;
	fresh)
		A2_FRESH_LABEL=final A2_FRESH_REPS=5 bash "$BENCH_DIR/fresh_plans.sh" >"$OUT/fresh.tsv"
		;;
	w9)
		A2_BENCH_W9_ONLY=W9 A2_BENCH_W9_SIZES=1000 A2_BENCH_W9_DONE=0 \
			A2_BENCH_SECONDS=8 A2_BENCH_REPEAT=5 \
			A2_BENCH_OUT=$OUT/w9 bash "$BENCH_DIR/w9.sh" >"$OUT/w9.md"
		;;
	pgmq)
		A2_BENCH_SECONDS=10 A2_BENCH_REPEAT=3 \
			A2_BENCH_OUT=$OUT/pgmq bash "$BENCH_DIR/pgmq.sh" >"$OUT/pgmq.md"
		;;
	longtx-none) longtx none 180 30 ;;
	longtx-rr) longtx rr "$HELD" 60 ;;
	callgrind)
		# A second cluster: built and loaded at full speed, then restarted
		# under callgrind for the counts, then stopped.
		(
			export A2_PGDATA=$CG_PGDATA A2_PGPORT=$CG_PGPORT
			A2_BYTES_SIZES=1000 A2_BYTES_OPS=100 A2_BYTES_REBUILD=1 \
				A2_BYTES_EXT_VERSION=0.4.0 A2_BYTES_LABEL=build \
				A2_BYTES_OUT=$OUT/bytes bash "$BENCH_DIR/bytes.sh" >"$OUT/bytes.log" 2>&1
			bash "$BENCH_DIR/callgrind_server.sh" start >"$OUT/callgrind-start.log" 2>&1
			trap 'bash "$BENCH_DIR/callgrind_server.sh" stop >/dev/null 2>&1 || true' EXIT
			BYTES_CALLGRIND_DIR=$(dirname "$CG_PGDATA")/callgrind A2_BYTES_SIZES=1000 \
				A2_BYTES_OPS=100 A2_BYTES_LABEL=final A2_BYTES_OUT=$OUT/bytes \
				bash "$BENCH_DIR/bytes.sh" >"$OUT/ir.log" 2>&1
		)
		;;
	esac
done
stamp done
bench_log "issue 30's table: $OUT"
