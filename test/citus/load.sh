# shellcheck shell=bash
#
# test/citus/load.sh: start, watch, stop and check the client load of
# test/citus/load.py.  Sourced by run.sh (not executable) for moves.sh and
# node_restart.sh; uses run.sh's $work, $here and $A2_CITUS_LOGS.
#
#   load_start NAME SESSIONS PAIRS   start 4 clients (in the background)
#   load_wait FIELD N SECONDS        wait until the load has N more
#                                    acknowledged calls (FIELD acked) or
#                                    errors (FIELD errors) than when called;
#                                    1 after SECONDS without
#   load_wait_retrying N SECONDS     wait until N clients are retrying a
#                                    call at once
#   load_stop                        ask the clients to stop, wait for them
#                                    (120 s at most: a client blocked longer
#                                    is a failure)
#   load_verify                      load.py verify; its report on stdout,
#                                    the summary in $work/NAME.summary.json
#   load_summary_line NAME           that summary's counts, one line
#
# The load runs as /usr/bin/python3 with Debian's python3-psycopg.

load_py=(/usr/bin/python3 "$here/load.py")
load_pid=
load_name=

load_ready() {
	/usr/bin/python3 -c 'import psycopg' 2>/dev/null
}

load_start() {
	load_name=$1
	load_sessions=$2
	load_pairs=$3
	rm -f -- "$work/$load_name.stop"
	"${load_py[@]}" run --sessions "$load_sessions" --pairs "$load_pairs" --prefix "$load_name-" \
		--log "$work/$load_name.log" --progress "$work/$load_name.progress" --stop "$work/$load_name.stop" \
		>"$work/$load_name.out" 2>&1 &
	load_pid=$!
}

load_field() {
	local f=0
	[[ $1 == errors ]] && f=1
	[[ $1 == retrying ]] && f=2
	local v
	read -r -a v 2>/dev/null <"$work/$load_name.progress" || v=(0 0 0)
	echo "${v[$f]:-0}"
}

load_wait() {
	local field=$1 n=$2 limit=$3 start deadline
	start=$(load_field "$field")
	deadline=$((SECONDS + limit))
	while (($(load_field "$field") < start + n)); do
		if ((SECONDS >= deadline)); then
			return 1
		fi
		if ! kill -0 "$load_pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
}

load_wait_retrying() {
	local n=$1 limit=$2 deadline
	deadline=$((SECONDS + limit))
	while (($(load_field retrying) < n)); do
		if ((SECONDS >= deadline)) || ! kill -0 "$load_pid" 2>/dev/null; then
			return 1
		fi
		sleep 0.1
	done
}

load_stop() {
	local rc=0
	touch "$work/$load_name.stop"
	for _ in $(seq 1200); do
		kill -0 "$load_pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$load_pid" 2>/dev/null; then
		echo "load: the clients did not stop within 120 s (a call blocked)"
		kill "$load_pid" 2>/dev/null || true
		rc=1
	fi
	wait "$load_pid" || rc=1
	load_pid=
	cat "$work/$load_name.out"
	return $rc
}

load_verify() {
	"${load_py[@]}" verify --sessions "$load_sessions" --pairs "$load_pairs" \
		--log "$work/$load_name.log" --summary "$work/$load_name.summary.json" && return 0
	# keep the call log next to the nodes' logs
	cp -- "$work/$load_name.log" "$work/$load_name.summary.json" "$A2_CITUS_LOGS/" &&
		echo "load: the call log and summary are in $A2_CITUS_LOGS/$load_name.{log,summary.json}"
	return 1
}

# load_summary_line NAME: the counts of the summary, one line
load_summary_line() {
	/usr/bin/python3 - "$work/$1.summary.json" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ok = sum(v for k, v in r['outcomes'].items() if k.endswith(' ok'))
print('%d calls acknowledged, %d events in %d dense sessions, %d errors (%s), %d replayed on retry, %d failed but committed'
      % (ok, r['events'], r['sessions'], r['errors'],
         ', '.join('%s=%d' % kv for kv in r['sqlstates'].items()) or 'none',
         len(r['replayedAfterAmbiguousFailure']), len(r['failedButCommitted'])))
EOF
}

# load_kill: run.sh's cleanup, for a load still running when a check failed
load_kill() {
	if [[ -n $load_pid ]] && kill -0 "$load_pid" 2>/dev/null; then
		kill "$load_pid" 2>/dev/null || true
	fi
}
