# shellcheck shell=bash
#
# test/citus/checks.sh: the checks of test/citus/run.sh after the protocol.
# Sourced by run.sh (not executable): uses its q, pass, fail, $work, $here,
# $root, $coord, $w1, $w2.

# The port of the node holding a session's shard.
port_of() { q -c "SELECT citus_test_port('$1')"; }

sa=$(q -c "SELECT citus_test_session_on('route', $w1)")
sb=$(q -c "SELECT citus_test_session_on('route', $w2)")

# --- routing: delegated calls (EXPLAIN) ---------------------------------------
# Each call of the protocol, as a client sends it: EXPLAIN must show one
# task, on the node of the session's shard (or of the ns's shard).
routing_calls() {
	local s=$1
	cat <<EOF
SELECT a2_append('$s', '[{"id": "$s-1", "type": "x"}, {"type": "y", "lane": "L"}]')
SELECT a2_read('$s', 0, 10, 5)
SELECT a2_claim('$s', 'h', 30000)
SELECT a2_renew('$s', 'h', '[{"index": 1, "attempt": 1}]', 30000)
SELECT a2_put_snapshots('$s', 'r', '[{"index": 1, "state": {}, "pinEventIndexes": [2]}, {"index": 2, "state": {}}]')
SELECT a2_complete('$s', 1, 1, '[{"id": "$s-c", "type": "z"}]')
SELECT a2_fail('$s', 2, 1, 'e', 1)
SELECT a2_read_state('$s', 'r', 3, 1)
SELECT a2_presence_set('$s', 'p', '{"a": 1, "b": null}', now(), 1, 60000)
SELECT a2_presence_read('$s')
EOF
}
bad=0
for s in "$sa" "$sb"; do
	port=$(port_of "$s")
	while IFS= read -r call; do
		plan=$(q -c "EXPLAIN $call")
		if ! grep -q 'Task Count: 1$' <<<"$plan" ||
			! grep -q "Node: host=127.0.0.1 port=$port " <<<"$plan"; then
			printf 'not routed to port %s: %s\n%s\n' "$port" "$call" "$plan"
			bad=1
		fi
		# run it too, so the next call's EXPLAIN has state to act on
		q -c "$call" >/dev/null || bad=1
	done < <(routing_calls "$s")
done
if [[ $bad -eq 0 ]]; then
	pass "routing (delegated): 10 calls x 2 sessions, each EXPLAINed as one task on its shard's node, and run"
else
	fail "routing (delegated)"
fi

# --- routing: coordinator-run calls (citus.log_remote_commands) ---------------
# `SELECT f(...) IS NOT NULL` is not a plain function call, so Citus runs a2
# on the coordinator; every statement a2 runs must go to the shard's node
# only, and the commit must be one-phase (no PREPARE TRANSACTION).
bad=0
for p in "$w1" "$w2"; do
	s=$(q -c "SELECT citus_test_session_on('coord', $p)")
	port=$(port_of "$s")
	while IFS= read -r call; do
		out=$(psql -X -v ON_ERROR_STOP=1 -At -c 'SET citus.log_remote_commands = on' \
			-c "$call IS NOT NULL" 2>&1) || { printf '%s\n' "$out"; bad=1; continue; }
		ports=$(grep -o 'on server postgres@127.0.0.1:[0-9]*' <<<"$out" | sed 's/.*://' | sort -u)
		if [[ $ports != "$port" ]] || grep -q 'PREPARE TRANSACTION' <<<"$out"; then
			printf 'coordinator-run call touched ports [%s], expected %s: %s\n%s\n' \
				"$(echo $ports)" "$port" "$call" "$out"
			bad=1
		fi
	done < <(routing_calls "$s")
done
# a2_read_states: one routed read per request, each on its own node
out=$(psql -X -v ON_ERROR_STOP=1 -At -c 'SET citus.log_remote_commands = on' \
	-c "SELECT a2_read_states('[{\"sessionId\": \"$sa\"}, {\"sessionId\": \"$sb\"}]', 'r')" 2>&1) || bad=1
