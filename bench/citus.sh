#!/usr/bin/env bash
#
# bench/citus.sh: a2 in distributed mode against the same workload on a
# single node, in one run; then the same cluster with one worker node
# against two.
#
# Needs Citus installed in the PostgreSQL that PG_CONFIG names (see
# docs/distributed.md).  Starts a 3-node cluster with
# test/citus/cluster.sh (fsync on, wal_level replica unless
# A2_CITUS_WAL_LEVEL says otherwise, base A2_CITUS_BENCH_BASE, coordinator port
# A2_CITUS_BENCH_PORT, workers on the next two ports), installs a2 twice on
# the coordinator's server:
#   database postgres  CREATE EXTENSION a2; SELECT a2_distribute();
#   database a2single  CREATE EXTENSION a2 (no citus: single-node mode),
# so the single-node figures come from the same server and settings, and
# runs pgbench -M extended (parameters bound per call, as drivers send
# them) at each client count of A2_BENCH_CLIENTS:
#   W1   a2_append of one event, each client its own fresh session
#        (bench/w1_append.sql)
#   W4   append, claim, complete cycle on the client's own fresh session
#        (bench/w4_cycle.sql)
#   W9   the fleet loop: a2_claim_next(holder, ttl) (max_sessions 1) and
#        a2_complete of what it got, returning one follow-up event, so the
#        backlog (A2_BENCH_W9_SESSIONS sessions with one pending event each,
#        set up once per database) stays the same size (bench/w9_cycle.sql)
# in these shapes:
#   single       a2single on the coordinator's server
#   delegated    W1, W4: plain calls to the coordinator, which Citus
#                delegates to the session's worker
#   on-worker    every client connected straight to the worker node that
#                holds its session (W1, W4), or for W9 the recommended fleet
#                layout: the clients split evenly over the worker nodes,
#                each calling a2_claim_next there (a node serves its own
#                shards).  pgbench connects to one host only, so this shape
#                runs one pgbench per worker node in parallel, same -T,
#                each with its share of the clients, and reports the sum of
#                their TPS.  With 1 client: one pgbench on one worker node.
#   coordinator  W1 as `SELECT a2_append(...) IS NOT NULL`, which Citus does
#                not delegate: a2 runs on the coordinator, each statement a
#                round trip to the worker (bench/citus_w1_coordinator.sql;
#                1 client only); W9 with the fleet connected to the
#                coordinator, where a2_claim_next walks the distributed
#                table through Citus (every client count)
# Sessions of W1/W4 clients are chosen (by name prefix) so that they spread
# evenly over the worker nodes, as a fleet's many sessions would: with 4
# clients and 2 workers, 2 sessions on each.
#
# Then (part "workers"), A2_BENCH_WORKERS_CLIENTS clients, W1 delegated and
# W9 on-worker with the shards on one worker node (citus_drain_node moves
# them all to the first) and on two (each shard moved back where
# a2_distribute() put it), alternating which comes first; one shard move
# per repeat.
#
# Part "cpu": the server CPU one transaction costs, summed over the three
# nodes (and split coordinator / workers), read from /proc before and after
# a pgbench -t run with 1 client: W1, W4, W9 in each shape.  Unlike TPS it
# hardly depends on what else the machine runs, and on a machine where all
# nodes share the CPUs it bounds the throughput: single/distributed CPU is
# the throughput ratio a CPU-bound run would show.
#
# Part "profile" (not run unless named; needs perf): where the CPU of the
# backend serving a 1-client W4 or W9 goes, single node and on-worker: the
# share of perf samples (cpu-clock, DWARF call graphs) under the planner,
# Citus's planner, Citus's local execution (deparse, parse and plan again,
# run), parsing and commit.
#
# Every W9 run (in every part) starts from a fresh backlog: a2_events is
# truncated and the sessions inserted again, so a run does not pay for the
# dead rows of the cycles the runs before it made.  In part "workers", the
# WAL flushes per transaction (pg_stat_wal.wal_sync over the three nodes)
# are shown too: with every node on one disk, group commit on one worker
# can matter more than a second worker's CPU.
#
# Repeats are interleaved: each repeat runs every shape of a workload back
# to back, in alternating order.  Prints Markdown tables of median TPS (and
# the range over the repeats) and the ratios, the per-statement latencies
# of W9 (pgbench -r), then the statements one delegated append, one
# coordinator-run append and one a2_claim_next per place send
# (citus.log_remote_commands / citus.log_local_commands).
#
# Settings: A2_BENCH_SECONDS (5), A2_BENCH_REPEAT (3), A2_BENCH_CLIENTS
# ("1 4"), A2_BENCH_WORKERS_CLIENTS (4), A2_BENCH_W9_SESSIONS (1000),
# A2_BENCH_CPU_CALLS (2000), A2_BENCH_CITUS_ONLY ("ratios cpu workers":
# which parts to run; "profile" is also known).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || a2_die "citus is not installed in $("$PG_CONFIG" --pkglibdir)"

