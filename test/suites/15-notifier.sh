#!/usr/bin/env bash
#
# test/suites/15-notifier.sh: announcements on a2_events, as a listener
# hears them (test/notifier/notifier.py), in all three server set-ups:
#
#  1. the test cluster, which preloads a2: the background notifier.  One
#     announcement per session per committed transaction at its greatest
#     index, none for rollbacks, rolled-back savepoints, replays, empty
#     batches or a2.notify = off; PREPARE TRANSACTION after an append, its
#     announcement at COMMIT PREPARED from another session and none at
#     ROLLBACK PREPARED; two databases hear only their own sessions; under
#     load a listener that reads on receipt sees the announced index, and
#     no committed append goes unannounced, also while the notifier is
#     terminated (pg_terminate_backend) three times and restarted.
#  2. a private cluster with a2.notify_queue_size = 2: under load most
#     transactions find the queue full and fall back to NOTIFY at commit;
#     still nothing is lost.
#  3. the same cluster without shared_preload_libraries: the 0.1 path
#     (in-transaction NOTIFY), the same checks, PREPARE refused with 0A000,
#     and the pgTAP notify test (test/pgtap/fresh/notify.sql) there too.
#
# The private cluster uses port A2_NOTIFIER_PGPORT (default A2_PGPORT + 7)
# under a temporary directory, removed at the end.  The client is Debian's
# python3-psycopg (scripts/deps.sh installs it).

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

py=/usr/bin/python3
"$py" -c 'import psycopg' 2>/dev/null || a2_die "notifier: $py cannot import psycopg (python3-psycopg)"
quick=()
[[ -n ${A2_SOAK_SECONDS:-} ]] || quick=(--quick)

status=0
echo "# 1. the test cluster (a2 preloaded)"
"$py" "$root/test/notifier/notifier.py" --mode notifier "${quick[@]}" || status=1

tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-notifier.XXXXXX")
chmod 0755 "$tmp"
export A2_PGDATA=$tmp/pg/data
export A2_PGPORT=${A2_NOTIFIER_PGPORT:-$((${A2_PGPORT:-54329} + 7))}
cluster() { bash "$root/scripts/cluster.sh" "$@"; }
cleanup() {
	cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT

echo "# 2. a private cluster with a2.notify_queue_size = 2"
A2_NOTIFY_QUEUE_SIZE=2 cluster start
eval "$(cluster env)"
"$py" "$root/test/notifier/notifier.py" --mode notifier --queue-full "${quick[@]}" || status=1

echo "# 3. the same cluster without shared_preload_libraries"
A2_PRELOAD=0 cluster start
eval "$(cluster env)"
if [[ $(psql -X -At -d postgres -c 'SHOW shared_preload_libraries') != "" ]]; then
	echo "not ok - the cluster still preloads a2"
	status=1
fi
"$py" "$root/test/notifier/notifier.py" --mode in-transaction "${quick[@]}" || status=1
dropdb --if-exists --force a2_ntf_tap
createdb a2_ntf_tap
psql -X -q -v ON_ERROR_STOP=1 -d a2_ntf_tap -c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION a2'
pg_prove --failures -d a2_ntf_tap "$root/test/pgtap/fresh/notify.sql" || status=1
cluster stop

if [[ $status -ne 0 ]]; then
	echo "notifier: FAILED" >&2
	exit 1
fi
echo "notifier: passed"
