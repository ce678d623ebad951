#!/usr/bin/env bash
#
# bench/w28.sh -- the cost of durable waits (issue 28, part 2) for work
# that does not wait: W1 (append) and W4 (append + claim + complete) on a2
# 0.4.0 WITH the waits objects against the same library WITHOUT them,
# counted as in issue 17 (bench/w17.sh), then what an append costs that
# satisfies one of 1, 10 and 100 waiting events (bench/w28_satisfy.sql).
#
# Two databases with the same extension and library:
#   a2w28_on   CREATE EXTENSION a2 (0.4.0: a2_events.wait_for and
#              wait_result, the partial index a2_events_waiting; every
#              append probes that index once)
#   a2w28_off  the same, then a2_events_waiting and the two columns
#              dropped and the extension's version set back to 0.3.0, so
#              the library runs its 0.3.0 statements and no probe (an
#              append to objects older than 0.4.0 skips it).
# A dropped column stays in the row's null bitmap, which changes nothing
# here: 23 or 25 attributes both give a 32-byte heap tuple header.
#
# Parts (A2_W28_ONLY, default "count tps satisfy"):
#   count    WAL and buffers of one a2_append, a2_claim, a2_complete and
#            a2_claim_next (bench/w17_wal.sql), and WAL per pgbench
#            transaction over A2_W28_COUNT_TX transactions of W1 and W4 at
#            1 client (pg_waldump --stats, commit records included)
#   tps      W1 and W4 at 1 client, A2_BENCH_REPEAT pairs of
#            A2_BENCH_SECONDS runs, alternating which database goes first;
#            median TPS and the median of the paired ratios (on / off)
#   satisfy  bench/w28_satisfy.sql in a2w28_on, A2_W28_REPS timed appends
#            per case
#
# Settings: A2_BENCH_SECONDS [5], A2_BENCH_REPEAT [5], A2_W28_COUNT_TX
# [1000], A2_W28_PREFILL [2000], A2_W28_REPS [500], A2_BENCH_OUT
# [$(dirname A2_PGDATA)/results-w28/<timestamp>], A2_PGDATA, A2_PGPORT and
# PGBIN (the server's bindir) as for bench/run.sh (a2 preloaded).

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SECS=${A2_BENCH_SECONDS:-5}
REPEAT=${A2_BENCH_REPEAT:-5}
COUNT_TX=${A2_W28_COUNT_TX:-1000}
PREFILL=${A2_W28_PREFILL:-2000}
REPS=${A2_W28_REPS:-500}
ONLY=${A2_W28_ONLY:-count tps satisfy}
OUT=${A2_BENCH_OUT:-$(dirname "$A2_PGDATA")/results-w28/$(date +%Y%m%d-%H%M%S)}
ON=a2w28_on
OFF=a2w28_off

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
bench_psql $OFF <<'EOF2'
SET client_min_messages = warning;
BEGIN;
DROP INDEX a2_events_waiting;
ALTER TABLE a2_events DROP COLUMN wait_result, DROP COLUMN wait_for;
-- the library reads the objects' version from here (a benchmark's
-- shortcut: only the objects above differ between 0.3.0 and this branch's
-- 0.4.0 for these calls)
UPDATE pg_extension SET extversion = '0.3.0' WHERE extname = 'a2';
COMMIT;
EOF2
# the same starting data in both, laid out alike (as bench/w17.sh)
for db in $ON $OFF; do
	bench_psql "$db" -v n="$PREFILL" <<'EOF2'
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at,
					   lane_ready, processed_at, processed_by_attempt, returned_event_ids,
					   first_claimed_at, last_claimed_at, attempt_count)
SELECT 'pre-' || s, i, 'prefill', jsonb_build_object('i', i),
	   'pre-' || lpad(s::text, 8, '0') || '-' || lpad(i::text, 4, '0'),
	   t.base + s * 10 + i, true, t.base + s * 10 + i + 1, 1, '[]'::jsonb,
	   t.base + s * 10 + i, t.base + s * 10 + i, 1
  FROM (SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 86400000 AS base) t,
	   generate_series(1, :n) s, generate_series(1, 10) i;
REINDEX TABLE a2_events;
VACUUM ANALYZE a2_events;
EOF2
done
for db in $ON $OFF; do
	bench_psql "$db" -A -t -c "SELECT '$db: version ' || extversion FROM pg_extension WHERE extname = 'a2'" \
		-c "SELECT '  wait columns: ' || count(*) FROM pg_attribute WHERE attrelid = 'a2_events'::regclass AND attname LIKE 'wait_%' AND NOT attisdropped" \
		-c "SELECT '  a2_events_waiting: ' || count(*) FROM pg_class WHERE relname = 'a2_events_waiting'"
done | tee "$OUT/schema.txt"
bench_psql postgres -c CHECKPOINT

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
		echo "### WAL per pgbench transaction, $COUNT_TX transactions, 1 client, commit records included"
		for w in W1 W4; do
			s=$([[ $w == W1 ]] && echo w1_append.sql || echo w4_cycle.sql)
			for db in $ON $OFF; do count_one "$w" "$db" "$s"; done
		done
	} 2>&1 | tee "$OUT/count.txt"
fi

tps_one() { # key db script
	local out=$OUT/pgbench/$1_$2_r$rep.out
	"$PGBENCH" -n -M prepared -f "$BENCH_DIR/$3" -T "$SECS" -c 1 -D prefix="tps-$1-$rep-" "$2" >"$out" 2>&1 ||
		{ cat "$out" >&2; bench_die "pgbench failed: $1 $2"; }
	printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$rep" "$(sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$out")" >>"$OUT/tps.tsv"
}

if want tps; then
	: >"$OUT/tps.tsv"
	for ((rep = 1; rep <= REPEAT; rep++)); do
		for w in W1 W4; do
			s=$([[ $w == W1 ]] && echo w1_append.sql || echo w4_cycle.sql)
			bench_log "tps $rep/$REPEAT: $w"
			if ((rep % 2)); then tps_one $w $ON $s; tps_one $w $OFF $s; else tps_one $w $OFF $s; tps_one $w $ON $s; fi
		done
	done
	python3 - "$OUT/tps.tsv" "$ON" "$OFF" <<'EOF2' | tee "$OUT/tps.txt"
import sys, statistics as st
rows = [l.split('\t') for l in open(sys.argv[1]).read().splitlines()]
on, off = sys.argv[2], sys.argv[3]
for w in ('W1', 'W4'):
    a = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == on}
    b = {r[2]: float(r[3]) for r in rows if r[0] == w and r[1] == off}
    ratios = [a[k] / b[k] for k in a if k in b]
    print(f"{w}, 1 client: with waits median {st.median(a.values()):.0f} TPS (range {min(a.values()):.0f}-{max(a.values()):.0f}), "
          f"without {st.median(b.values()):.0f} TPS (range {min(b.values()):.0f}-{max(b.values()):.0f}); "
          f"paired ratio with/without median {st.median(ratios):.3f} (range {min(ratios):.3f}-{max(ratios):.3f})")
EOF2
fi

if want satisfy; then
	bench_psql $ON -v reps="$REPS" -f "$BENCH_DIR/w28_satisfy.sql" 2>&1 | tee "$OUT/satisfy.txt"
fi
bench_log "results in $OUT"
