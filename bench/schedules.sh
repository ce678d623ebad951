#!/usr/bin/env bash
#
# bench/schedules.sh: N recurring schedules firing every minute (issue 28):
# the background scheduler's CPU per tick and the lateness of the ticks'
# events (createdAt minus the tick), p50, p99 and max.
#
#   A2_SCHED_BENCH_N=10000 A2_SCHED_BENCH_MINUTES=3 bench/schedules.sh
#
# A throwaway cluster with a2 preloaded (scripts/cluster.sh) in a temporary
# directory on port A2_SCHED_BENCH_PGPORT (default A2_PGPORT + 12, else
# 54351); each schedule appends to its own session.  The first minute after
# the schedules are created is warm-up; the CPU is the scheduler process's
# utime + stime (/proc/PID/stat) over the measured minutes, divided by
# them.  Prints one Markdown table row set.

set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

n=${A2_SCHED_BENCH_N:-10000}
minutes=${A2_SCHED_BENCH_MINUTES:-3}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-sched-bench.XXXXXX")
chmod 0755 "$tmp"
export A2_PGDATA=$tmp/pg/data
export A2_PGPORT=${A2_SCHED_BENCH_PGPORT:-$((${A2_PGPORT:-54339} + 12))}
export A2_PRELOAD=1
cluster() { bash "$root/scripts/cluster.sh" "$@"; }
cleanup() {
	cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT

cluster start >/dev/null
eval "$(cluster env)"
q() { psql -X -At -v ON_ERROR_STOP=1 -d a2_bench_sched "$@"; }
psql -X -q -d postgres -c 'CREATE DATABASE a2_bench_sched'
q -q -c 'CREATE EXTENSION a2'

# Wait for the start of a minute plus 5 s, so that creating the schedules
# does not straddle a tick.
sleep $(( (65 - $(date +%s) % 60) % 60 ))
t0=$(date +%s%3N)
q -c "SELECT count(a2_schedule('s' || i, '* * * * *', 's' || i, '{\"type\": \"tick\"}')) FROM generate_series(1, $n) i" >/dev/null
t1=$(date +%s%3N)
a2_log "schedules bench: $n schedules created in $((t1 - t0)) ms"

# warm-up: the first tick (new sessions), then statistics for the tables
# the schedules filled: a new database's first appends run plans made
# for empty tables (a cold start, reported apart)
sleep $(( 62 - $(date +%s) % 60 ))
sleep 20
q -q -c 'ANALYZE a2_events' -c 'ANALYZE a2_schedules'
sleep $(( 62 - $(date +%s) % 60 ))
pid=$(q -c "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND backend_type = 'a2 scheduler'")
[[ -n $pid ]] || a2_die "schedules bench: no a2 scheduler for the database"
cpu() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
ticks_per_s=$(getconf CLK_TCK)
start_cpu=$(cpu "$pid")
start=$(q -c "SELECT extract(epoch FROM date_trunc('minute', now()))::bigint * 1000")
a2_log "schedules bench: measuring $minutes minutes (scheduler pid $pid)"
sleep $((minutes * 60))
end_cpu=$(cpu "$pid")
# let the last measured tick's pass finish
sleep 5

q <<SQL
\\pset format aligned
\\pset footer off
\\pset tuples_only off
WITH t AS (
  SELECT (extract(epoch FROM substring(e.event_id FROM '@(.*)$')::timestamptz) * 1000)::bigint AS tick
    FROM a2_events e
)
SELECT count(*) AS events, count(DISTINCT tick) AS ticks FROM t
 WHERE tick > $start AND tick <= $start + $minutes * 60000;
SQL
q <<SQL
\\pset format aligned
\\pset footer off
\\pset tuples_only off
WITH t AS (
  SELECT e.created_at - (extract(epoch FROM substring(e.event_id FROM '@(.*)$')::timestamptz) * 1000)::bigint AS late_ms,
         (extract(epoch FROM substring(e.event_id FROM '@(.*)$')::timestamptz) * 1000)::bigint AS tick
    FROM a2_events e
)
SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY late_ms) AS lateness_p50_ms,
       percentile_cont(0.99) WITHIN GROUP (ORDER BY late_ms) AS lateness_p99_ms,
       max(late_ms) AS lateness_max_ms, min(late_ms) AS lateness_min_ms
  FROM t WHERE tick > $start AND tick <= $start + $minutes * 60000;
SQL
cpu_ms=$(( (end_cpu - start_cpu) * 1000 / ticks_per_s ))
echo "scheduler CPU: ${cpu_ms} ms over $minutes ticks = $((cpu_ms / minutes)) ms per tick of $n schedules"
dups=$(q -c "SELECT count(*) - count(DISTINCT event_id) FROM a2_events")
echo "event ids twice: $dups"
cluster stop >/dev/null
