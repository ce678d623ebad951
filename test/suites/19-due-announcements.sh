#!/usr/bin/env bash
#
# test/suites/19-due-announcements.sh: scheduled events are announced when
# they fall due (SPEC 7.1; test/notifier/due.py): on time (within 1 s of
# notBefore on the wall clock), not before, once; not when completed or
# dropped before they fell due; a backoff when it ends; after the
# database's scheduler is terminated; and after a server restart.
#
# A private cluster with a2 preloaded (it is restarted by the test), on
# port A2_DUE_PGPORT (default A2_PGPORT + 8) under a temporary directory,
# removed at the end.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

py=/usr/bin/python3
"$py" -c 'import psycopg' 2>/dev/null || a2_die "due: $py cannot import psycopg (python3-psycopg)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-due.XXXXXX")
chmod 0755 "$tmp"
export A2_PGDATA=$tmp/pg/data
export A2_PGPORT=${A2_DUE_PGPORT:-$((${A2_PGPORT:-54329} + 8))}
export A2_PRELOAD=1
cluster() { bash "$root/scripts/cluster.sh" "$@"; }
cleanup() {
	cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT

cluster start
eval "$(cluster env)"
status=0
"$py" "$root/test/notifier/due.py" \
	--server-restart "bash '$root/scripts/cluster.sh' stop && bash '$root/scripts/cluster.sh' start" || status=1
cluster stop

if [[ $status -ne 0 ]]; then
	echo "due announcements: FAILED" >&2
	exit 1
fi
echo "due announcements: passed"
