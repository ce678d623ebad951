#!/usr/bin/env bash
#
# bench/bytes.sh -- what one operation costs in bytes, buffers and CPU
# (issue 20): WAL bytes per call right after a checkpoint and in steady
# state, buffers hit/read/dirtied, and CPU time per call, for a2_append,
# a2_claim, a2_complete, a2_fail, the W4 cycle and a2_claim_next, and for
# the raw statements they are measured against (B1, B2's three statements
# and whole cycle, a raw failure update, B9's claim), on tables that
# already hold 0, 1,000,000 and 10,000,000 finished events.  These figures
# do not depend on how busy the machine is (CPU time somewhat does); see
# bench/README.md "bytes.sh".
#
#   A2_BYTES_LABEL=before bash bench/bytes.sh      # with the build to compare
#   A2_BYTES_LABEL=after A2_BYTES_UPDATE=1 bash bench/bytes.sh
#   python3 bench/bytes_report.py OUT/bytes.tsv ...  # the tables
#
# Settings (environment; defaults in brackets):
#   A2_BYTES_SIZES     finished events already in the tables, one database
#                      a2bytes_<n> each [0 1000000 10000000]
#   A2_BYTES_OPS       calls per measured block [1000]
#   A2_BYTES_ONLY      operations to run [all: append b1 b1r claim b2claim
#                      complete b2complete fail bfail w4 b2 claim_next b9claim]
#                      (b9claim is bench/b9_cycle.sql's claim: it names the
#                      0.4.0 columns, so it needs 0.4.0 objects, e.g. the
#                      default 0.2.0 build with A2_BYTES_UPDATE=1)
#   A2_BYTES_LABEL     a name for this run's rows (e.g. before, after) [run]
#   A2_BYTES_REBUILD   1: drop and rebuild the databases [0: reuse them;
#                      the one of size 0 is always rebuilt]
#   A2_BYTES_EXT_VERSION  CREATE EXTENSION a2 VERSION ... when building
#                      [0.2.0, so that a later build can ALTER EXTENSION
#                      a2 UPDATE the same tables to 0.3.0]
#   A2_BYTES_UPDATE    1: ALTER EXTENSION a2 UPDATE first [0]
#   A2_BYTES_SYNC      synchronous_commit of the measured sessions [on]; off
#                      takes the commit flush (its kernel time is the
#                      backend's CPU) out of the CPU figures
#   A2_BYTES_OUT       output directory [$(dirname A2_PGDATA)/results-bytes]
#   A2_PGDATA, A2_PGPORT  the cluster, as for bench/run.sh
#   BYTES_CALLGRIND_DIR  set (with the server under callgrind, see
#                      bench/callgrind_server.sh): count instructions per
#                      call instead, into ir-<label>.tsv
#
# Method.  Each operation runs in one psql session as prepared statements
# (PREPARE once, then one EXECUTE per call, each its own transaction,
# synchronous_commit on), after one warm-up call.  Block A: CHECKPOINT,
# then A2_BYTES_OPS calls; block B: the next A2_BYTES_OPS calls at once
# (steady state: the pages they touch were written since the checkpoint).
# Per block:
#   - WAL bytes: pg_current_wal_insert_lsn() after minus before, divided by
#     the calls.  Everything the cluster wrote counts: the statements,
#     commit records, full-page images (data checksums are on, so hint-bit
#     changes after a checkpoint write images too), and the notifier's
#     transactions.
#   - FPI, WAL records, buffers hit/read/dirtied/written: the prepared
#     statements' pg_stat_statements counters (track = top: an a2
#     function's row includes the statements it runs through SPI; commit
#     records and the notifier are not in it).
#   - CPU: run time (/proc/<pid>/schedstat, ns) of the session's backend,
#     and of the whole server (postmaster and every child: the backend,
#     the a2 notifier, the WAL writer, ...), divided by the calls.
# Rows to claim, complete or fail are written beforehand, one session per
# call (setup/bytes.sql, bench_rows), so every call does the same work.
# The server gets pg_stat_statements preloaded, checkpoint_timeout = 1h
# and max_wal_size = 32GB (ALTER SYSTEM: no checkpoint inside a block; a
# block that saw one is flagged), and autovacuum is off for the two tables.

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SIZES=${A2_BYTES_SIZES:-0 1000000 10000000}
K=${A2_BYTES_OPS:-1000}
ONLY=${A2_BYTES_ONLY:-append b1 b1r claim b2claim complete b2complete fail bfail w4 b2 claim_next b9claim}
LABEL=${A2_BYTES_LABEL:-run}
REBUILD=${A2_BYTES_REBUILD:-0}
EXT_VERSION=${A2_BYTES_EXT_VERSION:-0.2.0}
UPDATE=${A2_BYTES_UPDATE:-0}
SYNC=${A2_BYTES_SYNC:-on}
OUT=${A2_BYTES_OUT:-$(dirname "$A2_PGDATA")/results-bytes}
TAG=$LABEL-$(date +%s)

