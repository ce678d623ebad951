#!/usr/bin/env bash
#
# bench/w17.sh -- the cost of scheduling (issue 17): W1 (append) and W4
# (append + claim + complete) on a2 0.3.0 WITH the scheduling objects
# against the same library WITHOUT them, i.e. a2 as it was before issue 17.
#
# Two databases with the same extension and library:
#   a2w17_on   CREATE EXTENSION a2 (0.3.0: a2_events.not_before, the
#              partial index a2_events_due, a2_events_available keyed by
#              COALESCE(claim_expires_at, GREATEST(not_before, created_at)))
#   a2w17_off  the same, then a2_events_due dropped, not_before dropped and
#              a2_events_available rebuilt with its 0.2.0 key
#              COALESCE(claim_expires_at, created_at) and the same predicate
#              (src/sql/upgrade/a2--0.1.0--0.2.0.sql), and the extension's
#              version set back to 0.2.0.  src/statements.c picks the
#              statements' text by the installed version (extversion), so
#              the library runs its 0.2.0 statements here; the setup checks
#              that with auto_explain (no statement mentions not_before).
# A dropped column stays in the row's null bitmap, which changes nothing
# here: a2_events has 9 to 72 columns either way, so the heap tuple header
# is 32 bytes in both, and a NULL not_before takes no data bytes.
#
# Parts (A2_W17_ONLY, default "check count tps"):
#   check  the statement texts of each database (auto_explain, nested
#          statements): how many mention not_before
#   count  (before tps, while both databases have the same history) the
#          deterministic cost: WAL bytes and records and buffers of one
#          a2_append, a2_claim, a2_complete and a2_claim_next
#          (bench/w17_wal.sql, EXPLAIN ANALYZE BUFFERS WAL, rolled back),
#          and WAL bytes per pgbench transaction over A2_W17_COUNT_TX
#          transactions of W1 and W4 at 1 client (commit records included;
#          autovacuum off for a2_events meanwhile).
#   ir     (not by default: needs valgrind, restarts the cluster under
#          callgrind) instructions per W1 and W4 transaction in backends
#   together  (not by default) W1 and W4 on both databases at the same
#          time, per repeat: a relative cost that the machine's load moves
#          alike for both
#   cpu    (not by default) backend CPU time per W1 and W4 transaction
#          (/proc/PID/schedstat), REPEAT interleaved pairs of psql sessions
#          running prepared statements, alternating which goes first
#   tps    pgbench runs: per repeat, for each (workload, clients) the two
#          databases back to back, in alternating order from one repeat to
#          the next; repeats interleaved.  Reports median TPS, the ranges,
#          and the paired ratios (with/without of the two runs of a pair).
#
# Settings (environment; defaults in brackets):
#   A2_BENCH_SECONDS     duration of each pgbench run [8]
#   A2_BENCH_REPEAT      repeats [9]
#   A2_BENCH_CLIENTS     client counts [1 4]
#   A2_W17_PGOPTIONS     PGOPTIONS for the pgbench runs, e.g.
#                        "-c synchronous_commit=off" [none]
#   A2_W17_COUNT_TX      transactions per count run [2000]
#   A2_W17_PREFILL       sessions of 10 processed events in each database
#                        at the start, plus a tenth as many with one
#                        unprocessed event [10000]
#   A2_W17_CPU_N1, A2_W17_CPU_N4  transactions per cpu run of W1, W4 [5000, 1500]
#   A2_W17_IR_N          transactions per instruction count [500]
#   A2_W17_IR_ROUNDS     instruction counts per workload and database,
#                        alternating which database goes first [3]
#   A2_W17_ONLY          parts ["check count tps"; "ir" is extra]
#   A2_BENCH_OUT         output directory [$(dirname A2_PGDATA)/results-w17/<timestamp>]
#   A2_PGDATA, A2_PGPORT the cluster, as for bench/run.sh (a2 preloaded)

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-8}
REPEAT=${A2_BENCH_REPEAT:-9}
CLIENTS=${A2_BENCH_CLIENTS:-1 4}
COUNT_TX=${A2_W17_COUNT_TX:-2000}
IR_N=${A2_W17_IR_N:-500}
IR_ROUNDS=${A2_W17_IR_ROUNDS:-3}
PREFILL=${A2_W17_PREFILL:-10000}
CPU_N1=${A2_W17_CPU_N1:-5000}
CPU_N4=${A2_W17_CPU_N4:-1500}
ONLY=${A2_W17_ONLY:-check count tps}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-w17/$(date +%Y%m%d-%H%M%S)}
ON=a2w17_on
OFF=a2w17_off

