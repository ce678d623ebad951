# shellcheck shell=bash
#
# test/notifier/background-suite.sh: sourced (not run) by the suites
# 21-bg-store-faults.sh, 22-bg-batch-boundaries.sh, 23-bg-db-lifecycle.sh
# and 24-bg-capacity.sh.  background MODE runs test/notifier/background.py
# MODE on a throwaway cluster under a temporary directory (port
# A2_BACKGROUND_PGPORT, default A2_PGPORT + 9), removed at the end; on
# failure the server log's tail is printed first.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config
export PG_CONFIG

background() {
	local mode=$1 py=/usr/bin/python3 rc=0
	"$py" -c 'import psycopg' 2>/dev/null || a2_die "background-$mode: $py cannot import psycopg (python3-psycopg)"
	[[ $EUID -eq 0 || $(id -un) == postgres ]] || a2_die "background-$mode: needs root or postgres (it edits the data directory)"
	bg_tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-bg.XXXXXX")
	chmod 0755 "$bg_tmp"
	export A2_PGDATA=$bg_tmp/pg/data
	export A2_PGPORT=${A2_BACKGROUND_PGPORT:-$((${A2_PGPORT:-54329} + 9))}
	trap 'umount "$A2_PGDATA/a2_notifier" >/dev/null 2>&1 || true; bash "$root/scripts/cluster.sh" destroy >/dev/null 2>&1 || true; rm -rf -- "$bg_tmp"' EXIT
	eval "$(bash "$root/scripts/cluster.sh" env)"
	"$py" "$root/test/notifier/background.py" "$mode" || rc=1
	if [[ $rc -ne 0 && -f $bg_tmp/pg/log ]]; then
		printf -- '--- last lines of the server log ---\n' >&2
		tail -n 40 "$bg_tmp/pg/log" >&2 || true
	fi
	return $rc
}