[[ $K =~ ^[1-9][0-9]*$ ]] || bench_die "A2_BYTES_OPS must be a positive number"

bench_cluster_start
mkdir -p "$OUT/blocks"
chmod 0777 "$OUT" "$OUT/blocks" 2>/dev/null || true

# --- server settings: pg_stat_statements, no checkpoint inside a block ----
if [[ $("$PSQL" -X -A -t -c 'SHOW shared_preload_libraries') != *pg_stat_statements* ]]; then
	bench_log "preloading pg_stat_statements, checkpoint_timeout = 1h, max_wal_size = 32GB (ALTER SYSTEM); restarting"
	"$PSQL" -X -q -v ON_ERROR_STOP=1 \
		-c "ALTER SYSTEM SET shared_preload_libraries = 'a2', 'pg_stat_statements'" \
		-c "ALTER SYSTEM SET checkpoint_timeout = '1h'" \
		-c "ALTER SYSTEM SET max_wal_size = '32GB'"
	bash "$CLUSTER_SH" stop
	bash "$CLUSTER_SH" start
fi
bench_machine >"$OUT/machine-$LABEL.md"

# --- the databases --------------------------------------------------------
build_db() {
	local n=$1 db=a2bytes_$1
	# the empty table is made anew every time (a run leaves rows behind)
	if [[ $REBUILD != 1 && $n != 0 ]] && "$PSQL" -X -A -t -d "$db" -c 'SELECT 1 FROM bench_events LIMIT 1' >/dev/null 2>&1; then
		return
	fi
	bench_log "building $db: $n finished events in a2_events and in bench_events"
	df -h "$A2_PGDATA" | tail -n 1 | awk '{print "==> disk: " $4 " free"}' >&2
	"$PGBIN/dropdb" --if-exists "$db"
	"$PGBIN/createdb" "$db"
	bench_psql "$db" -c "CREATE EXTENSION a2 VERSION '$EXT_VERSION'" \
		-f "$BENCH_DIR/setup/schema.sql" -f "$BENCH_DIR/setup/bytes.sql" \
		-c 'CREATE EXTENSION pg_stat_statements'
	local t0=$SECONDS
	bench_psql "$db" -c "SELECT bench_history($n)" -c 'SELECT bench_sync_indexes()' >/dev/null
	bench_psql "$db" -c 'VACUUM ANALYZE a2_events' -c 'VACUUM ANALYZE bench_events' \
		-c 'ALTER TABLE a2_events SET (autovacuum_enabled = off)' \
		-c 'ALTER TABLE bench_events SET (autovacuum_enabled = off)'
	bench_log "$db built in $((SECONDS - t0)) s: $("$PSQL" -X -A -t -d "$db" -c "SELECT pg_size_pretty(pg_total_relation_size('a2_events')) || ' a2_events, ' || pg_size_pretty(pg_total_relation_size('bench_events')) || ' bench_events'")"
}

