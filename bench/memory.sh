#!/usr/bin/env bash
#
# bench/memory.sh -- backend memory and batch-size scaling checks.
#
# 1. Memory: one backend makes A2_BENCH_MEM_FIRST (1,000) a2 calls, then the
#    total of pg_backend_memory_contexts.total_bytes is recorded; then it
#    makes A2_BENCH_MEM_CALLS (100,000) more calls, in transactions of 1,000
#    calls each (bench_mem_calls: append, claim, put_snapshots with a pin,
#    complete, read_state and a caught validation error, in turn), and the
#    total is recorded again.  A leak shows as growth proportional to the
#    number of calls; caches filled by the first calls do not grow.
# 2. Scaling: the median time (5 runs, each rolled back) to claim a batch of
#    10,000 eligible events versus 1,000 (and, for comparison, to append and
#    to read batches of those sizes).  Linear cost means a ratio near 10
#    (up to 20 is reported as ~linear: cache effects on bigger results);
#    quadratic cost would show as a ratio near 100.
#
# Same cluster settings as bench/run.sh (A2_PGDATA, A2_PGPORT,
# A2_BENCH_KEEP); uses database <A2_BENCH_DB>_mem [a2bench_mem].

set -euo pipefail

# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

FIRST=${A2_BENCH_MEM_FIRST:-1000}
CALLS=${A2_BENCH_MEM_CALLS:-100000}
CHUNK=1000
DB=${A2_BENCH_DB:-a2bench}_mem
[[ $FIRST =~ ^[1-9][0-9]*$ && $CALLS =~ ^[1-9][0-9]*$ ]] ||
	bench_die "A2_BENCH_MEM_FIRST and A2_BENCH_MEM_CALLS must be positive integers"

bench_cluster_start
bench_log "setup: database $DB"
bench_create_db "$DB"
bench_psql "$DB" -f "$BENCH_DIR/setup/memory.sql"

# ---------------------------------------------------------------- memory
script=$(mktemp)
trap 'rm -f -- "$script"; bench_cluster_stop' EXIT
{
	printf '%s\n' "SELECT bench_mem_calls('mem-0', $FIRST) \\g /dev/null"
	printf '%s\n' "INSERT INTO bench_mem SELECT 'first', name, ident, level, total_bytes FROM pg_backend_memory_contexts;"
	printf '%s\n' "SELECT extract(epoch FROM clock_timestamp()) AS t0 \\gset"
	left=$CALLS
	i=1
	while ((left > 0)); do
		n=$((left < CHUNK ? left : CHUNK))
		printf '%s\n' "SELECT bench_mem_calls('mem-$i', $n) \\g /dev/null"
		left=$((left - n))
		i=$((i + 1))
	done
	printf '%s\n' "SELECT round(($CALLS / (extract(epoch FROM clock_timestamp()) - :t0))::numeric) AS rate \\gset"
	printf '%s\n' "INSERT INTO bench_mem SELECT 'after', name, ident, level, total_bytes FROM pg_backend_memory_contexts;"
	printf '%s\n' "\\echo calls per second during the long phase: :rate"
} >"$script"
bench_log "memory: $FIRST calls, then $CALLS calls in one backend"
bench_psql "$DB" -f "$script"

bench_psql "$DB" -P footer=off <<SQL
\\echo
\\echo Backend memory (sum of pg_backend_memory_contexts.total_bytes):
SELECT pg_size_pretty(sum(total_bytes) FILTER (WHERE label = 'first')) AS "after $FIRST calls",
       pg_size_pretty(sum(total_bytes) FILTER (WHERE label = 'after')) AS "after $CALLS more calls",
       sum(total_bytes) FILTER (WHERE label = 'after')
         - sum(total_bytes) FILTER (WHERE label = 'first') AS "growth (bytes)",
       round((sum(total_bytes) FILTER (WHERE label = 'after')
         - sum(total_bytes) FILTER (WHERE label = 'first'))::numeric / $CALLS, 2) AS "bytes per call"
  FROM bench_mem;
\\echo Contexts that grew or shrank most (by name):
SELECT name, sum(total_bytes) FILTER (WHERE label = 'first') AS first_bytes,
       sum(total_bytes) FILTER (WHERE label = 'after') AS after_bytes,
       coalesce(sum(total_bytes) FILTER (WHERE label = 'after'), 0)
         - coalesce(sum(total_bytes) FILTER (WHERE label = 'first'), 0) AS growth
  FROM bench_mem GROUP BY name
HAVING coalesce(sum(total_bytes) FILTER (WHERE label = 'after'), 0)
         <> coalesce(sum(total_bytes) FILTER (WHERE label = 'first'), 0)
 ORDER BY abs(coalesce(sum(total_bytes) FILTER (WHERE label = 'after'), 0)
         - coalesce(sum(total_bytes) FILTER (WHERE label = 'first'), 0)) DESC
 LIMIT 8;
SQL

# ---------------------------------------------------------------- scaling
bench_log "scaling: batches of 1,000 and 10,000 events"
bench_psql "$DB" -P footer=off <<'SQL'
CREATE TABLE bench_batches AS SELECT n, bench_batch(n) AS b FROM (VALUES (1000), (10000)) v(n);
SELECT a2_append('claim-1k', b) FROM bench_batches WHERE n = 1000 \g /dev/null
SELECT a2_append('claim-10k', b) FROM bench_batches WHERE n = 10000 \g /dev/null
VACUUM ANALYZE a2_events;
CREATE TEMP TABLE t AS
SELECT op,
       bench_median_ms(format(q, 'claim-1k', 1000), 5) AS ms_1k,
       bench_median_ms(format(q, 'claim-10k', 10000), 5) AS ms_10k
  FROM (VALUES
		(1, 'claim', $q$SELECT a2_claim(%L, 'h', 60000) /* %s */$q$),
		(2, 'append', $q$SELECT a2_append(%L || '-new', (SELECT b FROM bench_batches WHERE n = %s))$q$),
		(3, 'read', $q$SELECT a2_read(%L) /* %s */$q$),
		(4, 'read_state', $q$SELECT a2_read_state(%L, 'none') /* %s */$q$)
	   ) v(ord, op, q)
 ORDER BY ord;
\echo
\echo Batch scaling (median of 5 runs, each rolled back; linear cost gives a ratio near 10):
SELECT op AS "operation", ms_1k AS "1,000 events (ms)", ms_10k AS "10,000 events (ms)",
       round(ms_10k / nullif(ms_1k, 0), 1) AS "ratio",
       CASE WHEN ms_10k / nullif(ms_1k, 0) <= 20 THEN '~linear'
            WHEN ms_10k / nullif(ms_1k, 0) <= 40 THEN 'superlinear'
            ELSE 'QUADRATIC?' END AS "verdict"
  FROM t;
SQL
