#!/usr/bin/env bash
#
# bench/fresh_plans.sh -- the W4 cycle on a new database against the same
# database warmed up (issue 30): a2's kept generic plans are made at first
# use, so on a new, analyzed, empty a2_events they are made for
# reltuples = 0.  Per repetition: a fresh database (CREATE EXTENSION a2,
# VACUUM ANALYZE), pgbench W4 for A2_FRESH_SECONDS ("fresh": every backend
# plans a2's statements on the empty table), then ANALYZE and the same
# again in new backends ("warm": plans made with the statistics of the
# table in use).  Reports cycles/s, fresh/warm, and from
# pg_stat_statements (preloaded, or the buffers columns read '-') the
# buffers per call of a2_append, a2_claim and a2_complete.
#
# Settings (environment; defaults in brackets):
#   A2_FRESH_SECONDS   length of each run [5]
#   A2_FRESH_REPS      repetitions [3]
#   A2_FRESH_CLIENTS   pgbench clients [1]
#   A2_FRESH_LABEL     a name for the build under test [build]
#   A2_PGDATA, A2_PGPORT, PGBIN  the cluster and binaries, as for bench/run.sh
#
# Output: one tab-separated line per (repetition, phase) on stdout:
#   label rep phase cycles/s append_buf claim_buf complete_buf analyzes

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_FRESH_SECONDS:-5}
REPS=${A2_FRESH_REPS:-3}
CLIENTS=${A2_FRESH_CLIENTS:-1}
LABEL=${A2_FRESH_LABEL:-build}
DB=a2fresh

bench_cluster_start
pgss=0
[[ $("$PSQL" -X -A -t -c 'SHOW shared_preload_libraries') == *pg_stat_statements* ]] && pgss=1

per_call() {
	if [[ $pgss == 0 ]]; then
		echo '-'
		return
	fi
	"$PSQL" -X -A -t -d "$DB" -c "SELECT coalesce(round(sum(shared_blks_hit + shared_blks_read)::numeric / nullif(sum(calls), 0), 1)::text, '-')
		FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
		AND query LIKE '%$1(%' AND query NOT LIKE '%pg_stat%'"
}

run() {
	local phase=$1 tps
	[[ $pgss == 0 ]] || bench_psql "$DB" -c 'SELECT pg_stat_statements_reset()' >/dev/null
	tps=$("$PGBENCH" -n -M prepared -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" \
		-f "$BENCH_DIR/w4_cycle.sql" -D prefix=fr- "$DB" 2>&1 |
		sed -n 's/^tps = \([0-9.]*\) .*/\1/p')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$LABEL" "$rep" "$phase" "$tps" \
		"$(per_call a2_append)" "$(per_call a2_claim)" "$(per_call a2_complete)" \
		"$("$PSQL" -X -A -t -d "$DB" -c "SELECT analyze_count || '+' || autoanalyze_count FROM pg_stat_user_tables WHERE relname = 'a2_events'")"
}

for rep in $(seq "$REPS"); do
	"$PGBIN/dropdb" --if-exists "$DB"
	"$PGBIN/createdb" "$DB"
	bench_psql "$DB" -c 'CREATE EXTENSION a2'
	[[ $pgss == 0 ]] || bench_psql "$DB" -c 'CREATE EXTENSION pg_stat_statements'
	bench_psql "$DB" -c 'VACUUM ANALYZE a2_events' -c CHECKPOINT
	run fresh
	bench_psql "$DB" -c 'ANALYZE a2_events'
	run warm
done
