#!/usr/bin/env bash
#
# bench/longtx.sh -- the W4 cycle and the W9 fleet loop with a REPEATABLE
# READ transaction held open in another session for the whole run, against
# the same run without it (issue 20): throughput over time (pgbench -P),
# a2_events' table and index sizes, live and dead rows, and at the end the
# buffers one a2_claim / a2_claim_next call touches.  See bench/README.md.
#
# Settings (environment; defaults in brackets):
#   A2_LONGTX_SECONDS    length of each run [180]
#   A2_LONGTX_INTERVAL   sampling interval, seconds [15]
#   A2_LONGTX_WORKLOADS  any of "W4", "W9", "B9" and "P4" ["W4 W9"]; B9
#                        is W9's loop the pgmq way (bench/b9_cycle.sql: FOR
#                        UPDATE SKIP LOCKED on b9_events, a copy of
#                        a2_events with its indexes), the floor W9 is
#                        compared with; P4 is pgmq's own send-read-archive
#                        cycle (bench/pgmq_cycle.sql, one queue per client;
#                        needs A2_PGMQ_SRC, bench/lib.sh), W4's peer
#   A2_LONGTX_VARIANTS   "none" (nothing held open), "rr" (a REPEATABLE
#                        READ transaction open from the start), "rr-noav"
#                        (the same with autovacuum off for the workload's
#                        table: a diagnosis, not a setting to run with; it
#                        tells what the held snapshot costs the calls from
#                        what autovacuum's passes over a table it cannot
#                        clean cost the machine) ["none rr"]
#   A2_LONGTX_CLIENTS    pgbench clients [1]
#   A2_LONGTX_W9_SESSIONS  sessions with one pending event each, for W9 [1000]
#   A2_LONGTX_TAG        a name for the build under test, added to the run
#                        names (W4-<tag>_rr) [none]
#   A2_BENCH_OUT         output directory [$(dirname A2_PGDATA)/results-longtx/<timestamp>]
#   A2_PGDATA, A2_PGPORT the cluster, as for bench/run.sh (server defaults:
#                        autovacuum on, a2_events with the shipped settings)
#
# Each (workload, variant) runs in a fresh database a2long: W4 starts empty
# (one session per client, as bench/run.sh's W4); W9 and B9 start with
# A2_LONGTX_W9_SESSIONS sessions of one pending event (bench/setup/w9.sql,
# which fills a2_events and its copy b9_events alike); B9's samples and
# buffers are b9_events' and its claim statement's; P4's are its first
# client's queue table's (pgmq.q_lt_0) and pgmq.read's.
# VACUUM ANALYZE and CHECKPOINT, then the "rr" variant opens
#   BEGIN ISOLATION LEVEL REPEATABLE READ; SELECT count(*) FROM a2_events;
# in a psql of its own and sleeps in it until the run is over (its snapshot
# pins the xmin horizon: no dead row version made during the run can be
# removed, by vacuum or by index scans), then pgbench -T runs.

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_LONGTX_SECONDS:-180}
IVL=${A2_LONGTX_INTERVAL:-15}
WORKLOADS=${A2_LONGTX_WORKLOADS:-W4 W9}
VARIANTS=${A2_LONGTX_VARIANTS:-none rr}
CLIENTS=${A2_LONGTX_CLIENTS:-1}
W9N=${A2_LONGTX_W9_SESSIONS:-1000}
TAG=${A2_LONGTX_TAG:-}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-longtx/$(date +%Y%m%d-%H%M%S)}
DB=a2long

bench_cluster_start
mkdir -p "$OUT"
bench_machine >"$OUT/machine.md"
[[ " $WORKLOADS " != *" P4 "* ]] || bench_pgmq_install

