# shellcheck shell=bash
#
# test/notifier/field-suite.sh: sourced (not run) by the suites
# 16-notifier-xids.sh, 17-notifier-restart.sh and 18-notifier-faults.sh.
# notifier_field MODE runs test/notifier/field.py MODE on a throwaway
# cluster under a temporary directory (port A2_NOTIFIER_PGPORT, default
# A2_PGPORT + 7), removed at the end; on failure the server log's tail is
# printed first.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config
export PG_CONFIG

notifier_field() {
	local mode=$1 py=/usr/bin/python3 rc=0
	"$py" -c 'import psycopg' 2>/dev/null || a2_die "notifier-$mode: $py cannot import psycopg (python3-psycopg)"
	[[ $EUID -eq 0 || $(id -un) == postgres ]] || a2_die "notifier-$mode: needs root or postgres (it edits the data directory)"
	field_tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-field.XXXXXX")
	chmod 0755 "$field_tmp"
	export A2_PGDATA=$field_tmp/pg/data
	export A2_PGPORT=${A2_NOTIFIER_PGPORT:-$((${A2_PGPORT:-54329} + 7))}
	trap 'bash "$root/scripts/cluster.sh" destroy >/dev/null 2>&1 || true; rm -rf -- "$field_tmp"' EXIT
	eval "$(bash "$root/scripts/cluster.sh" env)"
	"$py" "$root/test/notifier/field.py" "$mode" || rc=1
	if [[ $rc -ne 0 && -f $field_tmp/pg/log ]]; then
		printf -- '--- last lines of the server log ---\n' >&2
		tail -n 40 "$field_tmp/pg/log" >&2 || true
	fi
	return $rc
}