# --- one operation --------------------------------------------------------
# op_sql OP WHAT [ARGS]: WHAT is prep (unmeasured rows), prepare, warm [W],
# or line I (the I-th call, 1 .. 2K).  W picks the warm-up's row or session
# (0 by default; callgrind_ir's second session warms up on row 2K + 1, so
# that it does the same work as the first one's warm-up, not a replay).
op_sql() {
	local op=$1 what=$2 i=${3:-0} n=$((2 * K + 2))
	local w=${3:-0}
	local app='[{"type": "job", "payload": {"n": 1}}]'
	local child="jsonb_build_array(jsonb_build_object('id', \$1 || '/' || \$2 || '/done', 'type', 'done', 'payload', '{\"n\": 2}'::jsonb, 'settled', true))"
	local raw_insert="INSERT INTO bench_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready) VALUES (\$1, nextval('bench_idx'), 'job', '{\"n\": 1}', bench_uuid7(), bench_now_ms(), true)"
	local raw_claim="UPDATE bench_events e SET attempt_count = e.attempt_count + 1, first_claimed_at = COALESCE(e.first_claimed_at, n.ms), last_claimed_at = n.ms, claim_holder = 'bench', claim_expires_at = n.ms + 30000 FROM (SELECT bench_now_ms() AS ms) n WHERE e.session_id = \$1 AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.lane_ready AND (e.claim_expires_at IS NULL OR e.claim_expires_at <= n.ms) RETURNING e.idx AS idx, e.attempt_count AS att"
	local raw_done="WITH n AS (SELECT bench_now_ms() AS ms), child AS (INSERT INTO bench_events (session_id, idx, event_type, payload, event_id, created_at, cause, lane_ready, processed_at) SELECT \$1, nextval('bench_idx'), 'done', '{\"n\": 2}', \$1 || '/' || \$2 || '/done', n.ms, jsonb_build_object('index', \$2, 'attempt', \$3), true, n.ms FROM n RETURNING event_id, created_at) UPDATE bench_events e SET processed_at = child.created_at, processed_by_attempt = \$3, returned_event_ids = jsonb_build_array(child.event_id), lane_ready = false, claim_holder = NULL, claim_expires_at = NULL FROM child WHERE e.session_id = \$1 AND e.idx = \$2"
	local s
	case $op:$what in
	append:prepare) echo "PREPARE op_a(text) AS SELECT a2_append(\$1, '$app');" ;;
	append:warm) echo "EXECUTE op_a('ap-$TAG-w$w');" ;;
	append:line) echo "EXECUTE op_a('ap-$TAG');" ;;
	b1:prepare) echo "PREPARE op_a(text) AS $raw_insert;" ;;
	b1:warm) echo "EXECUTE op_a('r1-$TAG-w$w');" ;;
	b1:line) echo "EXECUTE op_a('r1-$TAG');" ;;
	b1r:prepare) echo "PREPARE op_a(text) AS ${raw_insert/bench_uuid7()/gen_random_uuid()::text};" ;;
	b1r:warm) echo "EXECUTE op_a('rr-$TAG-w$w');" ;;
	b1r:line) echo "EXECUTE op_a('rr-$TAG');" ;;
	claim:prep) echo "SELECT bench_rows('a2_events', 'cl-$TAG-', $n, 'new');" ;;
	claim:prepare) echo "PREPARE op_a(text) AS SELECT a2_claim(\$1, 'bench', 30000);" ;;
	claim:warm) echo "EXECUTE op_a('cl-$TAG-$w');" ;;
	claim:line) echo "EXECUTE op_a('cl-$TAG-$i');" ;;
	b2claim:prep) echo "SELECT bench_rows('bench_events', 'rc-$TAG-', $n, 'new');" ;;
	b2claim:prepare) echo "PREPARE op_a(text) AS $raw_claim;" ;;
	b2claim:warm) echo "EXECUTE op_a('rc-$TAG-$w');" ;;
	b2claim:line) echo "EXECUTE op_a('rc-$TAG-$i');" ;;
	complete:prep) echo "SELECT bench_rows('a2_events', 'co-$TAG-', $n, 'leased');" ;;
	complete:prepare) echo "PREPARE op_a(text, bigint) AS SELECT a2_complete(\$1, \$2, 1, $child);" ;;
	complete:warm) echo "EXECUTE op_a('co-$TAG-$w', 1);" ;;
	complete:line) echo "EXECUTE op_a('co-$TAG-$i', 1);" ;;
	b2complete:prep) echo "SELECT bench_rows('bench_events', 'rd-$TAG-', $n, 'leased');" ;;
	b2complete:prepare) echo "PREPARE op_a(text, bigint, int) AS $raw_done;" ;;
	b2complete:warm) echo "EXECUTE op_a('rd-$TAG-$w', 1, 1);" ;;
	b2complete:line) echo "EXECUTE op_a('rd-$TAG-$i', 1, 1);" ;;
	fail:prep) echo "SELECT bench_rows('a2_events', 'fa-$TAG-', $n, 'leased');" ;;
	fail:prepare) echo "PREPARE op_a(text) AS SELECT a2_fail(\$1, 1, 1, 'boom', 5);" ;;
	fail:warm) echo "EXECUTE op_a('fa-$TAG-$w');" ;;
	fail:line) echo "EXECUTE op_a('fa-$TAG-$i');" ;;
	bfail:prep) echo "SELECT bench_rows('bench_events', 'rf-$TAG-', $n, 'leased');" ;;
	bfail:prepare) echo "PREPARE op_a(text) AS UPDATE bench_events e SET failure_count = e.failure_count + 1, last_error = 'boom', last_failed_at = n.ms, last_failed_attempt = 1, failed_at = NULL, claim_holder = NULL, claim_expires_at = NULL FROM (SELECT bench_now_ms() AS ms) n WHERE e.session_id = \$1 AND e.idx = 1 AND e.attempt_count = 1 AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.claim_holder IS NOT NULL;" ;;
	bfail:warm) echo "EXECUTE op_a('rf-$TAG-$w');" ;;
	bfail:line) echo "EXECUTE op_a('rf-$TAG-$i');" ;;
	w4:prepare)
		echo "PREPARE op_a(text) AS SELECT a2_append(\$1, '$app');"
		echo "PREPARE op_b(text) AS SELECT a2_claim(\$1, 'bench', 30000);"
		echo "PREPARE op_c(text, bigint) AS SELECT a2_complete(\$1, \$2, 1, $child);"
		;;
	w4:warm) echo "EXECUTE op_a('w4-$TAG-w$w'); EXECUTE op_b('w4-$TAG-w$w'); EXECUTE op_c('w4-$TAG-w$w', 1);" ;;
	w4:line)
		# every cycle appends the job and its settled child: the job of
		# cycle i is event 2i - 1
		s=w4-$TAG
		echo "EXECUTE op_a('$s');"
		echo "EXECUTE op_b('$s');"
		echo "EXECUTE op_c('$s', $((2 * i - 1)));"
		;;
	b2:prepare)
		echo "PREPARE op_a(text) AS $raw_insert;"
		echo "PREPARE op_b(text) AS $raw_claim;"
		echo "PREPARE op_c(text, bigint, int) AS $raw_done;"
		;;
	b2:warm) echo "EXECUTE op_a('b2-$TAG-w$w'); EXECUTE op_b('b2-$TAG-w$w') \\gset"; echo "EXECUTE op_c('b2-$TAG-w$w', :idx, :att);" ;;
	b2:line)
		s=b2-$TAG
		echo "EXECUTE op_a('$s');"
		echo "EXECUTE op_b('$s') \\gset"
		echo "EXECUTE op_c('$s', :idx, :att);"
		;;
	claim_next:prep) echo "SELECT bench_rows('a2_events', 'nx-$TAG-', $n, 'old');" ;;
	claim_next:prepare) echo "PREPARE op_a AS SELECT a2_claim_next('bench', 30000);" ;;
	claim_next:warm | claim_next:line) echo "EXECUTE op_a;" ;;
	b9claim:prep) echo "SELECT bench_rows('bench_events', 'n9-$TAG-', $n, 'old');" ;;
	b9claim:prepare) echo "PREPARE op_a AS WITH now_ms AS (SELECT bench_now_ms() AS t), c AS (SELECT e.session_id, e.idx FROM bench_events e, now_ms WHERE e.lane_ready AND e.processed_at IS NULL AND e.failed_at IS NULL AND e.queue IS NULL AND e.priority IS NULL AND COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)) <= now_ms.t ORDER BY COALESCE(e.claim_expires_at, GREATEST(e.not_before, e.created_at)) LIMIT 1 FOR UPDATE OF e SKIP LOCKED) UPDATE bench_events e SET attempt_count = e.attempt_count + 1, first_claimed_at = COALESCE(e.first_claimed_at, now_ms.t), last_claimed_at = now_ms.t, claim_holder = 'b9', claim_expires_at = now_ms.t + 30000 FROM c, now_ms WHERE e.session_id = c.session_id AND e.idx = c.idx;" ;;
	b9claim:warm | b9claim:line) echo "EXECUTE op_a;" ;;
	*:prep) ;;
	*) bench_die "op_sql: unknown $op $what" ;;
	esac
}

