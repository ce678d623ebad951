#!/usr/bin/env bash
#
# bench/citus.sh: a2 in distributed mode against the same workload on a
# single node, in one run.
#
# Needs Citus installed in the PostgreSQL that PG_CONFIG names (see
# docs/distributed.md).  Starts a 3-node cluster with
# test/citus/cluster.sh (fsync on, base A2_CITUS_BENCH_BASE, coordinator port
# A2_CITUS_BENCH_PORT), installs a2 twice on the coordinator's server:
#   database postgres  CREATE EXTENSION a2; SELECT a2_distribute();
#   database a2single  CREATE EXTENSION a2 (no citus: single-node mode),
# so the single-node figures come from the same server and settings, and
# runs with pgbench -M extended (parameters bound per call, as drivers
# send them), 1 client, each client on its own fresh session:
#   W1   a2_append of one event          (bench/w1_append.sql)
#   W4   append, claim, complete cycle    (bench/w4_cycle.sql)
# in three shapes:
#   single       a2single on the coordinator's server
#   delegated    plain calls to the coordinator, pushed to the session's worker
#   coordinator  W1 as `SELECT a2_append(...) IS NOT NULL`, which Citus does
#                not delegate: a2 runs on the coordinator, each statement a
#                round trip to the worker (bench/citus_w1_coordinator.sql)
#   on-worker    W1 sent straight to the worker holding the session: a2 and
#                Citus's local execution without the hop (1 client only)
# Prints a Markdown table of median TPS and the ratios, then the statements
# one delegated append and one coordinator-run append send
# (citus.log_remote_commands / citus.log_local_commands).
#
# Settings: A2_BENCH_SECONDS (5), A2_BENCH_REPEAT (3), A2_BENCH_CLIENTS (1).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/.." && pwd -P)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

[[ -f $("$PG_CONFIG" --pkglibdir)/citus.so ]] || a2_die "citus is not installed in $("$PG_CONFIG" --pkglibdir)"

seconds=${A2_BENCH_SECONDS:-5}
repeat=${A2_BENCH_REPEAT:-3}
clients=${A2_BENCH_CLIENTS:-1}
export A2_CITUS_BASE=${A2_CITUS_BENCH_BASE:-/tmp/a2-citus-bench}
export A2_CITUS_PORT=${A2_CITUS_BENCH_PORT:-54345}
export A2_CITUS_FSYNC=on
cluster=$root/test/citus/cluster.sh
out=$(mktemp -d /tmp/a2-citus-bench.XXXXXX)
chmod 0755 "$out"

trap 'bash "$cluster" destroy >/dev/null 2>&1 || true' EXIT
bash "$cluster" destroy >/dev/null 2>&1
bash "$cluster" start
eval "$(bash "$cluster" env)"
q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }
q -c 'CREATE EXTENSION a2' -c 'SELECT a2_distribute()' >/dev/null
q -c 'CREATE DATABASE a2single' >/dev/null 2>&1
q -d a2single -c 'CREATE EXTENSION a2'

# run NAME DB SCRIPT PREFIX [PORT]: one pgbench run, prints its TPS
run() {
	local name=$1 db=$2 script=$3 prefix=$4 port=${5:-$PGPORT} tps
	pgbench -n -M extended -T "$seconds" -c "$clients" -j "$clients" -d "$db" -p "$port" \
		-D prefix="$prefix" -f "$script" >"$out/$name.out" 2>&1 ||
		{ cat "$out/$name.out" >&2; a2_die "pgbench $name failed"; }
	tps=$(sed -n 's/^tps = \([0-9.]*\) .*/\1/p' "$out/$name.out")
	printf '%s\t%s\n' "$name" "$tps" >>"$out/runs.tsv"
}

for r in $(seq "$repeat"); do
	a2_log "citus bench: repeat $r of $repeat (${seconds}s per run)"
	# alternate the order so drift does not favour one shape
	if ((r % 2)); then order="single delegated coordinator on-worker"; else order="on-worker coordinator delegated single"; fi
	for shape in $order; do
		case $shape in
		single) db=a2single ;;
		*) db=postgres ;;
		esac
		if [[ $shape == coordinator ]]; then
			run "W1-$shape" "$db" "$here/citus_w1_coordinator.sql" "w1$shape-r$r-"
		elif [[ $shape == on-worker ]]; then
			# pgbench's first client is client_id 0
			port=$(q -c "SELECT n.nodeport FROM pg_dist_placement p JOIN pg_dist_node n USING (groupid)
				WHERE p.shardid = get_shard_id_for_distribution_column('a2_events', 'w1$shape-r$r-0')")
			run "W1-$shape" "$db" "$here/w1_append.sql" "w1$shape-r$r-" "$port"
		else
			run "W1-$shape" "$db" "$here/w1_append.sql" "w1$shape-r$r-"
			run "W4-$shape" "$db" "$here/w4_cycle.sql" "w4$shape-r$r-"
		fi
	done
done

median() {
	awk -v k="$1" '$1 == k { print $2 }' "$out/runs.tsv" | sort -n |
		awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0 && a != "-") printf "%.2f", a / b; else print "-" }'; }

w1s=$(median W1-single)
w1d=$(median W1-delegated)
w1c=$(median W1-coordinator)
w1w=$(median W1-on-worker)
w4s=$(median W4-single)
w4d=$(median W4-delegated)
echo
echo "Median TPS, $clients client(s), ${seconds}s x $repeat runs, pgbench -M extended, fsync on:"
echo
echo "| workload | single node | delegated | ratio | coordinator-run | ratio | on-worker | ratio |"
echo "|---|---|---|---|---|---|---|---|"
echo "| W1 append (1 event) | $w1s | $w1d | $(ratio "$w1d" "$w1s") | $w1c | $(ratio "$w1c" "$w1s") | $w1w | $(ratio "$w1w" "$w1s") |"
echo "| W4 cycle (3 calls) | $w4s | $w4d | $(ratio "$w4d" "$w4s") | - | - | - | - |"

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
echo
echo "pgbench outputs: $out"