seconds=${A2_BENCH_SECONDS:-5}
repeat=${A2_BENCH_REPEAT:-3}
client_counts=${A2_BENCH_CLIENTS:-1 4}
scale_clients=${A2_BENCH_WORKERS_CLIENTS:-4}
w9_sessions=${A2_BENCH_W9_SESSIONS:-1000}
cpu_calls=${A2_BENCH_CPU_CALLS:-2000}
only=${A2_BENCH_CITUS_ONLY:-ratios cpu workers}
export A2_CITUS_BASE=${A2_CITUS_BENCH_BASE:-/tmp/a2-citus-bench}
export A2_CITUS_PORT=${A2_CITUS_BENCH_PORT:-54345}
export A2_CITUS_FSYNC=on
# the benchmark moves shards in block_writes mode only: no logical decoding
# needed, and the WAL written is what a single node configured by default
# writes (test/citus/cluster.sh defaults to logical for the tests' moves)
export A2_CITUS_WAL_LEVEL=${A2_CITUS_WAL_LEVEL:-replica}
cluster=$root/test/citus/cluster.sh
out=$(mktemp -d /tmp/a2-citus-bench.XXXXXX)
chmod 0755 "$out"
: >"$out/runs.tsv"
want() { [[ " $only " == *" $1 "* ]]; }

trap 'bash "$cluster" destroy >/dev/null 2>&1 || true' EXIT
bash "$cluster" destroy >/dev/null 2>&1
bash "$cluster" start
eval "$(bash "$cluster" env)"
workers=("$A2_CITUS_W1" "$A2_CITUS_W2")
q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
q -c 'CREATE EXTENSION a2' -c 'SELECT a2_distribute()' >/dev/null
q -c 'CREATE DATABASE a2single' >/dev/null 2>&1
q -d a2single -c 'CREATE EXTENSION a2'

# The W9 backlog: sessions w9-1..N with one pending event each, inserted
# directly (what a2_append of {"type": "job"} stores), oldest first; in
# distributed mode also the sessions' lock rows, which a first call would
# otherwise create inside the timed runs.  Made afresh (a2_events
# truncated) before every W9 run, so that each starts from the same state
# whatever ran before: a shape that made more cycles leaves more dead rows
# and history behind, and the next run would pay for them.
w9_setup() {
	q -d "$1" -v n="$w9_sessions" <<'EOF'
SET client_min_messages = warning;
SELECT EXISTS (SELECT FROM pg_extension WHERE extname = 'citus') AS citus \gset
TRUNCATE a2_events;
\if :citus
TRUNCATE a2_session_locks;
\endif
INSERT INTO a2_events (session_id, idx, event_type, payload, event_id, created_at, lane_ready)
SELECT 'w9-' || g, 1, 'job', '{"n": 1}', 'w9-' || g || '/1', 1767225600000 + g, true
  FROM generate_series(1, :n) g;
\if :citus
INSERT INTO a2_session_locks (session_id) SELECT 'w9-' || g FROM generate_series(1, :n) g;
\endif
VACUUM ANALYZE a2_events;
EOF
}
w9_setup postgres
w9_setup a2single
q -c CHECKPOINT
q -d a2single -c CHECKPOINT
# where a2_distribute() put each shard group (the two-worker layout)
q -c "SELECT p.shardid, n.nodeport FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
	JOIN pg_dist_node n USING (groupid) WHERE s.logicalrelid = 'a2_events'::regclass" >"$out/layout.txt"

# the worker nodes that hold shards now
shard_nodes() {
	q -c "SELECT DISTINCT n.nodeport FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
		JOIN pg_dist_node n USING (groupid) WHERE s.logicalrelid = 'a2_events'::regclass ORDER BY 1"
}

# prefix_balanced BASE C: the first BASE<k>- whose sessions <prefix>0..C-1
# spread evenly over the nodes holding shards (at most ceil(C/nodes) on one)
prefix_balanced() {
	q -v base="$1" -v c="$2" <<'EOF'
SELECT count(DISTINCT p.groupid) AS nodes FROM pg_dist_shard s JOIN pg_dist_placement p USING (shardid)
 WHERE s.logicalrelid = 'a2_events'::regclass \gset
SELECT x.p FROM generate_series(0, 9999) k, LATERAL (SELECT :'base' || k || '-' AS p) x
 WHERE (SELECT max(m) FROM (SELECT count(*) AS m FROM generate_series(0, :c - 1) i
		JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('a2_events', x.p || i)
		GROUP BY pl.groupid) s) <= (:c + :nodes - 1) / :nodes
 ORDER BY k LIMIT 1;
EOF
}