# The psql script of one operation: prepare, warm up, block A after a
# checkpoint, block B; each block prints one STATS line.
block_script() {
	local op=$1 blk i from to
	cat <<EOF
\\set ON_ERROR_STOP 1
\\pset format unaligned
\\pset tuples_only on
\\pset fieldsep '\\t'
SET client_min_messages = warning;
SET synchronous_commit = $SYNC;
$(op_sql "$op" prepare)
\\o /dev/null
$(op_sql "$op" warm)
\\o
SELECT pg_backend_pid() AS bpid \\gset
\\setenv BYTES_BPID :bpid
EOF
	for blk in A B; do
		if [[ $blk == A ]]; then from=1 to=$K; echo 'CHECKPOINT;'; else from=$((K + 1)) to=$((2 * K)); fi
		cat <<EOF
SELECT pg_stat_statements_reset() IS NOT NULL AS reset \\gset
SELECT pg_current_wal_insert_lsn() AS lsn0, (SELECT redo_lsn FROM pg_control_checkpoint()) AS ck0 \\gset
\\setenv BYTES_TAG $blk
\\! bash "$BENCH_DIR/bytes_probe.sh" start
\\o /dev/null
EOF
		for ((i = from; i <= to; i++)); do op_sql "$op" line "$i"; done
		cat <<EOF
\\o
\\! bash "$BENCH_DIR/bytes_probe.sh" end
SELECT pg_current_wal_insert_lsn() AS lsn1, (SELECT redo_lsn FROM pg_control_checkpoint()) AS ck1 \\gset
SELECT 'STATS', '$blk', pg_wal_lsn_diff(:'lsn1', :'lsn0'), (:'ck1' <> :'ck0')::int,
	   coalesce(sum(calls), 0), coalesce(sum(shared_blks_hit), 0), coalesce(sum(shared_blks_read), 0),
	   coalesce(sum(shared_blks_dirtied), 0), coalesce(sum(shared_blks_written), 0),
	   coalesce(sum(wal_records), 0), coalesce(sum(wal_fpi), 0), coalesce(sum(wal_bytes), 0),
	   round(coalesce(sum(total_exec_time), 0)::numeric, 3)
  FROM pg_stat_statements
 WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
   AND query LIKE 'PREPARE op%';
EOF
	done
}

