# shellcheck shell=bash
#
# test/citus/node_restart.sh: a worker node failing and coming back.
# Sourced by run.sh with load.sh; uses run.sh's q, pass, fail, $work,
# $here, $coord, $w1, $w2, $A2_CITUS_LOGS.  The statements are
# docs/distributed.md's runbooks "A worker node fails and comes back" and
# "In-doubt two-phase transactions".
#
#   1. in doubt: a transaction appends to a session on each worker; at its
#      COMMIT, after the coordinator committed and before it sent COMMIT
#      PREPARED (a gdb breakpoint on Citus's
#      CoordinatedRemoteTransactionsCommit in that backend), w2 is stopped
#      with pg_ctl stop -m immediate, then started again.  Checked: what
#      the client saw at COMMIT; the transaction is prepared on w2 and holds
#      the session: a call of that session with lock_timeout gets 55P03
#      (Citus's periodic recovery is off meanwhile: recover_2pc_interval -1);
#      SELECT recover_prepared_transactions() on the coordinator commits it
#      (both events stored, nothing prepared on any node) and the session
#      takes calls again.  Skipped (one line) without gdb.
#   2. under load: 4 clients of load.py on sessions of both workers (with
#      two-session transactions).  Three rounds: w2 is stopped (-m
#      immediate, immediate, then fast) once the clients have had 30 more
#      calls acknowledged, started again once every client is retrying a
#      call, and recover_prepared_transactions() is called right after the
#      start.  After the load stops: recover_prepared_transactions() until
#      no node has a prepared transaction (a bounded poll), and load.py
#      verify.

victim_dir=$A2_CITUS_LOGS/w2
node_up() { as_postgres "$PGBIN/pg_ctl" start -D "$victim_dir" -l "$A2_CITUS_LOGS/w2.log" -w -t 120 -s; }
# prepared transactions on the coordinator and every worker, counted as
# the runbook does
prepared_total() {
	q -c "SELECT (SELECT count(*) FROM pg_prepared_xacts)
				 + (SELECT sum(result::int) FROM run_command_on_workers('SELECT count(*) FROM pg_prepared_xacts'))"
}
# recover_until_clean: recover_prepared_transactions() on the coordinator
# until no node has a prepared transaction; 100 rounds at most
recover_until_clean() {
	local i
	for i in $(seq 100); do
		q -c 'SELECT recover_prepared_transactions()' >/dev/null 2>&1 || true
		[[ $(prepared_total) == 0 ]] && return 0
		sleep 0.1
	done
	return 1
}