want() { [[ " $ONLY " == *" $1 "* ]]; }

export A2_PRELOAD=1
bench_cluster_start
mkdir -p "$OUT/pgbench"
bench_machine >"$OUT/machine.md"

bench_log "setup $ON and $OFF"
for db in $ON $OFF; do
	"$PGBIN/dropdb" --if-exists "$db"
	"$PGBIN/createdb" "$db"
	bench_psql "$db" -c 'CREATE EXTENSION a2'
done
bench_psql $OFF <<'EOF'
SET client_min_messages = warning;
BEGIN;
DROP INDEX a2_events_due;
DROP INDEX a2_events_available;
ALTER TABLE a2_events DROP COLUMN not_before;
CREATE INDEX a2_events_available
	ON a2_events ((COALESCE(claim_expires_at, created_at)), session_id)
	WHERE lane_ready AND processed_at IS NULL AND failed_at IS NULL;
-- the library reads the objects' version from here (a benchmark's shortcut:
-- only the objects above differ between 0.2.0 and 0.3.0 for these calls)
UPDATE pg_extension SET extversion = '0.2.0' WHERE extname = 'a2';
COMMIT;
EOF
# The same starting data in both, after the schema change so that it is
# laid out alike: PREFILL sessions of 10 processed events and a backlog of
# PREFILL / 10 sessions with one unprocessed, claimable event that nobody
# claims (a live queue has some, and the planner statistics should see
# them); then every index rebuilt and VACUUM ANALYZE, so that neither
# database starts with an index built by inserts and the other by CREATE
# INDEX, and the plans do not depend on when autovacuum last analyzed.
for db in $ON $OFF; do
	bench_psql "$db" -v n="$PREFILL" <<'EOF'
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at,
					   lane_ready, processed_at, processed_by_attempt, returned_event_ids,
					   first_claimed_at, last_claimed_at, attempt_count)
SELECT 'pre-' || s, i, 'prefill', jsonb_build_object('i', i),
	   'pre-' || lpad(s::text, 8, '0') || '-' || lpad(i::text, 4, '0'),
	   t.base + s * 10 + i, true, t.base + s * 10 + i + 1, 1, '[]'::jsonb,
	   t.base + s * 10 + i, t.base + s * 10 + i, 1
  FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 86400000 AS base) t,
	   generate_series(1, :n) s, generate_series(1, 10) i;
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
SELECT 'backlog-' || s, 1, 'job', jsonb_build_object('s', s),
	   'backlog-' || lpad(s::text, 8, '0'), t.base + s, true
  FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 3600000 AS base) t,
	   generate_series(1, :n / 10) s;
REINDEX TABLE a2_events;
VACUUM ANALYZE a2_events;
EOF
done
# what each database has now
for db in $ON $OFF; do
	bench_psql "$db" -A -t -c "SELECT '$db', string_agg(indexrelid::regclass || ': ' || pg_get_indexdef(indexrelid), E'\n' ORDER BY indexrelid::regclass::text) FROM pg_index WHERE indrelid = 'a2_events'::regclass" \
		-c "SELECT 'not_before column: ' || count(*) FROM pg_attribute WHERE attrelid = 'a2_events'::regclass AND attname = 'not_before' AND NOT attisdropped" \
		-c "SELECT 'attributes (with dropped): ' || max(attnum) FROM pg_attribute WHERE attrelid = 'a2_events'::regclass"
done >"$OUT/schema.txt"
bench_psql postgres -c CHECKPOINT

# The statement texts the library runs in a database: one W4 cycle and a
# claim_next with auto_explain logging every nested statement to the client.
statements() {
	bench_psql "$1" 2>&1 <<'EOF'
LOAD 'auto_explain';
SET auto_explain.log_min_duration = 0;
SET auto_explain.log_nested_statements = on;
SET auto_explain.log_level = notice;
SET client_min_messages = notice;
\o /dev/null
SELECT a2_append('w17-check', '[{"type": "job"}]');
SELECT a2_claim('w17-check', 'check', 30000);
SELECT a2_complete('w17-check', 1, 1, '[{"id": "w17-check/done", "type": "done", "settled": true}]');
SELECT a2_append('w17-check2', '[{"type": "job"}]');
SELECT a2_claim_next('check', 30000, 1);
EOF
}