# prefix_on BASE C PORT: the first BASE<k>- whose sessions <prefix>0..C-1
# all live on the worker node at PORT
prefix_on() {
	q -v base="$1" -v c="$2" -v port="$3" <<'EOF'
SELECT x.p FROM generate_series(0, 9999) k, LATERAL (SELECT :'base' || k || '-' AS p) x
 WHERE (SELECT bool_and(n.nodeport = :port) FROM generate_series(0, :c - 1) i
		JOIN pg_dist_placement pl ON pl.shardid = get_shard_id_for_distribution_column('a2_events', x.p || i)
		JOIN pg_dist_node n USING (groupid))
 ORDER BY k LIMIT 1;
EOF
}

# pgbench_one FILE CLIENTS DB SCRIPT PORT [PREFIX]: one pgbench run into FILE
# (in the background when called with &); checks that nothing failed
pgbench_one() {
	local file=$1 c=$2 db=$3 script=$4 port=$5 prefix=${6:-}
	local defs=()
	[[ -n $prefix ]] && defs=(-D prefix="$prefix")
	pgbench -n -r -M extended -T "$seconds" -c "$c" -j "$c" -d "$db" -p "$port" \
		"${defs[@]}" -f "$script" >"$file" 2>&1 &&
		grep -q '^number of failed transactions: 0 ' "$file"
}

tps_of() { sed -n 's/^tps = \([0-9.]*\) (without initial connection time)$/\1/p' "$1"; }
# mean latency (ms) of statement $2 (1-based) of pgbench -r output $1
lat_of() {
	awk -v k="$2" '/statement latencies in milliseconds/ { on = 1; next } on && ++i == k { print $1; exit }' "$1"
}

# WAL flushes so far, summed over the three nodes (pg_stat_wal.wal_sync)
wal_syncs() {
	local port t=0
	for port in "$PGPORT" "${workers[@]}"; do t=$((t + $(q -p "$port" -c 'SELECT wal_sync FROM pg_stat_wal'))); done
	echo "$t"
}
# transactions pgbench made, summed over its outputs
xacts_of() { sed -n 's/^number of transactions actually processed: \([0-9]*\).*/\1/p' "$@" | awk '{ s += $1 } END { print s + 0 }'; }
# record KEY VALUE
record() { printf '%s\t%s\n' "$1" "$2" >>"$out/runs.tsv"; }

# run KEY CLIENTS DB SCRIPT [PORT [PREFIX]]: one pgbench run, records its TPS
# (and for W9 the two statements' latencies)
run() {
	local key=$1 c=$2 db=$3 script=$4 port=${5:-$PGPORT} prefix=${6:-}
	local f=$out/$key-r$r.out syncs
	[[ $script == */w9_cycle.sql ]] && w9_setup "$db"
	a2_log "  $key"
	syncs=$(wal_syncs)
	pgbench_one "$f" "$c" "$db" "$script" "$port" "$prefix" ||
		{ cat "$f" >&2; a2_die "pgbench $key failed"; }
	syncs=$(($(wal_syncs) - syncs))
	record "$key" "$(tps_of "$f")"
	record "$key:syncs_per_tx" "$(awk -v s="$syncs" -v n="$(xacts_of "$f")" 'BEGIN { if (n > 0) printf "%.2f", s / n }')"
	if [[ $script == */w9_cycle.sql ]]; then
		record "$key:claim_ms" "$(lat_of "$f" 1)"
		record "$key:complete_ms" "$(lat_of "$f" 2)"
	fi
}

