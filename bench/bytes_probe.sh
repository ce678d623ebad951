#!/usr/bin/env bash
#
# bench/bytes_probe.sh start|end -- called by bench/bytes.sh's psql scripts
# (\!): appends "<block> <start|end> <backend ns> <server ns>" to
# $BYTES_PROBE_FILE.  Backend: the run time (/proc/PID/schedstat, first
# field, nanoseconds) of $BYTES_BPID; server: the sum over the postmaster
# of $BYTES_PGDATA and all its children.  Processes that exit between two
# probes drop out of the sum; bytes.sh keeps connections and autovacuum
# out of its blocks.

set -euo pipefail

# Under valgrind (BYTES_CALLGRIND_DIR: the server runs under callgrind with
# --callgrind-out-file=$BYTES_CALLGRIND_DIR/cg.%p): zero the backend's
# counters at start, dump them at the end and write its instruction count
# (Ir) in place of the backend's run time; the server column is 0.
if [[ -n ${BYTES_CALLGRIND_DIR:-} ]]; then
	if [[ $1 == start ]]; then
		callgrind_control -z "$BYTES_BPID" >/dev/null
		echo "$BYTES_TAG start 0 0" >>"$BYTES_PROBE_FILE"
	else
		callgrind_control -d "$BYTES_BPID" >/dev/null
		dump=$(ls -t "$BYTES_CALLGRIND_DIR"/cg."$BYTES_BPID"* | head -n 1)
		ir=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$dump" | head -n 1)
		[[ -n $ir ]] || ir=$(sed -n 's/^summary: *\([0-9]*\).*/\1/p' "$dump" | head -n 1)
		echo "$BYTES_TAG end ${ir:-0} 0" >>"$BYTES_PROBE_FILE"
	fi
	exit 0
fi

pm=$(head -n 1 "$BYTES_PGDATA/postmaster.pid")
total=0
for d in /proc/[0-9]*; do
	{ read -r stat <"$d/stat"; } 2>/dev/null || continue
	# fields after "(comm) ": state ppid ...
	rest=${stat##*) }
	read -r _ ppid _ <<<"$rest"
	pid=${d#/proc/}
	if [[ $pid == "$pm" || $ppid == "$pm" ]]; then
		{ read -r ns _ <"$d/schedstat"; } 2>/dev/null || continue
		total=$((total + ns))
	fi
done
read -r backend _ <"/proc/$BYTES_BPID/schedstat"
echo "$BYTES_TAG $1 $backend $total" >>"$BYTES_PROBE_FILE"