if [[ $(grep -c 'issuing WITH sel' <<<"$out") -ne 2 ||
	$(grep -o 'on server postgres@127.0.0.1:[0-9]*' <<<"$out" | sed 's/.*://' | sort -u | tr '\n' ' ') != \
	"$(printf '%s\n' "$(port_of "$sa")" "$(port_of "$sb")" | sort -u | tr '\n' ' ')" ]]; then
	printf 'read_states was not one routed read per request:\n%s\n' "$out"
	bad=1
fi
if [[ $bad -eq 0 ]]; then
	pass "routing (coordinator-run): every statement to the shard's node only, one-phase commit; read_states one read per request"
else
	fail "routing (coordinator-run)"
fi

# --- race: both paths on one session at once ----------------------------------
n=40
race=$(q -c "SELECT citus_test_session_on('race', $w1)")
for i in $(seq "$n"); do
	echo "SELECT a2_append('$race', '[{\"type\": \"delegated\"}, {\"type\": \"delegated\"}]');"
done >"$work/race-delegated.sql"
for i in $(seq "$n"); do
	echo "SELECT a2_append('$race', '[{\"type\": \"coordinator\"}]') IS NOT NULL;"
	echo "SELECT a2_claim('$race', 'h', 30000) IS NOT NULL;"
done >"$work/race-coordinator.sql"
# and straight on the worker, as a client connected there would
sed 's/delegated/on-worker/g' "$work/race-delegated.sql" >"$work/race-worker.sql"
pids=()
q -f "$work/race-delegated.sql" >"$work/race-1.out" 2>&1 &
pids+=($!)
q -f "$work/race-coordinator.sql" >"$work/race-2.out" 2>&1 &
pids+=($!)
q -p "$(port_of "$race")" -f "$work/race-worker.sql" >"$work/race-3.out" 2>&1 &
pids+=($!)
bad=0
for pid in "${pids[@]}"; do wait "$pid" || bad=1; done
dense=$(q -c "SELECT count(*) = $((5 * n)) AND min(idx) = 1 AND max(idx) = $((5 * n))
				 AND count(DISTINCT idx) = count(*) FROM a2_events WHERE session_id = '$race'")
if [[ $bad -eq 0 && $dense == t ]]; then
	pass "race: $n delegated + $n coordinator-run (with claims) + $n on-worker appends on one session: indexes 1..$((5 * n)) dense, no error"
else
	cat "$work"/race-*.out | grep -v '^t$' | grep -v '^{' | head -20
	fail "race: errors or a gap/duplicate (dense=$dense)"
fi

# --- 2pc: one transaction, sessions on both workers ----------------------------
two=$(q -c "SELECT citus_test_session_on('two', $w1)")
too=$(q -c "SELECT citus_test_session_on('two', $w2)")
twopc() {
	psql -X -v ON_ERROR_STOP=1 -At -c 'SET citus.log_remote_commands = on' -c "SET a2.notify = $1" \
		-c "BEGIN" \
		-c "SELECT a2_append('$two', '[{\"type\": \"x\"}]') IS NOT NULL" \
		-c "SELECT a2_append('$too', '[{\"type\": \"x\"}]') IS NOT NULL" \
		-c "COMMIT" 2>&1
}
out=$(twopc off) || true
if grep -q 'PREPARE TRANSACTION' <<<"$out" &&
	[[ $(q -c "SELECT count(*) FROM a2_events WHERE session_id IN ('$two', '$too')") == 2 ]]; then
	pass "2pc (coordinator-run, a2.notify = off): appends to sessions on both workers commit together with two-phase commit"
else
	printf '%s\n' "$out"
	fail "2pc (coordinator-run, a2.notify = off)"
fi
out=$(twopc on) || true
if [[ $(q -c "SELECT count(*) FROM a2_events WHERE session_id IN ('$two', '$too')") == 4 ]]; then
	pass "2pc (coordinator-run, a2.notify = on): commits (a2 ran on the coordinator, which commits without preparing)"
elif grep -q 'cannot PREPARE a transaction that has executed LISTEN, UNLISTEN, or NOTIFY' <<<"$out"; then
	fail "2pc (coordinator-run, a2.notify = on): PREPARE refused because the append ran NOTIFY"
else
	printf '%s\n' "$out"
	fail "2pc (coordinator-run, a2.notify = on)"
fi

# delegated calls in one transaction block, on both workers: each worker
# runs its a2 call inside a transaction Citus prepares, and its notifier
# announces the session at COMMIT PREPARED
announced() { q -p "$1" -c 'SELECT a2_notify_wait() AND true' -c 'SELECT announced FROM a2_notify_status()' | tail -1; }
before1=$(announced "$w1")
before2=$(announced "$w2")
out=$(psql -X -v ON_ERROR_STOP=1 -At -c 'SET citus.log_remote_commands = on' \
	-c "BEGIN" \
	-c "SELECT a2_append('$two', '[{\"type\": \"d\"}]')" \
	-c "SELECT a2_append('$too', '[{\"type\": \"d\"}]')" \
	-c "COMMIT" 2>&1) || true
after1=$(announced "$w1")
after2=$(announced "$w2")
if [[ $(q -c "SELECT count(*) FROM a2_events WHERE session_id IN ('$two', '$too') AND event_type = 'd'") == 2 ]] &&
	((after1 > before1 && after2 > before2)); then
	pass "2pc (delegated, a2.notify = on): one transaction block delegating to both workers commits; each worker's notifier announced it"
else
	printf '%s\n' "$out" | grep -v '^DETAIL\|^NOTICE' | head -20
	fail "2pc (delegated, a2.notify = on): $(grep -o 'cannot PREPARE[^"]*' <<<"$out" | head -1)"