# --- 1. a transaction in doubt ------------------------------------------------
doubt_run() {
	local a b dir=$work/doubt ok=1 pid i out prepared blocked recovered stored t0
	# Citus's own recovery (the maintenance daemon, every
	# citus.recover_2pc_interval) is off meanwhile, so that the explicit
	# call is what recovers
	q -c 'ALTER SYSTEM SET citus.recover_2pc_interval = -1' -c 'SELECT pg_reload_conf()' >/dev/null
	a=$(q -c "SELECT citus_test_session_on('doubt', $w1)")
	b=$(q -c "SELECT citus_test_session_on('doubt', $w2)")
	mkdir -p "$dir"
	printf '#!/bin/sh\nexec runuser -u postgres -- %q stop -D %q -m immediate -w -t 60 -s\n' \
		"$PGBIN/pg_ctl" "$victim_dir" >"$dir/down.sh"
	chmod +x "$dir/down.sh"
	# the client: append to both sessions in one transaction, wait for
	# "go", COMMIT; prints what COMMIT answered and the warnings
	/usr/bin/python3 - "$a" "$b" "$dir" >"$dir/client.out" 2>&1 <<'EOF' &
import os, sys, time, psycopg
from psycopg.types.json import Jsonb
a, b, d = sys.argv[1:]
conn = psycopg.connect('', autocommit=True, cursor_factory=psycopg.ClientCursor)
notes = []
conn.add_notice_handler(lambda n: notes.append('%s %s: %s' % (n.severity_nonlocalized, n.sqlstate, n.message_primary)))
conn.execute('BEGIN')
conn.execute('SELECT a2_append(%s, %s)', (a, Jsonb([{'id': 'doubt-a', 'type': 'x'}])))
conn.execute('SELECT a2_append(%s, %s)', (b, Jsonb([{'id': 'doubt-b', 'type': 'x'}])))
open(d + '/pid.tmp', 'w').write(str(conn.info.backend_pid))
os.replace(d + '/pid.tmp', d + '/pid')
for _ in range(600):
    if os.path.exists(d + '/go'):
        break
    time.sleep(0.1)
try:
    conn.execute('COMMIT')
    print('commit: ok')
except psycopg.Error as e:
    print('commit: %s %s' % (e.sqlstate, str(e).splitlines()[0]))
for n in notes:
    print('notice: ' + n)
EOF
	pid=$!
	for i in $(seq 300); do [[ -f $dir/pid ]] && break; sleep 0.1; done
	if [[ ! -f $dir/pid ]]; then
		cat "$dir/client.out"
		fail "restart (in doubt): the client did not get to COMMIT"
		kill "$pid" 2>/dev/null
		return
	fi
	# stop w2 when the backend reaches COMMIT PREPARED
	timeout 120 gdb -p "$(cat "$dir/pid")" -batch -ex 'break CoordinatedRemoteTransactionsCommit' \
		-ex continue -ex "shell $dir/down.sh" -ex detach >"$dir/gdb.out" 2>&1 &
	local gdb_pid=$!
	for _ in $(seq 300); do grep -q '^Continuing' "$dir/gdb.out" 2>/dev/null && break; sleep 0.1; done
	touch "$dir/go"
	wait "$gdb_pid" || ok=0
	wait "$pid" || ok=0
	out=$(cat "$dir/client.out")
	echo "restart (in doubt): $(grep '^commit' <<<"$out")$(grep '^notice' <<<"$out" | sed 's/^notice:/; /' | tr -d '\n')"
	if ! grep -q 'Breakpoint 1, ' "$dir/gdb.out"; then
		cat "$dir/gdb.out"
		echo "the breakpoint was not reached"
		ok=0
	fi
	t0=$SECONDS
	node_up || ok=0
	prepared=$(q -p "$w2" -c "SELECT count(*) FROM pg_prepared_xacts WHERE gid LIKE 'citus\\_%'")
	# the session's lock is held by the prepared transaction: a call waits
	blocked=$(psql -X -At -v VERBOSITY=verbose -c 'BEGIN' -c "SET LOCAL citus.propagate_set_commands = 'local'" \
		-c "SET LOCAL lock_timeout = '300ms'" -c "SELECT a2_append('$b', '[{\"type\": \"blocked\"}]')" -c 'COMMIT' 2>&1 |
		sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' | head -1)
	recovered=$(q -c 'SELECT recover_prepared_transactions()')
	stored=$(q -c "SELECT count(*) FROM a2_events WHERE (session_id, event_id) IN (('$a', 'doubt-a'), ('$b', 'doubt-b'))")
	echo "restart (in doubt): after the restart $prepared prepared transaction(s) on w2; a call of $b with lock_timeout: ${blocked:-no error}; recover_prepared_transactions() = $recovered; $stored of 2 events stored; $((SECONDS - t0)) s"
	if [[ $prepared -lt 1 || $blocked != 55P03 || $recovered -lt 1 || $stored != 2 ]]; then
		ok=0
	fi
	if ! recover_until_clean; then
		echo "prepared transactions left: $(prepared_total)"
		ok=0
	fi
	q -c 'ALTER SYSTEM RESET citus.recover_2pc_interval' -c 'SELECT pg_reload_conf()' >/dev/null
	if [[ $(q -c "SELECT a2_append('$b', '[{\"type\": \"after\"}]') #>> '{events,0,index}'") != 2 ]]; then
		echo "session $b does not take appends after the recovery"
		ok=0
	fi
	if [[ $ok -eq 1 ]]; then
		pass "restart (in doubt): w2 stopped between the coordinator's commit and COMMIT PREPARED; the prepared transaction held the session (55P03 under lock_timeout) until recover_prepared_transactions() committed it; nothing prepared left"
	else
		fail "restart (in doubt)"
	fi
}

# --- 2. under load --------------------------------------------------------------
restart_run() {
	local sessions pairs ok=1 t0 round mode down_ms up_ms resume_ms recovered rounds=""
	sessions=$(q -c "SELECT string_agg('nr-' || g, ',' ORDER BY g) FROM generate_series(1, 12) g")
	pairs=$(q -c "WITH s AS (SELECT 'nr-' || g AS s, citus_test_port('nr-' || g) AS p,
						row_number() OVER (PARTITION BY citus_test_port('nr-' || g) ORDER BY g) AS r
					   FROM generate_series(1, 12) g)
			SELECT string_agg(a.s || ':' || b.s, ',' ORDER BY a.r)
			  FROM s a JOIN s b ON a.r = b.r AND a.p = $w1 AND b.p = $w2 WHERE a.r <= 2")
	load_start restart "$sessions" "$pairs"
	# three rounds: a crash (-m immediate) twice, then a clean stop (-m fast)
	for round in 1 2 3; do
		mode=immediate
		[[ $round == 3 ]] && mode=fast
		if ! load_wait acked 30 60; then
			echo "round $round: the load acknowledged fewer than 30 calls in 60 s: $(tail -5 "$work/restart.out")"
			ok=0
			break
		fi
		t0=$(date +%s%N)
		as_postgres "$PGBIN/pg_ctl" stop -D "$victim_dir" -m "$mode" -w -t 60 -s || ok=0
		if ! load_wait_retrying 4 60; then
			echo "round $round: not all 4 clients were retrying a call within 60 s of stopping w2"
			ok=0
		fi
		down_ms=$((($(date +%s%N) - t0) / 1000000))
		t0=$(date +%s%N)
		node_up || ok=0
		recovered=$(q -c 'SELECT recover_prepared_transactions()') || ok=0
		up_ms=$((($(date +%s%N) - t0) / 1000000))
		t0=$(date +%s%N)
		if ! load_wait acked 30 60; then
			echo "round $round: the load acknowledged fewer than 30 calls in 60 s after the restart"
			ok=0
		fi
		resume_ms=$((($(date +%s%N) - t0) / 1000000))
		echo "restart round $round (-m $mode): down ${down_ms}ms; start + recover_prepared_transactions() ${up_ms}ms (recovered $recovered); 30 calls acknowledged ${resume_ms}ms after"
		rounds+="${rounds:+,} $mode"
	done
	load_stop || ok=0
	t0=$(date +%s%N)
	if ! recover_until_clean; then
		echo "prepared transactions left after 100 recoveries: $(prepared_total)"
		ok=0
	fi
	echo "restart: nothing prepared on any node $((($(date +%s%N) - t0) / 1000000))ms after the load stopped"
	load_verify || ok=0
	if [[ $ok -eq 1 ]]; then
		pass "restart: w2 stopped (-m:$rounds) and started under 4 clients, nothing prepared left after recovery: $(load_summary_line restart)"
	else
		fail "restart"
	fi
}

if ! load_ready; then
	fail "restart: /usr/bin/python3 cannot import psycopg (apt-get install python3-psycopg)"
else
	if command -v gdb >/dev/null 2>&1; then
		doubt_run
	else
		printf 'skip restart (in doubt): gdb is not installed\n'
	fi
	restart_run
fi
