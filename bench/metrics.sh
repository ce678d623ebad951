#!/usr/bin/env bash
#
# Cost of the operations queries on a big table: a2_metrics() (a scrape),
# a2_list_sessions (one page), and a2_drop_finished_sessions when nothing
# qualifies (its worst case: the walk visits every session).
#
#   bench/metrics.sh                                # 10M events (100k sessions x 100)
#   A2_METRICS_EVENTS=1000000 bench/metrics.sh      # 1M
#
# The table is prefilled straight into a2_events (bench_prefill in
# bench/setup/schema.sql): sessions of 100 processed events whose last
# event is left unprocessed and claimable, i.e. a 1% backlog, then VACUUM
# ANALYZE.  Each query runs under pgbench, one client, A2_BENCH_SECONDS
# (default 10) per run, A2_BENCH_REPEAT (default 3) runs; the table gives
# the median mean latency.  Then the backlog is raised to 5% (events 96..99
# of every session made unprocessed again) and the scrape is timed again,
# because its cost follows the unprocessed rows, not the table.  An
# EXPLAIN (ANALYZE, BUFFERS) of the scrape's statement, under the planner
# settings a2_metrics() has, is kept in the output directory
# (A2_METRICS_OUT, default /tmp/a2-metrics).
#
# Uses the cluster of bench/lib.sh (A2_PGDATA, A2_PGPORT); the database
# (A2_BENCH_DB, default a2metrics) is dropped and recreated.

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

events=${A2_METRICS_EVENTS:-10000000}
per_session=100
sessions=$((events / per_session))
seconds=${A2_BENCH_SECONDS:-10}
repeat=${A2_BENCH_REPEAT:-3}
db=${A2_BENCH_DB:-a2metrics}
out=${A2_METRICS_OUT:-/tmp/a2-metrics}
mkdir -p "$out"
chmod 0777 "$out"

bench_cluster_start
bench_create_db "$db"

bench_log "metrics: prefilling $events events ($sessions sessions x $per_session)"
SECONDS=0
chunk=10000
for ((first = 1; first <= sessions; first += chunk)); do
	last=$((first + chunk - 1))
	((last <= sessions)) || last=$sessions
	bench_psql "$db" -At -c "SELECT bench_prefill('m:', $first, $last, $per_session, true)" >/dev/null
done
bench_psql "$db" -c 'VACUUM ANALYZE a2_events'
fill_s=$SECONDS
bench_log "metrics: prefilled and vacuumed in ${fill_s}s"

# Median of the mean latency (ms) over the repeats of one query.
time_query() {
	local name=$1 sql=$2 r lat all=()
	printf '%s\n' "$sql" >"$out/$name.sql"
	for ((r = 1; r <= repeat; r++)); do
		"$PGBENCH" -n -c 1 -j 1 -T "$seconds" -f "$out/$name.sql" "$db" >"$out/${name}_r$r.out" 2>&1 ||
			bench_die "pgbench failed for $name (see $out/${name}_r$r.out)"
		lat=$(sed -n 's/^latency average = \([0-9.]*\) ms/\1/p' "$out/${name}_r$r.out")
		all+=("$lat")
	done
	printf '%s\n' "${all[@]}" | sort -g | sed -n "$(((repeat + 1) / 2))p"
}

size() {
	bench_psql "$db" -At -c "SELECT pg_size_pretty(pg_total_relation_size('a2_events'))
		|| ' (heap ' || pg_size_pretty(pg_relation_size('a2_events')) || ')'"
}

gauge_sql="SELECT count(DISTINCT u.session_id) FILTER (WHERE u.eligible), count(*) FILTER (WHERE u.eligible),
  count(*) FILTER (WHERE u.leased), count(*) FILTER (WHERE u.failed_at IS NOT NULL), min(u.created_at) FILTER (WHERE u.eligible)
  FROM (SELECT e.session_id, e.created_at, e.failed_at,
               e.lane_ready AND e.failed_at IS NULL AND (e.claim_expires_at IS NULL OR e.claim_expires_at <= 0) AS eligible,
               e.failed_at IS NULL AND e.claim_expires_at > 0 AS leased
          FROM a2_events e WHERE e.processed_at IS NULL) u"

backlog1=$(bench_psql "$db" -At -c 'SELECT eligible_events FROM a2_metrics()')
total_size=$(size)
m1=$(time_query metrics_1pct 'SELECT * FROM a2_metrics();')
# under the planner settings a2_metrics() runs with (see its CREATE FUNCTION)
bench_psql "$db" -c 'SET enable_seqscan = off' -c 'SET jit = off' \
	-c "EXPLAIN (ANALYZE, BUFFERS) $gauge_sql" >"$out/explain_1pct.txt"
page=$(time_query list_page "SELECT a2_list_sessions('m:', NULL, 100);")
page_mid=$(time_query list_page_mid "SELECT a2_list_sessions('m:', 'm:$((sessions / 2))', 100);")
walk=$(time_query drop_finished_none 'SELECT a2_drop_finished_sessions(0, 100);')

bench_log "metrics: raising the backlog to 5%"
bench_psql "$db" -c "UPDATE a2_events SET processed_at = NULL, processed_by_attempt = NULL,
		returned_event_ids = NULL, lane_ready = true
	 WHERE idx BETWEEN $((per_session - 4)) AND $((per_session - 1))" -c 'VACUUM ANALYZE a2_events'
backlog5=$(bench_psql "$db" -At -c 'SELECT eligible_events FROM a2_metrics()')
m5=$(time_query metrics_5pct 'SELECT * FROM a2_metrics();')
bench_psql "$db" -c 'SET enable_seqscan = off' -c 'SET jit = off' \
	-c "EXPLAIN (ANALYZE, BUFFERS) $gauge_sql" >"$out/explain_5pct.txt"

cat <<EOT

| table | query | median mean latency (ms) |
|---|---|---|
| $events events, $sessions sessions, $total_size; backlog $backlog1 | \`SELECT * FROM a2_metrics()\` | $m1 |
| same | \`a2_list_sessions('m:', NULL, 100)\` (first page) | $page |
| same | \`a2_list_sessions('m:', <middle>, 100)\` (a page in the middle) | $page_mid |
| same | \`a2_drop_finished_sessions(0, 100)\`, nothing qualifies (walks all $sessions sessions) | $walk |
| backlog raised to $backlog5 | \`SELECT * FROM a2_metrics()\` | $m5 |

prefill + VACUUM ANALYZE: ${fill_s} s; pgbench -c 1, ${seconds} s x ${repeat} per query; plans in $out/explain_*.txt
EOT