# run_split KEY CLIENTS SCRIPT PORTS PREFIXES: CLIENTS split evenly over the
# worker nodes at PORTS (space-separated), one pgbench per node, started
# together with the same -T; records the sum of their TPS.  PREFIXES: one
# session-name prefix per port ("" for none, i.e. W9).
run_split() {
	local key=$1 c=$2 script=$3 ports=() prefixes=() i n share pids=() sum=0 t f syncs
	read -r -a ports <<<"$4"
	read -r -a prefixes <<<"$5" || true
	n=${#ports[@]}
	((c < n)) && n=$c
	[[ $script == */w9_cycle.sql ]] && w9_setup postgres
	a2_log "  $key (${n} pgbench processes)"
	syncs=$(wal_syncs)
	for ((i = 0; i < n; i++)); do
		share=$((c / n + (i < c % n ? 1 : 0)))
		pgbench_one "$out/$key-r$r-n$i.out" "$share" postgres "$script" "${ports[$i]}" "${prefixes[$i]:-}" &
		pids+=($!)
	done
	for ((i = 0; i < n; i++)); do
		f=$out/$key-r$r-n$i.out
		wait "${pids[$i]}" || { cat "$f" >&2; a2_die "pgbench $key (node ${ports[$i]}) failed"; }
		t=$(tps_of "$f")
		sum=$(awk -v a="$sum" -v b="$t" 'BEGIN { printf "%.3f", a + b }')
		record "$key:node$i" "$t"
	done
	syncs=$(($(wal_syncs) - syncs))
	record "$key" "$sum"
	record "$key:syncs_per_tx" "$(awk -v s="$syncs" -v n="$(xacts_of "$out/$key-r$r"-n*.out)" 'BEGIN { if (n > 0) printf "%.2f", s / n }')"
	if [[ $script == */w9_cycle.sql ]]; then
		# the nodes' latencies, averaged
		record "$key:claim_ms" "$(for ((i = 0; i < n; i++)); do lat_of "$out/$key-r$r-n$i.out" 1; done |
			awk '{ s += $1 } END { printf "%.3f", s / NR }')"
		record "$key:complete_ms" "$(for ((i = 0; i < n; i++)); do lat_of "$out/$key-r$r-n$i.out" 2; done |
			awk '{ s += $1 } END { printf "%.3f", s / NR }')"
	fi
}