fi

# --- pinned: a session's statements run on the shard tables -------------------
# On the node that holds a session's shard, a call pins the session to it
# (src/citus/citus_shards.h): one write through Citus that changes nothing takes the
# shard-metadata lock, and every other statement of the call runs straight
# on the shard tables.  Counted with citus.log_local_commands, which logs
# each statement Citus runs on a local shard: one per call, whatever the call.
pin=$(q -c "SELECT citus_test_session_on('pin', $w1)")
citus_statements() {
	psql -X -v ON_ERROR_STOP=1 -At -p "$w1" -c 'SET citus.log_local_commands = on' -c "$1" 2>&1 |
		grep -c 'executing the command locally' || true
}
counts=""
for call in "SELECT a2_append('$pin', '[{\"type\": \"a\", \"lane\": \"l\"}, {\"type\": \"b\"}]') IS NOT NULL" \
	"SELECT a2_claim('$pin', 'h', 30000) IS NOT NULL" \
	"SELECT a2_complete('$pin', 1, 1, '[{\"type\": \"c\", \"id\": \"$pin-c\"}]') IS NOT NULL" \
	"SELECT a2_fail('$pin', 2, 1, 'boom', 5) IS NOT NULL"; do
	counts+="$(citus_statements "$call") "
done
if [[ $counts == "1 1 1 1 " ]]; then
	pass "pinned: append, claim, complete and fail on the shard's node each run one statement through Citus (the metadata lock), the rest on the shard tables"
else
	fail "pinned: statements through Citus per call: $counts(expected 1 each)"