# Instruction counts (the server runs under callgrind, see
# bench/callgrind_server.sh): per operation, one session with the warm-up
# call and 2 x A2_BYTES_OPS calls and one with the warm-up call alone; the
# difference of their instructions, divided by the calls.
callgrind_ir() {
	local db=$1 op=$2 s pid f
	local -a ir=()
	for s in full warm; do
		{
			echo "\\o $OUT/blocks/$LABEL-$n-$op.$s.pid"
			echo 'SELECT pg_backend_pid();'
			echo '\o /dev/null'
			op_sql "$op" prepare
			if [[ $s == full ]]; then op_sql "$op" warm; else op_sql "$op" warm $((2 * K + 1)); fi
			if [[ $s == full ]]; then
				for ((i = 1; i <= 2 * K; i++)); do op_sql "$op" line "$i"; done
			fi
		} >"$OUT/blocks/$LABEL-$n-$op.$s.sql"
		"$PSQL" -X -q -A -t -d "$db" -f "$OUT/blocks/$LABEL-$n-$op.$s.sql" >/dev/null
		pid=$(tr -d ' \n' <"$OUT/blocks/$LABEL-$n-$op.$s.pid")
		f=$BYTES_CALLGRIND_DIR/cg.$pid
		for _ in $(seq 120); do [[ -s $f ]] && grep -qE '^(totals|summary):' "$f" && break; sleep 1; done
		ir+=("$(sed -n 's/^\(totals\|summary\): *\([0-9]*\).*/\2/p' "$f" | tail -n 1)")
	done
	printf '%s\t%s\t%s\t%s\t%s\n' "$LABEL" "$n" "$op" "$((2 * K))" \
		"$(((ir[0] - ir[1]) / (2 * K)))" >>"$OUT/ir-$LABEL.tsv"
}