if want check; then
	{
		for db in $ON $OFF; do
			statements "$db" >"$OUT/statements-$db.log"
			printf '%s: %s statements logged, %s of them mention not_before\n' "$db" \
				"$(grep -c 'Query Text:' "$OUT/statements-$db.log")" \
				"$(awk '/Query Text:/ { q = 1 } q && /not_before/ { n++; q = 0 } /Query Text:/ == 0 && /^NOTICE/ { q = 0 } END { print n + 0 }' "$OUT/statements-$db.log")"
		done
	} | tee "$OUT/check.txt"
	# the two databases' checks committed events; clear them
	for db in $ON $OFF; do bench_psql "$db" -c "DELETE FROM a2_events WHERE session_id LIKE 'w17-check%'"; done
fi

# One pgbench run: key clients db script [-D definitions...]
run_one() {
	local key=$1 c=$2 db=$3 script=$4
	shift 4
	local j=$((c < NPROC ? c : NPROC)) defs=() kv tps out
	for kv in "$@"; do defs+=(-D "$kv"); done
	out=$OUT/pgbench/${key}_c${c}_r${rep}${RUNS_TAG:-}.out
	bench_log "run $rep/$REPEAT: $key, $c client(s), ${SECS}s"
	PGOPTIONS=${A2_W17_PGOPTIONS:-} "$PGBENCH" -n -M prepared -r -f "$BENCH_DIR/$script" \
		-T "$SECS" -c "$c" -j "$j" "${defs[@]}" "$db" >"$out" 2>&1 ||
		{ cat "$out" >&2; bench_die "pgbench failed: $key"; }
	grep -q '^number of failed transactions: 0 ' "$out" ||
		{ cat "$out" >&2; bench_die "failed transactions: $key"; }
	tps=$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")
	printf '%s\t%s\t%s\t%s\n' "$key" "$c" "$rep" "$tps" >>"$RUNS"
}

# Run two commands back to back, the first first on odd repeats.
alternate() {
	if ((rep % 2)); then eval "$1"; eval "$2"; else eval "$2"; eval "$1"; fi
}

# WAL per transaction over COUNT_TX pgbench transactions at 1 client, after
# a checkpoint (so full-page images are part of it, alike in both): records,
# record bytes and full-page-image bytes between the WAL insert positions
# before and after, from pg_waldump --stats (everything the cluster wrote
# meanwhile: nothing else runs but the notifier; autovacuum is off for
# a2_events during the count).  key is the workload (its sessions are named
# alike in both databases), db the database.
count_one() {
	local key=$1 db=$2 script=$3 lsn0 lsn1 f=$OUT/waldump-$1-$2.txt
	bench_psql "$db" -c 'ALTER TABLE a2_events SET (autovacuum_enabled = off)' -c CHECKPOINT
	lsn0=$(bench_psql "$db" -A -t -c 'SELECT pg_current_wal_insert_lsn()')
	"$PGBENCH" -n -M prepared -f "$BENCH_DIR/$script" -t "$COUNT_TX" -c 1 -D prefix="count-$key-" "$db" \
		>"$OUT/pgbench/count_${key}_$db.out" 2>&1 ||
		{ cat "$OUT/pgbench/count_${key}_$db.out" >&2; bench_die "pgbench failed: count $key $db"; }
	lsn1=$(bench_psql "$db" -A -t -c 'SELECT pg_current_wal_insert_lsn()')
	bench_psql "$db" -c 'ALTER TABLE a2_events RESET (autovacuum_enabled)'
	"$PGBIN/pg_waldump" -p "$A2_PGDATA/pg_wal" -s "$lsn0" -e "$lsn1" --stats=record >"$f" 2>&1 ||
		bench_die "pg_waldump failed: $(tail -n 3 "$f")"
	# Total  N (%)  record size (%)  FPI size (%)  combined size (%)
	awk -v k="$key" -v d="$db" -v n="$COUNT_TX" '$1 == "Total" {
		gsub(/[()%]/, ""); printf "%s %s: per transaction %.2f WAL records, %.1f record bytes, %.1f full-page-image bytes, %.1f bytes in all\n", k, d, $2 / n, $3 / n, $5 / n, $7 / n }' "$f"
}