fi
if [[ $(q -c "SELECT string_agg(idx || ':' || event_type || ':' || (processed_at IS NOT NULL) || ':' || failure_count, ' ' ORDER BY idx)
				FROM a2_events WHERE session_id = '$pin'") == "1:a:true:0 2:b:false:1 3:c:false:0" ]]; then
	pass "pinned: the calls wrote what the routed path writes (indexes, completion, returned event, failure)"
else
	q -c "SELECT idx, event_type, processed_at, failure_count FROM a2_events WHERE session_id = '$pin' ORDER BY idx"
	fail "pinned: unexpected rows"
fi

# A call Citus delegates runs in a backend of the coordinator's, which never
# sends work elsewhere: there a2 takes the metadata lock itself (Citus's
# lock_shard_metadata) instead of through a Citus statement.  Seen in
# pg_locks on the worker while the coordinator's transaction is open: the
# shared lock of the session's colocation group (class 8, Citus's colocated
# shards metadata lock), held by the coordinator's connection.
colocation=$(q -c "SELECT colocationid FROM pg_dist_partition WHERE logicalrelid = 'a2_events'::regclass")
psql -X -At -c "BEGIN" -c "SELECT a2_append('$pin', '[{\"type\": \"held\"}]')" \
	-c "SELECT pg_sleep(3)" -c "COMMIT" >"$work/pin-held.out" 2>&1 &
held_pid=$!
held=""
for _ in $(seq 50); do
	held=$(q -p "$w1" -c "SELECT string_agg(l.mode || ' ' || (a.application_name LIKE 'citus_internal%'), ',')
						  FROM pg_locks l JOIN pg_stat_activity a USING (pid)
						 WHERE l.locktype = 'advisory' AND l.objsubid = 8 AND l.objid = $colocation AND l.granted")
	[[ -n $held ]] && break
	sleep 0.1
done
wait "$held_pid" || true
if [[ $held == "ShareLock true" ]] && grep -q '^COMMIT$' "$work/pin-held.out"; then
	pass "pinned: a delegated call holds its shard group's metadata lock (ShareLock, class 8) on the worker until the coordinator's transaction ends"
else
	cat "$work/pin-held.out"
	fail "pinned: delegated call's metadata lock on the worker: '$held'"
fi

# In one transaction on that node: a pinned append, then one delegated to
# the other worker, then a Citus read across every shard.  The pin told
# Citus that this node wrote a shard, so the read sees the pinned write and
# the commit prepares the other worker's part (two-phase commit).
far=$(q -c "SELECT citus_test_session_on('pin', $w2)")
out=$(psql -X -v ON_ERROR_STOP=1 -At -p "$w1" -c 'SET citus.log_remote_commands = on' \
	-c "BEGIN" \
	-c "SELECT a2_append('$pin', '[{\"type\": \"t\"}]') IS NOT NULL" \
	-c "SELECT a2_append('$far', '[{\"type\": \"t\"}]') IS NOT NULL" \
	-c "SELECT 'seen:' || count(*) FROM a2_events WHERE event_type = 't' AND session_id IN ('$pin', '$far')" \
	-c "COMMIT" 2>&1) || true
if grep -q '^seen:2$' <<<"$out" && grep -q 'PREPARE TRANSACTION' <<<"$out" &&
	[[ $(q -c "SELECT count(*) FROM a2_events WHERE event_type = 't' AND session_id IN ('$pin', '$far')") == 2 ]]; then
	pass "pinned: a transaction writing a pinned session and another worker's session reads both and commits with two-phase commit"
else
	printf '%s\n' "$out" | grep -v '^DETAIL\|^NOTICE:  issuing SELECT\|^NOTICE:  issuing BEGIN' | head -20
	fail "pinned: mixed transaction"
fi

# A savepoint rolled back drops the pins with the locks it took; the session
# is pinned again by its next call and nothing of the rolled-back part stays.
out=$(psql -X -v ON_ERROR_STOP=1 -At -p "$w1" -c 'SET citus.log_local_commands = on' \
	-c "BEGIN" \
	-c "SAVEPOINT s" \
	-c "SELECT a2_append('$pin', '[{\"type\": \"gone\"}]') IS NOT NULL" \
	-c "ROLLBACK TO SAVEPOINT s" \
	-c "SELECT a2_append('$pin', '[{\"type\": \"kept\"}]') IS NOT NULL" \
	-c "COMMIT" 2>&1) || true
if [[ $(grep -c 'executing the command locally' <<<"$out") == 2 &&
	$(q -c "SELECT string_agg(event_type, ',' ORDER BY idx) FROM a2_events WHERE session_id = '$pin' AND idx > 5") == kept ]]; then
	pass "pinned: ROLLBACK TO SAVEPOINT unpins; the next call pins again (2 Citus statements) and only its event stays, at index 6"
else
	printf '%s\n' "$out" | head -20
	fail "pinned: savepoint"
fi

# --- notify: a consumer hears a delegated call on the listed node --------------
heard=1
nodes=$(q -c "SELECT string_agg(node_port::text, ' ' ORDER BY node_port) FROM a2_notify_nodes()")
if [[ $nodes != "$(printf '%s\n' "$coord" "$w1" "$w2" | sort | tr '\n' ' ' | sed 's/ $//')" ]]; then
	echo "a2_notify_nodes() lists [$nodes]"
	heard=0
fi
ns=$(q -c "SELECT citus_test_session_on('listen', $w2)")
# listen_for PORT CALL: LISTEN on PORT, run CALL on the coordinator, and
# expect the session's notification with index 1, 2, ...
listen_for() {
	local out
	out=$(psql -X -p "$1" -c 'LISTEN a2_events' \
		-c "\\! psql -X -q -At -p $coord -c \"$2\" >/dev/null" \
		-c 'SELECT a2_notify_wait()' -c 'SELECT 1' 2>&1)
	grep -q "Asynchronous notification \"a2_events\" with payload \"{\"sessionId\": \"$ns\", \"index\": $3}\"" <<<"$out" || {
		printf 'no notification on port %s for: %s\n%s\n' "$1" "$2" "$out"
		heard=0
	}
}
# delegated: announced on the worker that ran it
listen_for "$w2" "SELECT a2_append('$ns', jsonb_build_array(jsonb_build_object('type', 'x')))" 1
# coordinator-run: announced on the coordinator
listen_for "$coord" "SELECT a2_append('$ns', jsonb_build_array(jsonb_build_object('type', 'x'))) IS NOT NULL" 2
if [[ $heard -eq 1 ]]; then
	pass "notify: a2_notify_nodes() lists all 3 nodes; a delegated append is heard on its worker, a coordinator-run one on the coordinator"
else
	fail "notify"
fi

# --- stress: the driver and invariants of test/stress --------------------------
stress_s=${A2_CITUS_STRESS_SECONDS:-10}
# The invariants join a2's tables with the driver's local ones, which Citus
# does not plan as such; they run on a local copy of the a2 tables (schema
# inv, first on search_path) of the driver's sessions (stress-*; the
# other checks' sessions are not the driver's), taken once it has stopped.
copy_a2() {
	q -c 'CREATE SCHEMA inv' \
		-c "CREATE TABLE inv.a2_events AS SELECT * FROM public.a2_events WHERE session_id LIKE 'stress-%'" \
		-c "CREATE TABLE inv.a2_snapshots AS SELECT * FROM public.a2_snapshots WHERE session_id LIKE 'stress-%'" \
		-c "CREATE TABLE inv.a2_snapshot_history AS SELECT * FROM public.a2_snapshot_history WHERE session_id LIKE 'stress-%'" \
		-c "CREATE TABLE inv.a2_snapshot_pins AS SELECT * FROM public.a2_snapshot_pins WHERE session_id LIKE 'stress-%'" \
		-c "CREATE TABLE inv.a2_retired_sessions AS SELECT * FROM public.a2_retired_sessions WHERE session_id LIKE 'stress-%'" >/dev/null
}
if STRESS_SECONDS=$stress_s STRESS_CLIENTS=4 "$root/test/stress/run.sh" --setup >"$work/stress.out" 2>&1 &&
	copy_a2 &&
	PGOPTIONS='-c search_path=inv,public' \
		psql -X -v ON_ERROR_STOP=1 -f "$root/test/stress/invariants.sql" >"$work/inv.out" 2>&1; then
	pass "stress: ${stress_s}s, 4 clients through the coordinator; $(sed -n 's/^\([0-9]* invariants checked.*\)/\1/p' "$work/inv.out" | head -1)"
else
	tail -30 "$work/stress.out" || true
	tail -30 "$work/inv.out" 2>/dev/null || true
	fail "stress"
fi

. "$here/dump.sh"
