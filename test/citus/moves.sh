# shellcheck shell=bash
#
# test/citus/moves.sh: shard moves, then a new node and a rebalance, under
# load.  Sourced by run.sh (after the other checks: it adds a third worker)
# with load.sh; uses run.sh's q, pass, fail, $work, $here, $cluster,
# $coord, $w1, $w2.  The statements are docs/distributed.md's runbooks
# "Moving shards and rebalancing" and "Adding a node".
#
# While 4 clients run load.py (appends with supplied ids, claim/complete
# cycles, two-session transactions; sessions mv-1..mv-12 on both workers):
#   1. 9 moves with citus_move_shard_placement, 3 in each transfer mode
#      (auto, force_logical, block_writes), of the shards of three load
#      sessions, each to the other worker; before each move
#      citus_cleanup_orphaned_resources() drops what the last one left;
#      between moves the load must acknowledge 30 more calls;
#   2. a third worker (cluster.sh start-spare) joins with citus_add_node,
#      gets a2_distribute()'s index change (a2_distribute() again), and
#      citus_rebalance_start() + citus_rebalance_wait() move shards onto
#      it; then the load must acknowledge 30 more calls.
# Then: every move took effect, the new node holds a2 shards and has the
# same a2 schema as the coordinator, citus_cleanup_orphaned_resources()
# leaves nothing, and load.py verify: sessions dense, every acknowledged
# call stored as returned, every SQLSTATE in the retryable set.

moves_fail() {
	fail "moves: $*"
	load_kill
}

placement() { q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid) WHERE p.shardid = $1"; }

