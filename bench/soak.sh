#!/usr/bin/env bash
#
# Bloat under sustained churn: the claim/complete cycle (bench/soak_cycle.sql)
# for A2_CHURN_SECONDS on A2_CHURN_SESSIONS sessions, in two databases of one
# cluster at the same time, so both see the same machine:
#
#   <db>_defaults   a2_events with autovacuum at the server defaults (the
#                   storage parameters the install script sets are RESET)
#   <db>_tuned      a2_events as installed, with the storage parameters
#                   A2_CHURN_TUNED set on top (default: the ones the
#                   install script sets, i.e. a2_events as shipped)
#
# Every A2_CHURN_INTERVAL seconds it samples, per database: table and index
# sizes, live and dead rows, autovacuum runs, and the cycles completed in
# the interval; then prints one Markdown table per database.
#
#   bench/soak.sh                          # 600 s, 300 sessions (by hand; not in CI)
#   A2_CHURN_SECONDS=60 bench/soak.sh      # a quick look
#
# Settings (environment): A2_CHURN_SECONDS (600), A2_CHURN_SESSIONS (300),
# A2_CHURN_INTERVAL (60), A2_CHURN_CLIENTS (1 per database), A2_CHURN_TUNED,
# A2_CHURN_PREFILL (0; N: start every session with N processed events, so
# the table has a history and autovacuum's scale factor counts),
# A2_BENCH_DB (a2soak), A2_CHURN_OUT (output directory, default
# /tmp/a2-soak), and the cluster of bench/lib.sh (A2_PGDATA, A2_PGPORT).
# (Not A2_SOAK_SECONDS: that one lengthens test/suites/20-stress.sh.)

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

seconds=${A2_CHURN_SECONDS:-600}
sessions=${A2_CHURN_SESSIONS:-300}
interval=${A2_CHURN_INTERVAL:-60}
clients=${A2_CHURN_CLIENTS:-1}
prefill=${A2_CHURN_PREFILL:-0}
[[ $prefill =~ ^[0-9]+$ ]] || bench_die "A2_CHURN_PREFILL must be a number of events"
tuned=${A2_CHURN_TUNED:-autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05, autovacuum_vacuum_cost_delay = 1}
db=${A2_BENCH_DB:-a2soak}
out=${A2_CHURN_OUT:-/tmp/a2-soak}
modes=(defaults tuned)

mkdir -p "$out"
chmod 0777 "$out"
bench_cluster_start

for mode in "${modes[@]}"; do
	bench_create_db "${db}_$mode"
	if [[ $mode == defaults ]]; then
		bench_psql "${db}_$mode" -c "ALTER TABLE a2_events RESET (autovacuum_vacuum_scale_factor,
			autovacuum_vacuum_insert_scale_factor, autovacuum_analyze_scale_factor,
			autovacuum_vacuum_cost_delay)"
	else
		bench_psql "${db}_$mode" -c "ALTER TABLE a2_events SET ($tuned)"
	fi
	bench_psql "${db}_$mode" -At -c "SELECT coalesce(array_to_string(reloptions, ', '), '(none)')
		FROM pg_class WHERE oid = 'a2_events'::regclass" >"$out/reloptions_$mode.txt"
	if ((prefill > 0)); then
		# a history: prefill processed events per session, then a clean start
		bench_psql "${db}_$mode" -c "SELECT bench_prefill('soak-', 1, $sessions, $prefill)" \
			-c 'VACUUM ANALYZE a2_events' >/dev/null
	else
		# one event per session to start with, so every session exists
		bench_psql "${db}_$mode" -c "SELECT a2_append('soak-' || s, '[{\"type\": \"seed\", \"settled\": true}]')
			FROM generate_series(1, $sessions) s" >/dev/null
	fi
done

# One sample line: elapsed s, cycles so far (each completes one job and
# appends one settled child: inserts since the stats reset / 2), table, every index, live, dead,
# autovacuum runs.
sample() {
	local mode=$1 elapsed=$2
	bench_psql "${db}_$mode" -At -F $'\t' -c "
		SELECT '$elapsed',
		       pg_stat_get_tuples_inserted(c.oid) / 2,
		       pg_relation_size(c.oid),
		       (SELECT string_agg(pg_relation_size(i.indexrelid)::text, E'\t' ORDER BY x.relname)
		          FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid WHERE i.indrelid = c.oid),
		       pg_stat_get_live_tuples(c.oid), pg_stat_get_dead_tuples(c.oid),
		       pg_stat_get_autovacuum_count(c.oid)
		  FROM pg_class c WHERE c.oid = 'a2_events'::regclass" >>"$out/samples_$mode.tsv"
}

index_names=$(bench_psql "${db}_defaults" -At -c "SELECT string_agg(x.relname, ' ' ORDER BY x.relname)
	FROM pg_index i JOIN pg_class x ON x.oid = i.indexrelid WHERE i.indrelid = 'a2_events'::regclass")

pids=()
for mode in "${modes[@]}"; do
	: >"$out/samples_$mode.tsv"
	bench_psql "${db}_$mode" -c 'SELECT pg_stat_reset()' >/dev/null
	sample "$mode" 0
	"$PGBENCH" -n -c "$clients" -j "$clients" -T "$seconds" -P "$interval" \
		-D sessions="$sessions" -f "$(dirname "${BASH_SOURCE[0]}")/soak_cycle.sql" \
		"${db}_$mode" >"$out/pgbench_$mode.out" 2>&1 &
	pids+=($!)
done
bench_log "soak: ${seconds}s, $sessions sessions, ${clients} client(s) per database, sampling every ${interval}s into $out"

start=$(date +%s)
while :; do
	sleep "$interval"
	now=$(date +%s)
	elapsed=$((now - start))
	for mode in "${modes[@]}"; do
		sample "$mode" "$elapsed"
	done
	((elapsed < seconds)) || break
done
for pid in "${pids[@]}"; do
	wait "$pid" || bench_log "soak: pgbench $pid exited non-zero (see $out/pgbench_*.out)"
done

# Let the statistics flush, then a final sample.
sleep 2
for mode in "${modes[@]}"; do
	sample "$mode" final
done

for mode in "${modes[@]}"; do
	echo
	echo "### $mode: reloptions $(cat "$out/reloptions_$mode.txt")"
	echo
	awk -F'\t' -v names="$index_names" '
		BEGIN {
			n = split(names, nm, " ")
			printf "| t (s) | cycles/s in interval | table MB |"
			for (i = 1; i <= n; i++) printf " %s MB |", nm[i]
			printf " live rows | dead rows | autovacuums |\n|---|---|---|"
			for (i = 1; i <= n; i++) printf "---|"
			printf "---|---|---|\n"
		}
		{
			rate = ($1 != "final" && $1 > prev_t) ? ($2 - prev_c) / ($1 - prev_t) : 0
			printf "| %s | %s | %.1f |", $1, ($1 == "final" || NR == 1) ? "" : sprintf("%.0f", rate), $3 / 1048576
			for (i = 1; i <= n; i++) printf " %.2f |", $(3 + i) / 1048576
			printf " %s | %s | %s |\n", $(4 + n), $(5 + n), $(6 + n)
			if ($1 != "final") { prev_t = $1; prev_c = $2 }
		}' "$out/samples_$mode.tsv"
	echo
	grep -E '^(latency average|tps|number of transactions actually processed)' "$out/pgbench_$mode.out" | sed 's/^/    /'
done