if want count; then
	{
		echo '### per operation (EXPLAIN ANALYZE BUFFERS WAL, bench/w17_wal.sql)'
		for db in $ON $OFF; do
			echo "--- $db"
			bench_psql "$db" -f "$BENCH_DIR/w17_wal.sql"
		done
		echo
		echo "### WAL bytes per pgbench transaction, $COUNT_TX transactions, 1 client, commit records included"
		for w in W1 W4; do
			s=$([[ $w == W1 ]] && echo w1_append.sql || echo w4_cycle.sql)
			for db in $ON $OFF; do count_one "$w" "$db" "$s"; done
		done
	} 2>&1 | tee "$OUT/count.txt"
fi
# Instructions (the server under callgrind, bench/callgrind_server.sh,
# counting backends only): per workload and database, one psql session with
# a warm-up transaction plus IR_N more and one with the warm-up alone; the
# difference of their instruction counts divided by IR_N.  The statements
# are W1's and W4's, prepared (PREPARE/EXECUTE, as pgbench -M prepared).
#
# ir_script W N SESSION PIDFILE [PROBEFILE]: with PROBEFILE, the backend's
# CPU time (/proc/PID/schedstat: nanoseconds on a CPU, nanoseconds waiting
# for one) is appended to it after the warm-up transaction and at the end.
ir_script() {
	local w=$1 n=$2 s=$3 pidf=$4 probe=${5:-} i
	cat <<SQL
\\set ON_ERROR_STOP 1
\\o $pidf
SELECT pg_backend_pid();
\\o /dev/null
SELECT pg_backend_pid() AS bpid \\gset
\\setenv W17_BPID :bpid
PREPARE ap(text) AS SELECT a2_append(\$1, '[{"type": "bench", "payload": {"n": 1}}]');
PREPARE cl(text) AS SELECT c->'events'->0->>'index' AS idx, c->'events'->0->>'attemptCount' AS att
  FROM a2_claim(\$1, 'bench', 30000) AS c;
PREPARE co(text, bigint, integer) AS SELECT a2_complete(\$1, \$2, \$3,
	jsonb_build_array(jsonb_build_object('id', \$1 || '/' || \$2 || '/done',
		'type', 'done', 'payload', '{"n": 2}'::jsonb, 'settled', true)));
SQL
	for ((i = 0; i <= n; i++)); do
		echo "EXECUTE ap('$s');"
		if [[ $w == W4 ]]; then
			echo "EXECUTE cl('$s') \\gset"
			echo "EXECUTE co('$s', :idx, :att);"
		fi
		if [[ -n $probe ]] && ((i == 0 || i == n)); then
			echo "\\! read -r ns wait _ </proc/\$W17_BPID/schedstat; echo \$ns \$wait >>'$probe'"
		fi
	done
}

# Backend CPU time per transaction, timed: per repeat, workload and
# database (alternating which goes first), one psql session running the
# same prepared statements as the instruction count, CPU_N[workload]
# transactions after a warm-up one; CPU time is what the load of other
# processes moves least (it does not count time spent waiting for a CPU or
# for the disk), though caches shared with them still do.
cpu_one() {
	local w=$1 db=$2 n=$3 base=$OUT/cpu/$1-$2-r$rep
	: >"$base.probe"
	ir_script "$w" "$n" "cpu-$w-r$rep" "$base.pid" "$base.probe" >"$base.sql"
	PGOPTIONS=${A2_W17_PGOPTIONS:-} "$PSQL" -X -q -A -t -d "$db" -f "$base.sql" >/dev/null
	awk -v w="$w" -v d="$db" -v r="$rep" -v n="$n" 'NR == 1 { a = $1; b = $2 } NR == 2 {
		printf "%s\t%s\t%s\t%.1f\t%.1f\n", w, d, r, ($1 - a) / n / 1000, ($2 - b) / n / 1000 }' "$base.probe" |
		tee -a "$OUT/cpu.tsv"
}