moves_run() {
	local sessions pairs shards shard from to mode k t0 ms timings="" ok=1 out
	sessions=$(q -c "SELECT string_agg('mv-' || g, ',' ORDER BY g) FROM generate_series(1, 12) g")
	# two-session transactions: the first two load sessions on w1 with the
	# first two on w2 (at the start; moves change that)
	pairs=$(q -c "WITH s AS (SELECT 'mv-' || g AS s, citus_test_port('mv-' || g) AS p,
						row_number() OVER (PARTITION BY citus_test_port('mv-' || g) ORDER BY g) AS r
					   FROM generate_series(1, 12) g)
			SELECT string_agg(a.s || ':' || b.s, ',' ORDER BY a.r)
			  FROM s a JOIN s b ON a.r = b.r AND a.p = $w1 AND b.p = $w2 WHERE a.r <= 2")
	# the shards to move: those of the first three load sessions (with
	# shards of their own)
	shards=$(q -c "WITH s AS (SELECT get_shard_id_for_distribution_column('a2_events', 'mv-' || g) AS sh, g
							  FROM generate_series(1, 12) g),
				   f AS (SELECT sh, min(g) AS g FROM s GROUP BY sh)
			SELECT string_agg(sh::text, ' ' ORDER BY g) FROM (SELECT sh, g FROM f ORDER BY g LIMIT 3) x")
	read -r -a shards <<<"$shards"
	if [[ ${#shards[@]} -ne 3 || $(grep -o : <<<"$pairs" | wc -l) -ne 2 ]]; then
		moves_fail "could not choose 3 shards and 2 pairs (shards: ${shards[*]}; pairs: $pairs)"
		return
	fi
	load_start moves "$sessions" "$pairs"
	if ! load_wait acked 30 60; then
		moves_fail "the load did not start: $(tail -5 "$work/moves.out")"
		return
	fi

	# 1. moves, 3 in each transfer mode
	k=0
	for _ in 1 2 3; do
		for mode in auto force_logical block_writes; do
			shard=${shards[$((k % 3))]}
			from=$(placement "$shard")
			to=$((from == w1 ? w2 : w1))
			t0=$(date +%s%N)
			if ! out=$(q -c 'CALL citus_cleanup_orphaned_resources()' \
				-c "SELECT citus_move_shard_placement($shard, '127.0.0.1', $from, '127.0.0.1', $to,
						shard_transfer_mode => '$mode')" 2>&1); then
				printf 'move %s %s -> %s (%s):\n%s\n' "$shard" "$from" "$to" "$mode" "$out"
				ok=0
			fi
			ms=$((($(date +%s%N) - t0) / 1000000))
			timings+=" $mode:${ms}ms"
			if [[ $(placement "$shard") != "$to" ]]; then
				echo "shard $shard is on $(placement "$shard") after its move to $to ($mode)"
				ok=0
			fi
			if ! load_wait acked 30 60; then
				echo "the load acknowledged fewer than 30 calls in 60 s after moving shard $shard ($mode)"
				ok=0
			fi
			k=$((k + 1))
		done
	done
	echo "moves:$timings"
	# where a session lives, the runbook's two ways: a2's placements, and
	# citus_shards for a table colocated with them (handled, setup.sql)
	local where
	where=$(q -c "SELECT count(*) FROM generate_series(1, 12) g
				  WHERE citus_test_port('mv-' || g) IS DISTINCT FROM
						(SELECT nodeport FROM citus_shards
						  WHERE shardid = get_shard_id_for_distribution_column('handled', 'mv-' || g))")
	if [[ $where != 0 ]]; then
		echo "citus_shards places $where load session(s) on another node than pg_dist_placement does"
		ok=0
	fi

	# 2. a new node, then a rebalance
	local w3=$A2_CITUS_W3 after
	t0=$(date +%s%N)
	# citus_add_node creates a2 on the new node with the single-node event
	# id index on its a2_events (a Citus shell table that holds no rows);
	# a2_distribute() called again makes the index change there
	if ! out=$(bash "$cluster" start-spare 2>&1 &&
		q -c "SELECT citus_add_node('127.0.0.1', $w3)" 2>&1 &&
		q -c 'SELECT a2_distribute()' 2>&1 &&
		q -c 'SELECT citus_rebalance_start()' \
			-c 'SELECT citus_rebalance_wait()' 2>&1); then
		printf 'add node and rebalance:\n%s\n' "$out"
		ok=0
	fi
	ms=$((($(date +%s%N) - t0) / 1000000))
	after=$(q -c "SELECT count(*) FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
				   WHERE n.nodeport = $w3 AND p.shardid IN
					 (SELECT shardid FROM pg_dist_shard WHERE logicalrelid = 'a2_events'::regclass)")
	echo "add node + rebalance: ${ms}ms, $after a2_events shard(s) on the new node"
	if ((after == 0)); then
		echo "the rebalance moved no a2_events shard onto the new node :$w3"
		q -c "SELECT * FROM citus_rebalance_status()" || true
		ok=0
	fi
	# the new node has a2's schema as the others (run.sh's $describe)
	if [[ $(q -p "$w3" -c "$describe") != "$(q -c "$describe")" ]]; then
		echo "the new node's a2 schema differs from the coordinator's:"
		diff <(q -c "$describe_rows") <(q -p "$w3" -c "$describe_rows") || true
		ok=0
	fi
	if ! load_wait acked 30 60; then
		echo "the load acknowledged fewer than 30 calls in 60 s after the rebalance"
		ok=0
	fi

	load_stop || ok=0
	# what the moves left behind (the old placements) is dropped
	if ! out=$(q -c 'CALL citus_cleanup_orphaned_resources()' -c 'SELECT count(*) FROM pg_dist_cleanup' 2>&1) ||
		[[ $(tail -1 <<<"$out") != 0 ]]; then
		printf 'citus_cleanup_orphaned_resources() left resources:\n%s\n' "$out"
		ok=0
	fi
	if ! load_verify; then
		ok=0
	fi
	if [[ $ok -eq 1 ]]; then
		pass "moves: 9 shard moves (3 each: auto, force_logical, block_writes) and a rebalance onto a new node, under 4 clients: $(load_summary_line moves)"
	else
		fail "moves"
	fi
}

if ! load_ready; then
	fail "moves: /usr/bin/python3 cannot import psycopg (apt-get install python3-psycopg)"
else
	moves_run
fi