if [[ -n ${BYTES_CALLGRIND_DIR:-} ]]; then
	printf 'label\tevents\top\tcalls\tir_per_call\n' >"$OUT/ir-$LABEL.tsv"
	for n in $SIZES; do
		db=a2bytes_$n
		build_db "$n"
		[[ $UPDATE != 1 ]] || bench_psql "$db" -c 'ALTER EXTENSION a2 UPDATE'
		bench_psql "$db" -A -t -c 'SELECT bench_sync_indexes()' >/dev/null
		for op in $ONLY; do
			prep=$(op_sql "$op" prep)
			[[ -z $prep ]] || bench_psql "$db" -c "$prep" >/dev/null
			bench_psql "$db" -c 'VACUUM ANALYZE a2_events' -c 'VACUUM ANALYZE bench_events'
			bench_log "$db: $op (instructions)"
			callgrind_ir "$db" "$op"
		done
		bench_psql "$db" -c 'SELECT bench_bytes_settle()' >/dev/null
	done
	column -t "$OUT/ir-$LABEL.tsv"
	exit 0
fi

printf 'label\tevents\top\tblock\tcalls\twal_bytes\tcheckpoints\tstmt_calls\thit\tread\tdirtied\twritten\twal_records\twal_fpi\tstmt_wal_bytes\texec_ms\tbackend_cpu_ns\tserver_cpu_ns\n' \
	>"$OUT/bytes-$LABEL.tsv.tmp"

for n in $SIZES; do
	db=a2bytes_$n
	build_db "$n"
	if [[ $UPDATE == 1 ]]; then
		bench_psql "$db" -c 'ALTER EXTENSION a2 UPDATE'
	fi
	bench_psql "$db" -A -t -c 'SELECT bench_sync_indexes()' | sed 's/^/==> bench_events index: /' >&2
	bench_log "$db: a2 $("$PSQL" -X -A -t -d "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'a2'"), $LABEL, $K calls per block"
	for op in $ONLY; do
		prep=$(op_sql "$op" prep)
		[[ -z $prep ]] || bench_psql "$db" -c "$prep" >/dev/null
		bench_psql "$db" -c 'VACUUM ANALYZE a2_events' -c 'VACUUM ANALYZE bench_events'
		script=$OUT/blocks/$LABEL-$n-$op.sql
		block_script "$op" >"$script"
		probe=$OUT/blocks/$LABEL-$n-$op.probe
		: >"$probe"
		chmod 0666 "$probe"
		bench_log "$db: $op"
		BYTES_PROBE_FILE=$probe BYTES_PGDATA=$A2_PGDATA \
			"$PSQL" -X -q -d "$db" -f "$script" >"$OUT/blocks/$LABEL-$n-$op.out"
		awk -F'\t' -v label="$LABEL" -v n="$n" -v op="$op" -v k="$K" -v probe="$probe" '
			BEGIN {
				while ((getline line < probe) > 0) {
					split(line, f, " ")
					cpu[f[1] "," f[2] ",b"] = f[3]; cpu[f[1] "," f[2] ",s"] = f[4]
				}
			}
			$1 == "STATS" {
				b = $2
				printf "%s\t%s\t%s\t%s\t%s", label, n, op, b, k
				for (i = 3; i <= 13; i++) printf "\t%s", $i
				printf "\t%d\t%d\n", cpu[b ",end,b"] - cpu[b ",start,b"], cpu[b ",end,s"] - cpu[b ",start,s"]
			}' "$OUT/blocks/$LABEL-$n-$op.out" >>"$OUT/bytes-$LABEL.tsv.tmp"
	done
	bench_psql "$db" -c 'SELECT bench_bytes_settle()' >/dev/null
done
mv "$OUT/bytes-$LABEL.tsv.tmp" "$OUT/bytes-$LABEL.tsv"
bench_log "wrote $OUT/bytes-$LABEL.tsv"
python3 "$BENCH_DIR/bytes_report.py" "$OUT/bytes-$LABEL.tsv" || true