# in_order A B C...: run the commands in this order on odd repeats, reversed
# on even ones, so drift does not favour one shape
in_order() {
	local cmds=("$@") i
	if ((r % 2)); then
		for ((i = 0; i < ${#cmds[@]}; i++)); do eval "${cmds[$i]}"; done
	else
		for ((i = ${#cmds[@]} - 1; i >= 0; i--)); do eval "${cmds[$i]}"; done
	fi
}

# on-worker W1/W4 run: each worker node holding shards gets its share of
# the clients, on sessions that live there
on_worker() {
	local key=$1 c=$2 script=$3 base=$4 nodes ports=() prefixes=() i n share
	read -r -a nodes <<<"$(shard_nodes | tr '\n' ' ')"
	n=${#nodes[@]}
	((c < n)) && n=$c
	for ((i = 0; i < n; i++)); do
		share=$((c / n + (i < c % n ? 1 : 0)))
		ports+=("${nodes[$i]}")
		prefixes+=("$(prefix_on "$base-n$i-" "$share" "${nodes[$i]}")")
	done
	run_split "$key" "$c" "$script" "${ports[*]}" "${prefixes[*]}"
}

w9_fleet() {
	local key=$1 c=$2
	run_split "$key" "$c" "$here/w9_cycle.sql" "$(shard_nodes | tr '\n' ' ')" ""
}

# the shard layout: 1 (all on the first worker) or 2 (a2_distribute()'s)
layout=2
set_layout() {
	local want=$1 shard port
	[[ $layout == "$want" ]] && return
	if [[ $want == 1 ]]; then
		a2_log "moving every shard to the first worker (citus_drain_node)"
		q -c "SELECT citus_drain_node('127.0.0.1', ${workers[1]}, shard_transfer_mode => 'block_writes')" 2>/dev/null >/dev/null
	else
		a2_log "moving the shards back to where a2_distribute() put them"
		q -c "SELECT citus_set_node_property('127.0.0.1', ${workers[1]}, 'shouldhaveshards', true)" >/dev/null
		while read -r shard port; do
			[[ $port == "${workers[1]}" ]] || continue
			q -c "SELECT citus_move_shard_placement($shard, '127.0.0.1', ${workers[0]}, '127.0.0.1', $port, shard_transfer_mode => 'block_writes')" >/dev/null
		done < <(tr '|' ' ' <"$out/layout.txt")
	fi
	# drop the moved shards' old copies now (else Citus's background
	# cleanup does it during a timed run), and checkpoint every node
	q -c 'CALL citus_cleanup_orphaned_resources()'
	for port in "$PGPORT" "${workers[@]}"; do q -p "$port" -c CHECKPOINT; done
	layout=$want
	[[ $(shard_nodes | wc -l) == "$want" ]] || a2_die "expected shards on $want worker node(s)"
}

# Server CPU: node_ticks prints, per node (coord w1 w2), the CPU clock ticks
# its processes have used: the postmaster's own and its reaped children's
# (utime stime cutime cstime), plus its live children's (utime stime).  A
# backend that exits during a run is counted through the postmaster's
# cutime/cstime, so the difference over a run is the whole CPU the node
# spent, whatever else the machine was doing meanwhile.
node_ticks() {
	local n pms=()
	for n in coord w1 w2; do pms+=("$(head -n 1 "$A2_CITUS_BASE/$n/postmaster.pid")"); done
	# one line per process (cat goes on past processes that have gone, and
	# then fails)
	{ cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v pms="${pms[*]}" '
		BEGIN { k = split(pms, pm, " "); for (i = 1; i <= k; i++) { node[pm[i]] = i; t[i] = 0 } }
		{
			p = $1
			sub(/^.*\) /, "")
			# $1 state, $2 ppid, $12 utime, $13 stime, $14 cutime, $15 cstime
			if (p in node) t[node[p]] += $12 + $13 + $14 + $15
			else if ($2 in node) t[node[$2]] += $12 + $13
		}
		END { for (i = 1; i <= k; i++) printf "%s%d", (i > 1 ? " " : ""), t[i]; print "" }'
}

# run_cpu KEY DB SCRIPT PORT PREFIX CALLS: pgbench -t CALLS with 1 client;
# records the server CPU per transaction in ms, per node and in all
run_cpu() {
	local key=$1 db=$2 script=$3 port=$4 prefix=$5 calls=$6 before after c0 c1 c2
	local f=$out/$key-r$r.out defs=()
	[[ -n $prefix ]] && defs=(-D prefix="$prefix")
	[[ $script == */w9_cycle.sql ]] && w9_setup "$db"
	a2_log "  $key ($calls transactions)"
	before=$(node_ticks)
	if ! pgbench -n -M extended -t "$calls" -c 1 -d "$db" -p "$port" "${defs[@]}" -f "$script" >"$f" 2>&1 ||
		! grep -q '^number of failed transactions: 0 ' "$f"; then
		cat "$f" >&2
		a2_die "pgbench $key failed"
	fi
	after=$(node_ticks)
	read -r c0 c1 c2 <<<"$(paste <(tr ' ' '\n' <<<"$before") <(tr ' ' '\n' <<<"$after") |
		awk -v hz="$(getconf CLK_TCK)" -v n="$calls" '{ printf "%.3f ", ($2 - $1) * 1000 / hz / n }')"
	record "$key:coord" "$c0"
	record "$key:workers" "$(awk -v a="$c1" -v b="$c2" 'BEGIN { printf "%.3f", a + b }')"
	record "$key" "$(awk -v a="$c0" -v b="$c1" -v c="$c2" 'BEGIN { printf "%.3f", a + b + c }')"
}

# profile KEY DB SCRIPT PORT PREFIX: perf record (cpu-clock, DWARF call
# graphs) of the one backend a 1-client pgbench run uses on PORT; records
# the share of its samples under the functions below (perf's "children")
profile_syms="distributed_planner standard_planner ExecuteLocalTaskListExtended DeparseTaskQuery pg_parse_query CommitTransactionCommand"
profile() {
	local key=$1 db=$2 script=$3 port=$4 prefix=$5 pid pg sym share
	local f=$out/$key-r$r defs=()
	[[ -n $prefix ]] && defs=(-D prefix="$prefix")
	[[ $script == */w9_cycle.sql ]] && w9_setup "$db"
	a2_log "  $key (perf)"
	pgbench -n -M extended -T $((seconds + 4)) -c 1 -d "$db" -p "$port" "${defs[@]}" -f "$script" >"$f.out" 2>&1 &
	pg=$!
	sleep 2
	pid=$(q -p "$port" -c "SELECT pid FROM pg_stat_activity WHERE application_name = 'pgbench' AND datname = '$db'")
	[[ $pid =~ ^[0-9]+$ ]] || a2_die "no pgbench backend on :$port"
	perf record -q -e cpu-clock -F 499 --call-graph=dwarf,16384 -p "$pid" -o "$f.perf" -- sleep "$seconds" >/dev/null 2>&1 ||
		a2_die "perf record failed"
	wait "$pg" || { cat "$f.out" >&2; a2_die "pgbench $key failed"; }
	perf report -i "$f.perf" --children --no-demangle --stdio -g none --percent-limit 0.1 2>/dev/null >"$f.report"
	rm -f "$f.perf"
	for sym in $profile_syms; do
		share=$(awk -v s="$sym" 'NF > 1 && ($NF == s || ($(NF - 1) == s && $NF == "(inlined)")) { sub(/%/, "", $1); print $1; exit }' "$f.report")
		record "$key:$sym" "${share:-0}"
	done
}

if want cpu; then
	# one of a2's statements on its own, on the node holding session w9-1:
	# through the distributed table (Citus plans it and executes it locally,
	# as inside a2 on a worker) and on the shard table itself (plain
	# PostgreSQL, as a2 in single-node mode)
	sport=$(q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
		WHERE p.shardid = get_shard_id_for_distribution_column('a2_events', 'w9-1')")
	shard=$(q -c "SELECT shard_name('a2_events', get_shard_id_for_distribution_column('a2_events', 'w9-1'))")
	for t in a2_events "$shard"; do
		printf 'SELECT idx FROM %s e WHERE session_id = :prefix::text ORDER BY idx DESC LIMIT 1;\n' "$t" >"$out/stmt-$t.sql"
	done
	for r in $(seq "$repeat"); do
		a2_log "citus bench, server CPU per call: repeat $r of $repeat"
		w=${workers[0]}
		in_order "run_cpu C-W1-single a2single $here/w1_append.sql $PGPORT c1s-r$r- $cpu_calls" \
			"run_cpu C-W1-delegated postgres $here/w1_append.sql $PGPORT c1d-r$r- $cpu_calls" \
			"run_cpu C-W1-on-worker postgres $here/w1_append.sql $w $(prefix_on "c1w-r$r-" 1 "$w") $cpu_calls" \
			"run_cpu C-W1-coordinator postgres $here/citus_w1_coordinator.sql $PGPORT c1c-r$r- $cpu_calls"
		in_order "run_cpu C-W4-single a2single $here/w4_cycle.sql $PGPORT c4s-r$r- $((cpu_calls / 4))" \
			"run_cpu C-W4-delegated postgres $here/w4_cycle.sql $PGPORT c4d-r$r- $((cpu_calls / 4))" \
			"run_cpu C-W4-on-worker postgres $here/w4_cycle.sql $w $(prefix_on "c4w-r$r-" 1 "$w") $((cpu_calls / 4))"
		in_order "run_cpu C-W9-single a2single $here/w9_cycle.sql $PGPORT '' $((cpu_calls / 4))" \
			"run_cpu C-W9-on-worker postgres $here/w9_cycle.sql $w '' $((cpu_calls / 4))" \
			"run_cpu C-W9-coordinator postgres $here/w9_cycle.sql $PGPORT '' $((cpu_calls / 20))"
		in_order "run_cpu C-stmt-citus postgres $out/stmt-a2_events.sql $sport w9-1 $((cpu_calls * 2))" \
			"run_cpu C-stmt-shard postgres $out/stmt-$shard.sql $sport w9-1 $((cpu_calls * 2))"
	done
fi

if want ratios; then
	for r in $(seq "$repeat"); do
		a2_log "citus bench: repeat $r of $repeat (${seconds}s per run)"
		for c in $client_counts; do
			p=$(prefix_balanced "w1d-r$r-c$c-" "$c")
			shapes=("run W1-single-c$c $c a2single $here/w1_append.sql $PGPORT w1s-r$r-c$c-"
				"run W1-delegated-c$c $c postgres $here/w1_append.sql $PGPORT $p"
				"on_worker W1-on-worker-c$c $c $here/w1_append.sql w1w-r$r-c$c")
			((c == 1)) && shapes+=("run W1-coordinator-c$c $c postgres $here/citus_w1_coordinator.sql $PGPORT w1c-r$r-c$c-")
			in_order "${shapes[@]}"
			p=$(prefix_balanced "w4d-r$r-c$c-" "$c")
			in_order "run W4-single-c$c $c a2single $here/w4_cycle.sql $PGPORT w4s-r$r-c$c-" \
				"run W4-delegated-c$c $c postgres $here/w4_cycle.sql $PGPORT $p" \
				"on_worker W4-on-worker-c$c $c $here/w4_cycle.sql w4w-r$r-c$c"
			in_order "run W9-single-c$c $c a2single $here/w9_cycle.sql" \
				"w9_fleet W9-on-worker-c$c $c" \
				"run W9-coordinator-c$c $c postgres $here/w9_cycle.sql"
		done
	done
fi

if want profile; then
	command -v perf >/dev/null || a2_die "part profile needs perf"
	for r in $(seq "$repeat"); do
		a2_log "citus bench, profiles: repeat $r of $repeat"
		w=${workers[0]}
		in_order "profile P-W4-single a2single $here/w4_cycle.sql $PGPORT p4s-r$r-" \
			"profile P-W4-on-worker postgres $here/w4_cycle.sql $w $(prefix_on "p4w-r$r-" 1 "$w")"
		in_order "profile P-W9-single a2single $here/w9_cycle.sql $PGPORT ''" \
			"profile P-W9-on-worker postgres $here/w9_cycle.sql $w ''"
	done
fi

if want workers; then
	c=$scale_clients
	for r in $(seq "$repeat"); do
		a2_log "citus bench, 1 vs 2 workers: repeat $r of $repeat (${seconds}s per run)"
		if ((r % 2)); then order="2 1"; else order="1 2"; fi
		for w in $order; do
			set_layout "$w"
			run "S-W1-delegated-w$w" "$c" postgres "$here/w1_append.sql" "$PGPORT" \
				"$(prefix_balanced "s1-r$r-w$w-" "$c")"
			w9_fleet "S-W9-on-worker-w$w" "$c"
		done
	done
	set_layout 2
fi

values() { awk -F'\t' -v k="$1" '$1 == k { print $2 }' "$out/runs.tsv" | sort -n; }
median() {
	values "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
# "median (min-max)", TPS rounded
cell() {
	values "$1" | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit }
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		if (NR == 1) printf "%.0f", m; else printf "%.0f (%.0f-%.0f)", m, v[1], v[NR] }'
}
# "median (min-max) [coordinator + workers]", ms
cpu_cell() {
	[[ $(median "$1") == - ]] && { echo -; return; }
	values "$1" | awk -v co="$(median "$1:coord")" -v wo="$(median "$1:workers")" '{ v[NR] = $1 } END {
		m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
		printf "%.2f (%.2f-%.2f) [%.2f + %.2f]", m, v[1], v[NR], co, wo }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }'; }
# ratio of the medians, and the range of the per-repeat ratios (pairs run
# back to back in the same repeat)
ratio_cell() {
	local a=$1 b=$2
	[[ $(median "$a") == - || $(median "$b") == - ]] && { echo -; return; }
	printf '%s (%s)' "$(ratio "$(median "$a")" "$(median "$b")")" \
		"$(paste <(awk -F'\t' -v k="$a" '$1 == k { print $2 }' "$out/runs.tsv") \
			<(awk -F'\t' -v k="$b" '$1 == k { print $2 }' "$out/runs.tsv") |
			awk '$2 > 0 { print $1 / $2 }' | sort -n |
			awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')"
}

if want ratios; then
	echo
	echo "Median TPS (range over $repeat repeats), ${seconds}s per run, pgbench -M extended, fsync on;"
	echo "ratio = distributed / single node, of the medians (range of the per-repeat ratios):"
	echo
	echo "| workload | clients | single node | delegated | ratio | on-worker | ratio | coordinator-run | ratio |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|--:|"
	for c in $client_counts; do
		for w in "W1 append (1 event)" "W4 cycle (3 calls)" "W9 fleet loop (2 calls)"; do
			k=${w%% *}
			echo "| $w | $c | $(cell "$k-single-c$c") | $(cell "$k-delegated-c$c") | $(ratio_cell "$k-delegated-c$c" "$k-single-c$c") | $(cell "$k-on-worker-c$c") | $(ratio_cell "$k-on-worker-c$c" "$k-single-c$c") | $(cell "$k-coordinator-c$c") | $(ratio_cell "$k-coordinator-c$c" "$k-single-c$c") |"
		done
	done
	echo
	echo "W9 per statement, mean latency in ms (pgbench -r; median over the repeats):"
	echo
	echo "| clients | shape | a2_claim_next | a2_complete |"
	echo "|--:|---|--:|--:|"
	for c in $client_counts; do
		for s in single on-worker coordinator; do
			echo "| $c | $s | $(median "W9-$s-c$c:claim_ms") | $(median "W9-$s-c$c:complete_ms") |"
		done
	done
fi

if want cpu; then
	echo
	echo "Server CPU per transaction, ms, all three nodes (coordinator + workers), 1 client,"
	echo "pgbench -t ($cpu_calls W1, $((cpu_calls / 4)) W4/W9, $((cpu_calls / 20)) W9 coordinator-run transactions),"
	echo "median (range) over $repeat repeats; ratio = single / distributed, the throughput the CPU allows:"
	echo
	echo "| workload | single node | delegated | ratio | on-worker | ratio | coordinator-run | ratio |"
	echo "|---|--:|--:|--:|--:|--:|--:|--:|"
	for k in W1 W4 W9; do
		row="| $k | $(cpu_cell "C-$k-single")"
		for s in delegated on-worker coordinator; do
			row+=" | $(cpu_cell "C-$k-$s") | $(ratio_cell "C-$k-single" "C-$k-$s")"
		done
		echo "$row |"
	done
	echo
	echo "One statement, SELECT idx ... ORDER BY idx DESC LIMIT 1 (a2_append's), on its worker, $((cpu_calls * 2)) transactions:"
	echo "through the distributed table $(cpu_cell C-stmt-citus) ms, on the shard table $(cpu_cell C-stmt-shard) ms."
fi

if want profile; then
	echo
	echo "Where one backend's CPU goes, 1 client, share of perf samples under each function (median of $repeat):"
	echo
	echo "| run | planning (distributed_planner, Citus's planner hook) | of it standard_planner | Citus local execution | of it deparse | parsing (pg_parse_query) | commit |"
	echo "|---|--:|--:|--:|--:|--:|--:|"
	for k in P-W4-single P-W4-on-worker P-W9-single P-W9-on-worker; do
		row="| ${k#P-}"
		for sym in $profile_syms; do row+=" | $(median "$k:$sym")%"; done
		echo "$row |"
	done
fi

if want workers; then
	echo
	echo "1 vs 2 worker nodes, $scale_clients clients, median TPS (range over $repeat repeats):"
	echo
	echo "| workload | 1 worker | 2 workers | 2/1 | WAL flushes per transaction, 1 / 2 workers |"
	echo "|---|--:|--:|--:|--:|"
	echo "| W1 append, delegated | $(cell S-W1-delegated-w1) | $(cell S-W1-delegated-w2) | $(ratio_cell S-W1-delegated-w2 S-W1-delegated-w1) | $(median S-W1-delegated-w1:syncs_per_tx) / $(median S-W1-delegated-w2:syncs_per_tx) |"
	echo "| W9 fleet loop, on-worker | $(cell S-W9-on-worker-w1) | $(cell S-W9-on-worker-w2) | $(ratio_cell S-W9-on-worker-w2 S-W9-on-worker-w1) | $(median S-W9-on-worker-w1:syncs_per_tx) / $(median S-W9-on-worker-w2:syncs_per_tx) |"
fi

# Where the time goes: what one append sends, per shape (after a first
# append has created the session's lock row).
s=bench-trace-1
q -c "SELECT a2_append('$s', '[{\"type\": \"x\"}]') IS NULL" >/dev/null
echo
echo "One delegated append, as the coordinator sends it (citus.log_remote_commands):"
psql -X -At -c 'SET citus.log_remote_commands = on' \
	-c "SELECT a2_append('$s', '[{\"type\": \"x\"}]')" 2>&1 |
	grep -o 'issuing .*' | cut -c1-110 | sed 's/^/    /'
port=$(q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
	WHERE p.shardid = get_shard_id_for_distribution_column('a2_events', '$s')")
echo "and what it runs on the worker (citus.log_local_commands, the same call made there):"
psql -X -At -p "$port" -c 'SET citus.log_local_commands = on' \
	-c "SELECT a2_append('$s', '[{\"type\": \"x\"}]') IS NULL" 2>&1 |
	grep -o 'executing the command locally: .*' | cut -c1-110 | sed 's/^/    /'
echo "One coordinator-run append (each line a round trip to the worker):"
psql -X -At -c 'SET citus.log_remote_commands = on' \
	-c "SELECT a2_append('$s', '[{\"type\": \"x\"}]') IS NOT NULL" 2>&1 |
	grep -o 'issuing .*' | cut -c1-110 | sed 's/^/    /'
# a2_claim_next: on a worker (its own shards) and on the coordinator
# (through Citus); the claim is given back by letting its lease lapse
echo "One a2_claim_next on worker :${workers[0]}: commands sent to other nodes / run locally through Citus:"
trace=$(psql -X -At -p "${workers[0]}" -c 'SET citus.log_remote_commands = on' -c 'SET citus.log_local_commands = on' \
	-c "SELECT a2_claim_next('trace', 1) IS NULL" 2>&1)
printf '    %s / %s\n' "$(grep -c 'issuing ' <<<"$trace" || true)" "$(grep -c 'executing the command locally' <<<"$trace" || true)"
echo "One a2_claim_next on the coordinator: commands sent to the workers (first 4 shown):"
trace=$(psql -X -At -c 'SET citus.log_remote_commands = on' \
	-c "SELECT a2_claim_next('trace', 1) IS NULL" 2>&1)
printf '    %s commands\n' "$(grep -c 'issuing ' <<<"$trace" || true)"
grep -o 'issuing .*' <<<"$trace" | sed -n 1,4p | cut -c1-110 | sed 's/^/    /'
echo
echo "pgbench outputs: $out"
