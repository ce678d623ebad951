#!/usr/bin/env bash
#
# bench/queues_buffers.sh -- what queues, priorities and limits cost per
# a2_claim_next call, in shared buffers (EXPLAIN (ANALYZE, BUFFERS) counts
# the statements the function runs through SPI), which unlike TPS is
# deterministic on a shared machine.  Issue 27's benchmarks:
#
#   plain     W9's shape: A2_QB_SESSIONS sessions, one pending event each,
#             default queue, no priority, no key; calls without queues.
#   dispatch  the same sessions spread over 10 queues and 3 priorities,
#             every event with one of 100 concurrency keys at limit 2;
#             calls without queues, then calls limited to one queue.
#   backlog   a pool serving queue "pool" (A2_QB_SESSIONS sessions) while
#             queue "backlog" holds A2_QB_BACKLOG waiting events, against
#             the same pool without the backlog, and against the same pool
#             beside as many finished events (the same table size).
#
# Each figure is the mean over A2_QB_CALLS calls of one transaction that
# is rolled back, after one warm-up call (plans prepared) not counted, so every scenario starts from the same rows.  Rows are
# loaded with INSERT (a2_events' own shape), not through a2_append, to keep
# loading a million rows short.
#
#   A2_QB_SESSIONS [10000]  A2_QB_BACKLOG [1000000]  A2_QB_CALLS [50]
#   PGHOST/PGPORT/PGUSER: the cluster (a2 installed in its lib directory)
set -euo pipefail

sessions=${A2_QB_SESSIONS:-10000}
backlog=${A2_QB_BACKLOG:-1000000}
calls=${A2_QB_CALLS:-50}
db=a2_queues_bench

psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" -c "CREATE DATABASE $db"
psql -X -q -d "$db" -c "CREATE EXTENSION a2"

# load NAME QUEUE_EXPR PRIORITY_EXPR KEY_EXPR COUNT [FINISHED]: sessions
# NAME-1..COUNT, one event each; FINISHED=1: each event already processed
load() {
	local processed=NULL
	[[ ${6:-0} != 1 ]] || processed='(extract(epoch FROM now()) * 1000)::bigint - 1000'
	psql -X -q -d "$db" -c "
		INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at,
							   lane_ready, queue, priority, concurrency_key, processed_at)
		SELECT '$1-' || i, 1, 't', 'null', '$1-' || i,
			   (extract(epoch FROM now()) * 1000)::bigint - 3600000 + i % 1000, true,
			   $2, $3, $4, $processed
		  FROM generate_series(1, $5) i"
}

# per_call SQL: mean shared buffers (hit + read) of $calls EXPLAINed calls
per_call() {
	local sql=$1 total=0 n
	local out
	out=$(psql -X -At -d "$db" <<-SQL
		BEGIN;
		$(for ((k = 0; k <= calls; k++)); do
			echo "EXPLAIN (ANALYZE, BUFFERS, COSTS OFF, TIMING OFF, SUMMARY OFF) $sql;"
		done)
		ROLLBACK;
	SQL
	)
	n=-1	# the first call (plans prepared, catalogs read) is a warm-up
	while read -r hit read_; do
		if ((n >= 0)); then total=$((total + hit + read_)); fi
		n=$((n + 1))
	done < <(sed -n 's/.*Buffers: shared hit=\([0-9]*\)\( read=\([0-9]*\)\)\{0,1\}.*/\1 \3/p' <<<"$out" |
		awk '{print $1, ($2 == "" ? 0 : $2)}')
	awk -v t="$total" -v n="$n" 'BEGIN { printf "%.1f", (n ? t / n : 0) }'
}

report() { printf '%-58s %8s buffers/call\n' "$1" "$2"; }

psql -X -q -d "$db" -c "TRUNCATE a2_events"
load plain "NULL" "NULL" "NULL" "$sessions"
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
report "plain W9: claim_next(max 1), no queues" "$(per_call "SELECT a2_claim_next('b', 30000)")"
report "plain W9: claim_next(max 10), no queues" "$(per_call "SELECT a2_claim_next('b', 30000, 10)")"

psql -X -q -d "$db" -c "TRUNCATE a2_events"
load disp "'q' || (i % 10)" "(i % 3) - 1" "'k' || (i % 100)" "$sessions"
psql -X -q -d "$db" -c "SELECT a2_set_concurrency_limit('k' || k, 2) FROM generate_series(0, 99) k" >/dev/null
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
report "10 queues, 3 priorities, 100 keys at limit 2: no queues" "$(per_call "SELECT a2_claim_next('b', 30000)")"
report "  same, claim_next(max 10), no queues" "$(per_call "SELECT a2_claim_next('b', 30000, 10)")"
report "  same, claim_next limited to one queue" "$(per_call "SELECT a2_claim_next('b', 30000, 1, NULL, '{q3}')")"
psql -X -q -d "$db" -c "DELETE FROM a2_limits"

psql -X -q -d "$db" -c "TRUNCATE a2_events"
load pool "'pool'" "NULL" "NULL" "$sessions"
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
empty=$(per_call "SELECT a2_claim_next('b', 30000, 1, NULL, '{pool}')")
report "pool queue, no other backlog" "$empty"
# The pool's rows again as loaded: the rolled-back claims above leave dead
# index entries that VACUUM may keep (it skips index vacuuming when few
# pages have dead items), and the pool's claims would step over them.
psql -X -q -d "$db" -c "TRUNCATE a2_events"
load pool "'pool'" "NULL" "NULL" "$sessions"
load back "'backlog'" "NULL" "NULL" "$backlog"
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
full=$(per_call "SELECT a2_claim_next('b', 30000, 1, NULL, '{pool}')")
report "pool queue, $backlog waiting in queue backlog" "$full"
report "  ratio" "$(awk -v a="$full" -v b="$empty" 'BEGIN { printf "%.2f", a / b }')"
# The same table size without the backlog: as many events of queue backlog,
# all finished.  full / sized is what the waiting backlog itself costs the
# pool; sized / empty what a table that size costs (taller indexes).
psql -X -q -d "$db" -c "TRUNCATE a2_events"
load pool "'pool'" "NULL" "NULL" "$sessions"
load back "'backlog'" "NULL" "NULL" "$backlog" 1
psql -X -q -d "$db" -c "VACUUM ANALYZE a2_events"
sized=$(per_call "SELECT a2_claim_next('b', 30000, 1, NULL, '{pool}')")
report "pool queue, $backlog finished events in queue backlog" "$sized"
report "  backlog waiting vs finished (full / sized)" "$(awk -v a="$full" -v b="$sized" 'BEGIN { printf "%.2f", a / b }')"

psql -X -q -d postgres -c "DROP DATABASE $db WITH (FORCE)"