holder_pid=
holder_backend=
sampler_pid=
cleanup_run() {
	[[ -z $sampler_pid ]] || kill "$sampler_pid" 2>/dev/null || true
	# the holder's backend sleeps in pg_sleep, which does not notice a
	# closed client connection: end it by its pid
	[[ -z $holder_backend ]] || "$PSQL" -X -q -d postgres -c "SELECT pg_terminate_backend($holder_backend)" >/dev/null || true
	[[ -z $holder_pid ]] || kill "$holder_pid" 2>/dev/null || true
	wait 2>/dev/null || true
	sampler_pid='' holder_pid='' holder_backend=''
}
trap 'cleanup_run; bench_cluster_stop' EXIT

# With pg_stat_statements preloaded: cumulative calls and buffers of the
# claim statement and of all of the run's statements (the report turns
# them into buffers per call per interval, which the machine's load does
# not move).
# sample_sql TABLE CLAIM_LIKE: one sample of TABLE; CLAIM_LIKE picks the
# claim statement out of pg_stat_statements
pgss_on=false
[[ $("$PSQL" -X -A -t -c 'SHOW shared_preload_libraries') != *pg_stat_statements* ]] || pgss_on=true
sample_sql() {
	local pgss="'-'"
	if $pgss_on; then
		pgss="(SELECT coalesce(sum(calls) FILTER (WHERE query LIKE '$2'), 0) || '/' ||
			coalesce(sum(shared_blks_hit + shared_blks_read) FILTER (WHERE query LIKE '$2'), 0) || '/' ||
			coalesce(sum(shared_blks_hit + shared_blks_read), 0)
		   FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
			AND query NOT LIKE '%pg_stat%')"
	fi
	echo "SELECT round(extract(epoch FROM clock_timestamp()))::bigint,
	round(pg_relation_size('$1') / 1048576.0, 2),
	(SELECT string_agg(c.relname || '=' || round(pg_relation_size(c.oid) / 1048576.0, 2), ' ' ORDER BY c.relname)
	   FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid WHERE i.indrelid = '$1'::regclass),
	s.n_live_tup, s.n_dead_tup, s.autovacuum_count, $pgss,
	(SELECT io.heap_blks_read + coalesce(io.idx_blks_read, 0) FROM pg_statio_user_tables io WHERE io.relid = s.relid)
  FROM pg_stat_user_tables s WHERE s.relid = '$1'::regclass"
}

# The buffers one claim call touches now (rolled back): a2_claim of a W4
# session after one more append, or a2_claim_next.
probe_sql() {
	# a first call plans the statements in this new backend; not counted
	if [[ $1 == B9 ]]; then
		# B9's claim statement, without its \gset
		echo "BEGIN;"
		echo "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF)"
		sed -n '/^WITH now_ms/,/\\gset$/p' "$BENCH_DIR/b9_cycle.sql" | sed 's/ *\\gset$/;/'
		echo "ROLLBACK;"
	elif [[ $1 == P4 ]]; then
		cat <<EOF
BEGIN;
SELECT count(*) AS warm FROM pgmq.read('lt_0', 30, 1);
SELECT pgmq.send('lt_0', '{"type": "job"}') IS NOT NULL AS sent;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT * FROM pgmq.read('lt_0', 30, 1);
ROLLBACK;
EOF
	elif [[ $1 == W4 ]]; then
		cat <<EOF
BEGIN;
SELECT a2_claim('lt-warm', 'probe', 30000) IS NOT NULL AS warm;
SELECT a2_append('lt-0', '[{"type": "job"}]') IS NOT NULL AS appended;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim('lt-0', 'probe', 30000);
ROLLBACK;
EOF
	else
		cat <<EOF
BEGIN;
SELECT a2_claim_next('probe', 30000) IS NOT NULL AS warm;
EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) SELECT a2_claim_next('probe', 30000);
ROLLBACK;
EOF
	fi
}