ir_one() {
	local w=$1 db=$2 round=$3 kind n pid f base
	local -a ir=()
	for kind in full warm; do
		n=$([[ $kind == full ]] && echo "$IR_N" || echo 0)
		base=$OUT/ir/$w-$db-r$round-$kind
		ir_script "$w" "$n" "ir-$w-r$round-$kind" "$base.pid" >"$base.sql"
		"$PSQL" -X -q -A -t -d "$db" -f "$base.sql" >/dev/null
		pid=$(tr -d ' \n' <"$base.pid")
		f=$IR_DIR/cg.$pid
		for _ in $(seq 120); do [[ -s $f ]] && grep -qE '^(totals|summary):' "$f" && break; sleep 1; done
		ir+=("$(sed -n 's/^\(totals\|summary\): *\([0-9]*\).*/\2/p' "$f" | tail -n 1)")
	done
	printf '%s\t%s\t%s\t%s\n' "$w" "$db" "$round" "$(((ir[0] - ir[1]) / IR_N))" | tee -a "$OUT/ir.tsv"
}

if want ir; then
	IR_DIR=$(dirname "$A2_PGDATA")/callgrind
	mkdir -p "$OUT/ir"
	: >"$OUT/ir.tsv"
	# the same statistics in both, and no autovacuum in between
	for db in $ON $OFF; do
		bench_psql "$db" -c 'ALTER TABLE a2_events SET (autovacuum_enabled = off)' -c 'VACUUM ANALYZE a2_events'
	done
	bash "$BENCH_DIR/callgrind_server.sh" start
	for ((round = 1; round <= IR_ROUNDS; round++)); do
		for w in W1 W4; do
			if ((round % 2)); then
				ir_one "$w" $ON "$round"
				ir_one "$w" $OFF "$round"
			else
				ir_one "$w" $OFF "$round"
				ir_one "$w" $ON "$round"
			fi
		done
	done
	bash "$BENCH_DIR/callgrind_server.sh" stop
	bash "$CLUSTER_SH" start
	for db in $ON $OFF; do bench_psql "$db" -c 'ALTER TABLE a2_events RESET (autovacuum_enabled)'; done
	python3 - "$OUT/ir.tsv" "$ON" "$OFF" <<'EOF' | tee "$OUT/ir.md"
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
on, off = sys.argv[2], sys.argv[3]
print('| workload | instructions per transaction, with (median; rounds) | without (median; rounds) | with/without (medians) | per round |')
print('|---|---|---|---|---|')
for w in ('W1', 'W4'):
    a = {r[2]: int(r[3]) for r in rows if r[0] == w and r[1] == on}
    b = {r[2]: int(r[3]) for r in rows if r[0] == w and r[1] == off}
    ma, mb = statistics.median(a.values()), statistics.median(b.values())
    rounds = sorted(a, key=int)
    print('| %s | %s; %s | %s; %s | %.3f | %s |' % (
        w, '{:,.0f}'.format(ma), ' '.join('{:,}'.format(a[r]) for r in rounds),
        '{:,.0f}'.format(mb), ' '.join('{:,}'.format(b[r]) for r in rounds), ma / mb,
        ' '.join('%.3f' % (a[r] / b[r]) for r in rounds)))
EOF
fi

# The table of a tps part: summarize RUNS_TSV >TABLE
summarize() {
	python3 - "$1" "$CLIENTS" <<'EOF'
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
tps = {}
for k, c, r, v in rows:
    tps[(k, c, int(r))] = float(v)
print('| workload | clients | with (median TPS) | without | with/without of medians | paired ratios: median | paired ratios: range | runs with (TPS) | runs without (TPS) |')
print('|---|---|---|---|---|---|---|---|---|')
for w in ('W1', 'W4'):
    for c in sys.argv[2].split():
        reps = sorted(r for (k, cc, r) in tps if k == w + '_on' and cc == c)
        on = [tps[(w + '_on', c, r)] for r in reps]
        off = [tps[(w + '_off', c, r)] for r in reps]
        pr = [a / b for a, b in zip(on, off)]
        mon, moff = statistics.median(on), statistics.median(off)
        print('| %s | %s | %.0f | %.0f | %.3f | %.3f | %.3f–%.3f | %.0f–%.0f | %.0f–%.0f |' % (
            w, c, mon, moff, mon / moff, statistics.median(pr), min(pr), max(pr),
            min(on), max(on), min(off), max(off)))
print()
print('Paired ratios per repeat (with/without):')
print()
for w in ('W1', 'W4'):
    for c in sys.argv[2].split():
        reps = sorted(r for (k, cc, r) in tps if k == w + '_on' and cc == c)
        print('- %s c%s: %s' % (w, c, ' '.join('%.3f' % (tps[(w + '_on', c, r)] / tps[(w + '_off', c, r)]) for r in reps)))
EOF
}

