#!/usr/bin/env bash
#
# The dashboard's pages on a big table (issue 29): every page within 3x of
# its cost on a small database, in shared buffers per request and in time.
#
#   bash bench/dashboard.sh                             # 10M events: 100,000 sessions x 100
#   A2_DASH_EVENTS=1000000 bash bench/dashboard.sh      # 1M
#
# Three databases, each with the same probe data the pages look at: a
# session view:1 of 100 events (claimed, completed, one lane) and 20 dead
# letters in 20 sessions with 4 error messages:
#   a2dash_empty   the probe data only
#   a2dash_small   plus 1,000 sessions x 100 events (100,000)
#   a2dash_big     plus A2_DASH_EVENTS/100 sessions x 100 events
# (prefilled straight into a2_events by bench_prefill, bench/setup/schema.sql:
# the last event of every session unprocessed and claimable, a 1% backlog;
# then VACUUM ANALYZE).  The dead letters are the same in all three: the
# dead-letter pages cost in proportion to the dead letters (up to their
# bound, docs/functions.md), not to the table.
#
# For each database the dashboard runs as a login role given
# a2_grant_worker + a2_grant_monitor (--poll-ms 1 h, so its chart poll does
# not count), and bench/dashboard-measure.mjs requests every page
# A2_DASH_REQUESTS (default 20) times: median HTTP time and, from
# pg_stat_statements (preloaded for this run, track = top), the shared
# buffers and statements per request.  Results: A2_DASH_OUT (default
# /tmp/a2-dash-bench/results.jsonl) and a table on stdout.
#
# Uses the cluster of bench/lib.sh (A2_PGDATA, A2_PGPORT; dropped and
# recreated databases only); dashboard/ must be built (scripts/dashboard.sh
# or npm ci && npx tsc in clients/node and dashboard/).

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

events=${A2_DASH_EVENTS:-10000000}
requests=${A2_DASH_REQUESTS:-20}
out=${A2_DASH_OUT:-/tmp/a2-dash-bench/results.jsonl}
port=${A2_DASH_PORT:-$((A2_PGPORT + 7))}
per_session=100
mkdir -p "$(dirname "$out")"
: >"$out"
[[ -f $A2_ROOT/dashboard/build/src/main.js ]] ||
	bench_die "dashboard/ is not built: run (cd clients/node && npm ci && npx tsc) and (cd dashboard && npm ci && npx tsc)"

bench_cluster_start
# pg_stat_statements for this run: it needs shared_preload_libraries.
# track = top is pg_stat_statements' default.
bench_psql postgres -c "ALTER SYSTEM SET shared_preload_libraries = 'a2', 'pg_stat_statements'"
restore_settings() {
	bench_psql postgres -c 'ALTER SYSTEM RESET shared_preload_libraries' || true
	bench_cluster_stop
}
trap restore_settings EXIT
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$A2_PGDATA" -w -l "$(dirname "$A2_PGDATA")/log" restart >/dev/null
bench_psql postgres -At -c 'SHOW shared_preload_libraries' | grep -q pg_stat_statements ||
	bench_die "pg_stat_statements did not load"
bench_psql postgres -c "DO \$\$ BEGIN CREATE ROLE a2_dash_bench LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END \$\$"

probe() {
	bench_psql "$1" <<'SQL'
CREATE EXTENSION pg_stat_statements;
DO $$
DECLARE e jsonb; i int;
BEGIN
	PERFORM a2_grant_worker('a2_dash_bench'), a2_grant_monitor('a2_dash_bench');
	PERFORM a2_append('view:1', (SELECT jsonb_agg(jsonb_build_object('type', 'step', 'lane', CASE WHEN g % 2 = 0 THEN 'l' END,
		'payload', jsonb_build_object('n', g))) FROM generate_series(1, 100) g));
	FOR e IN SELECT x FROM jsonb_array_elements(a2_claim('view:1', 'bench', 60000) -> 'events') x LIMIT 40 LOOP
		PERFORM a2_complete('view:1', (e ->> 'index')::bigint, (e ->> 'attemptCount')::int, '[]');
	END LOOP;
	FOR i IN 1..20 LOOP
		PERFORM a2_append('dl:' || i, '[{"type": "job"}]');
		PERFORM a2_claim('dl:' || i, 'bench', 60000);
		PERFORM a2_fail('dl:' || i, 1, 1, (ARRAY['card declined', 'timeout', 'no such address', 'bad payload'])[1 + i % 4], 1);
	END LOOP;
END $$;
SQL
}

prefill() {
	local db=$1 sessions=$2 first last chunk=10000
	for ((first = 1; first <= sessions; first += chunk)); do
		last=$((first + chunk - 1))
		((last <= sessions)) || last=$sessions
		bench_psql "$db" -At -c "SELECT bench_prefill('m:', $first, $last, $per_session, true)" >/dev/null
	done
}

measure() {
	local db=$1 label=$2 server url
	url="postgresql://a2_dash_bench@/$db?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")&port=$PGPORT"
	node "$A2_ROOT/dashboard/build/src/main.js" --port "$port" --poll-ms 3600000 "$url" >/dev/null &
	server=$!
	for _ in $(seq 1 50); do
		node -e 'fetch(process.argv[1]).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))' "http://127.0.0.1:$port/healthz" && break
		sleep 0.2
	done
	node "$A2_ROOT/bench/dashboard-measure.mjs" "http://127.0.0.1:$port" \
		"postgresql://postgres@/$db?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PGHOST")&port=$PGPORT" \
		"$label" "$requests" | tee -a "$out"
	kill "$server"
	wait "$server" 2>/dev/null || true
}

for db in a2dash_empty a2dash_small a2dash_big; do
	bench_create_db "$db"
	probe "$db"
done
SECONDS=0
prefill a2dash_small 1000
prefill a2dash_big $((events / per_session))
for db in a2dash_empty a2dash_small a2dash_big; do
	bench_psql "$db" -c 'VACUUM ANALYZE'
done
bench_log "dashboard: prefilled and vacuumed in ${SECONDS}s ($events events in the big database)"
bench_psql a2dash_big -At -c "SELECT 'big: ' || count(*) || ' events, ' || pg_size_pretty(pg_total_relation_size('a2_events')) FROM a2_events" >&2

measure a2dash_empty empty
measure a2dash_small small
measure a2dash_big big

node - "$out" <<'EOF_NODE'
const rows = require('fs').readFileSync(process.argv[2], 'utf8').trim().split('\n').map(JSON.parse)
const by = (label, page) => rows.find((r) => r.label === label && r.page === page)
const pages = [...new Set(rows.map((r) => r.page))]
console.log('| page | buffers/request: empty · small · big | big ÷ small | median ms: empty · small · big | big ÷ small |')
console.log('|---|---|---|---|---|')
for (const p of pages) {
  const [e, s, b] = ['empty', 'small', 'big'].map((l) => by(l, p))
  const ratio = (x, y) => (y > 0 ? (x / y).toFixed(2) + '×' : '—')
  console.log(`| ${p} | ${e.buffers_per_request} · ${s.buffers_per_request} · ${b.buffers_per_request} | ${ratio(b.buffers_per_request, s.buffers_per_request)} | ${e.median_ms} · ${s.median_ms} · ${b.median_ms} | ${ratio(b.median_ms, s.median_ms)} |`)
}
EOF_NODE