for w in $WORKLOADS; do
	for v in $VARIANTS; do
		key=${w}${TAG:+-$TAG}_$v
		bench_log "$key: setup"
		"$PGBIN/dropdb" --if-exists "$DB"
		"$PGBIN/createdb" "$DB"
		table=a2_events claim_like='%a2_claim%'
		if [[ $w == W4 ]]; then
			bench_psql "$DB" -c 'CREATE EXTENSION a2'
			script=w4_cycle.sql defs=(-D prefix=lt-)
		elif [[ $w == P4 ]]; then
			# a2 too: the held transaction reads a2_events
			bench_psql "$DB" -c 'CREATE EXTENSION a2' -c 'CREATE EXTENSION pgmq' \
				-c "SELECT pgmq.create('lt_' || i) FROM generate_series(0, $CLIENTS - 1) i" >/dev/null
			script=pgmq_cycle.sql defs=(-D prefix=lt_) table=pgmq.q_lt_0 claim_like='%pgmq.read%'
		else
			bench_psql "$DB" -c 'CREATE EXTENSION a2' -v sessions="$W9N" -v done=0 \
				-f "$BENCH_DIR/setup/w9.sql"
			script=w9_cycle.sql defs=()
			if [[ $w == B9 ]]; then
				script=b9_cycle.sql table=b9_events claim_like='%SKIP LOCKED%'
			fi
		fi
		sql=$(sample_sql "$table" "$claim_like")
		bench_psql "$DB" -c "VACUUM ANALYZE $table" -c 'SELECT pg_stat_reset()' -c CHECKPOINT >/dev/null
		if $pgss_on; then
			bench_psql "$DB" -c 'CREATE EXTENSION pg_stat_statements' -c 'SELECT pg_stat_statements_reset()' >/dev/null
		fi
		[[ $v != rr-noav ]] || bench_psql "$DB" -c "ALTER TABLE $table SET (autovacuum_enabled = off)" >/dev/null
		if [[ $v == rr || $v == rr-noav ]]; then
			"$PSQL" -X -q -d "$DB" -c 'BEGIN ISOLATION LEVEL REPEATABLE READ' \
				-c 'SELECT count(*) FROM a2_events' -c "SELECT pg_sleep($SECS + 60)" \
				>/dev/null 2>&1 &
			holder_pid=$!
			# wait until its snapshot is taken
			for _ in $(seq 50); do
				holder_backend=$("$PSQL" -X -A -t -d "$DB" -c "SELECT pid FROM pg_stat_activity WHERE datname = '$DB' AND backend_xmin IS NOT NULL AND query LIKE 'SELECT pg_sleep%'")
				[[ -z $holder_backend ]] || break
				sleep 0.2
			done
			[[ -n $holder_backend ]] || bench_die "$key: the REPEATABLE READ transaction did not start"
		fi
		(
			t0=$(date +%s)
			while :; do
				printf '%s\t%s\n' "$(($(date +%s) - t0))" \
					"$("$PSQL" -X -A -t -F $'\t' -d "$DB" -c "$sql" 2>/dev/null)"
				sleep "$IVL"
			done
		) >"$OUT/$key.samples" &
		sampler_pid=$!
		bench_log "$key: pgbench -c $CLIENTS -T $SECS $script"
		"$PGBENCH" -n -M prepared -r -P "$IVL" -c "$CLIENTS" -j "$CLIENTS" -T "$SECS" \
			-f "$BENCH_DIR/$script" "${defs[@]}" "$DB" >"$OUT/$key.pgbench" 2>&1 ||
			{ cat "$OUT/$key.pgbench" >&2; bench_die "pgbench failed: $key"; }
		"$PSQL" -X -A -t -F $'\t' -d "$DB" -c "$sql" | sed "s/^/final\t/" >>"$OUT/$key.samples"
		probe_sql "$w" | "$PSQL" -X -q -d "$DB" >"$OUT/$key.probe" 2>&1 || true
		cleanup_run
	done
done

python3 "$BENCH_DIR/longtx_report.py" "$OUT" | tee "$OUT/table.md"