if want cpu; then
	mkdir -p "$OUT/cpu"
	: >"$OUT/cpu.tsv"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for db in $ON $OFF; do bench_psql "$db" -c 'ANALYZE a2_events'; done
		for w in W1 W4; do
			n=$([[ $w == W1 ]] && echo "$CPU_N1" || echo "$CPU_N4")
			alternate "cpu_one $w $ON $n" "cpu_one $w $OFF $n"
		done
	done
	python3 - "$OUT/cpu.tsv" "$ON" "$OFF" <<'EOF' | tee "$OUT/cpu.md"
import statistics, sys
rows = [l.split('\t') for l in open(sys.argv[1]).read().split('\n') if l]
on, off = sys.argv[2], sys.argv[3]
print('| workload | backend CPU µs per transaction, with (median; range) | without (median; range) | with/without (medians) | paired ratios: median | range | waiting for a CPU, µs per transaction (median with / without) |')
print('|---|---|---|---|---|---|---|')
for w in ('W1', 'W4'):
    a = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == on}
    b = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == off}
    wa = [float(r[4]) for r in rows if r[0] == w and r[1] == on]
    wb = [float(r[4]) for r in rows if r[0] == w and r[1] == off]
    pr = [a[k] / b[k] for k in a if k in b]
    ma, mb = statistics.median(a.values()), statistics.median(b.values())
    print('| %s | %.1f; %.1f–%.1f | %.1f; %.1f–%.1f | %.3f | %.3f | %.3f–%.3f | %.0f / %.0f |' % (
        w, ma, min(a.values()), max(a.values()), mb, min(b.values()), max(b.values()), ma / mb,
        statistics.median(pr), min(pr), max(pr), statistics.median(wa), statistics.median(wb)))
print()
for w in ('W1', 'W4'):
    a = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == on}
    b = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == off}
    print('- %s paired ratios per repeat: %s' % (w, ' '.join('%.3f' % (a[k] / b[k]) for k in sorted(a, key=int) if k in b)))
EOF
fi

if want tps; then
	RUNS=$OUT/runs.tsv
	: >"$RUNS"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		# plans must not depend on when autovacuum last analyzed (as bench/run.sh)
		for db in $ON $OFF; do bench_psql "$db" -c 'ANALYZE a2_events'; done
		for c in $CLIENTS; do
			alternate "run_one W1_on $c $ON w1_append.sql prefix=w1-r$rep-c$c-" \
				"run_one W1_off $c $OFF w1_append.sql prefix=w1-r$rep-c$c-"
			alternate "run_one W4_on $c $ON w4_cycle.sql prefix=w4-r$rep-c$c-" \
				"run_one W4_off $c $OFF w4_cycle.sql prefix=w4-r$rep-c$c-"
		done
	done
	summarize "$OUT/runs.tsv" >"$OUT/tps.md"
	cat "$OUT/tps.md"
fi

# The two databases at the same time, each with the same clients: both see
# the same load from outside, so their ratio does not move with it (each
# gets about half of the machine; with synchronous_commit on their commits
# share the WAL flushes, so use A2_W17_PGOPTIONS="-c synchronous_commit=off").
if want together; then
	RUNS=$OUT/together.tsv RUNS_TAG=-together
	: >"$RUNS"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for db in $ON $OFF; do bench_psql "$db" -c 'ANALYZE a2_events'; done
		for c in $CLIENTS; do
			for w in W1 W4; do
				s=$([[ $w == W1 ]] && echo w1_append.sql || echo w4_cycle.sql)
				run_one ${w}_on "$c" $ON "$s" prefix="t${w,,}-r$rep-c$c-" &
				p1=$!
				run_one ${w}_off "$c" $OFF "$s" prefix="t${w,,}-r$rep-c$c-" &
				p2=$!
				wait $p1
				wait $p2
			done
		done
	done
	summarize "$RUNS" >"$OUT/together.md"
	cat "$OUT/together.md"
fi

echo "output: $OUT" >&2
