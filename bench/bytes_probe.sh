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
