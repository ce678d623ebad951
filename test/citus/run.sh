#!/usr/bin/env bash
#
# test/citus/run.sh: a2 in distributed mode on a 3-node Citus cluster.
#
# When Citus is not installed in the PostgreSQL that PG_CONFIG names (the
# case in CI: Citus is not packaged for Debian), prints one line
#   skipped: citus is not installed
# and exits 0.  Otherwise it starts its own throwaway cluster
# (test/citus/cluster.sh: coordinator + 2 workers on 127.0.0.1, private
# ports, shared_preload_libraries = 'citus,a2'), runs a2_distribute() twice,
# and checks:
#   schema     every node has the same a2 indexes and functions
#   protocol   the whole protocol on a session on each worker, autocommit
#              and in transactions with the caller's own rows (protocol.sql)
#   features   0.4.0's single-node features refused with 0A000, nothing
#              written; cancel, metrics and list_sessions across shards
#              (features.sql)
#   routing    each delegated call is one task on its shard's node (EXPLAIN);
#              each coordinator-run call talks to that node only, with no
#              two-phase commit (citus.log_remote_commands)
#   race       coordinator-run and delegated appends on one session at once:
#              dense indexes, no error
#   2pc        one transaction appending to sessions on both workers
#   notify     a delegated append is heard on the node a2_notify_nodes() lists
#   stream     the TypeScript client's stream LISTENs on every listed node and
#              receives delegated and coordinator-run appends (stream.sh;
#              skipped when node or clients/node's npm deps are missing)
#   stress     test/stress's driver and invariants for a short run
#   dump       pg_dump of the coordinator restores into a single-node a2
#   fleet      a2_claim_next, a2_list_sessions and a2_drop_finished_sessions
#              across shards (fleet.py; python3-psycopg)
#   grants     a role made with a2_grant_worker runs the protocol through the
#              coordinator, and nothing else (grants.sh)
#   restart    a worker stopped with -m immediate: a transaction in doubt
#              and its recovery; then under a 4-client load (node_restart.sh)
#   moves      shard moves in the three transfer modes, a new node and a
#              rebalance, under a 4-client load (moves.sh)
# then stops every node (by data directory) and deletes the data.  The
# restart and moves loads are test/citus/load.py (python3-psycopg).
#
# Environment: A2_CITUS_BASE (default /tmp/a2-citus), A2_CITUS_PORT (coordinator
# port, workers the next two, a spare worker the one after; default 54340),
# A2_CITUS_STRESS_SECONDS (10), A2_CITUS_KEEP=1 keeps the cluster running
# afterwards, A2_CITUS_ONLY="grants restart moves" runs only the protocol and
# those parts (any of checks, grants, restart, moves; default all).

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
root=$(cd "$here/../.." && pwd -P)
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

if [[ ! -f $("$PG_CONFIG" --pkglibdir)/citus.so ||
	! -f $("$PG_CONFIG" --sharedir)/extension/citus.control ]]; then
	echo "skipped: citus is not installed"
	exit 0
fi

export A2_CITUS_BASE=${A2_CITUS_BASE:-/tmp/a2-citus}
export A2_CITUS_PORT=${A2_CITUS_PORT:-54340}
cluster=$here/cluster.sh
work=$(mktemp -d /tmp/a2-citus-test.XXXXXX)
chmod 0755 "$work"

cleanup() {
	declare -F load_kill >/dev/null && load_kill
	if [[ ${A2_CITUS_KEEP:-0} == 1 ]]; then
		a2_log "citus: leaving the cluster running (A2_CITUS_KEEP=1)"
	else
		bash "$cluster" destroy || true
	fi
	rm -rf -- "$work"
}
trap cleanup EXIT

bash "$cluster" destroy
bash "$cluster" start
eval "$(bash "$cluster" env)"
w1=$A2_CITUS_W1
w2=$A2_CITUS_W2
coord=$A2_CITUS_COORD

failed=0
pass() { printf 'ok   %s\n' "$*"; }
fail() {
	printf 'FAIL %s\n' "$*"
	failed=$((failed + 1))
}
q() { psql -X -q -v ON_ERROR_STOP=1 -At "$@"; }

# --- install ------------------------------------------------------------------
q -c 'CREATE EXTENSION a2' -c 'SELECT a2_distribute()' -c 'SELECT a2_distribute()' >/dev/null
q -f "$here/setup.sql" >/dev/null

# --- schema: identical on every node -----------------------------------------
describe_rows="SELECT x FROM (
	SELECT indexrelid::regclass::text || ':' || pg_get_indexdef(indexrelid) AS x
	  FROM pg_index WHERE indrelid IN (SELECT objid FROM pg_depend
		WHERE refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2') AND deptype = 'e')
	UNION ALL
	SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_depend d ON d.objid = p.oid
	 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2') AND d.deptype = 'e'
	UNION ALL
	SELECT c.relname FROM pg_class c JOIN pg_depend d ON d.objid = c.oid
	 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2') AND d.deptype = 'e') s ORDER BY x"
describe="SELECT md5(string_agg(x, ';' ORDER BY x)) FROM ($describe_rows) d"
sums=$(for p in "$coord" "$w1" "$w2"; do q -p "$p" -c "$describe"; done | sort -u | wc -l)
if [[ $sums -eq 1 ]] &&
	[[ $(q -c "SELECT count(*) FROM pg_indexes WHERE indexname = 'a2_events_event_id'") == 0 ]] &&
	[[ $(q -c "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid::text LIKE 'a2\\_%'") == 9 ]] &&
	[[ $(q -c "SELECT a2_is_distributed()") == t ]]; then
	pass "schema: a2_distribute() twice; same indexes, functions and tables on all 3 nodes; 9 tables distributed"
else
	fail "schema: nodes differ ($sums distinct descriptions) or distribution incomplete"
fi

# --- protocol ------------------------------------------------------------------
if q -f "$here/protocol.sql" >"$work/protocol.out" 2>&1; then
	pass "protocol: sessions on both workers, autocommit and in transactions"
else
	cat "$work/protocol.out"
	fail "protocol"
fi

# --- 0.4.0's features: refused (0A000, nothing written) or working ----------
if q -f "$here/features.sql" >"$work/features.out" 2>&1; then
	pass "features: queues, priorities, keys, waits, limits and schedules refused with 0A000, nothing written, their tables left local; cancel, metrics and list_sessions across shards"
else
	cat "$work/features.out"
	fail "features (test/citus/features.sql)"
fi

only=" ${A2_CITUS_ONLY:-checks grants restart moves} "
. "$here/load.sh"

# --- fleet: work discovery across shards (SPEC 7.6) -----------------------------
fleet_checks() {
	# after the other checks: its drop check drops their finished sessions
	if /usr/bin/python3 -c 'import psycopg' 2>/dev/null; then
		if /usr/bin/python3 "$here/fleet.py" "$coord" "$w1" "$w2" >"$work/fleet.out" 2>&1; then
			sed 's/^ok   /ok   fleet /' "$work/fleet.out"
		else
			cat "$work/fleet.out"
			fail "fleet (test/citus/fleet.py)"
		fi
	else
		fail "fleet: python3-psycopg is missing (scripts/deps.sh installs it)"
	fi
}

if [[ $only == *" checks "* ]]; then
	. "$here/checks.sh"
	. "$here/stream.sh"
	fleet_checks
fi
[[ $only != *" grants "* ]] || . "$here/grants.sh"
[[ $only != *" restart "* ]] || . "$here/node_restart.sh"
# last: it adds a node
[[ $only != *" moves "* ]] || . "$here/moves.sh"

echo
if [[ $failed -ne 0 ]]; then
	echo "citus: $failed check(s) failed"
	exit 1
fi
echo "citus: all checks passed"
