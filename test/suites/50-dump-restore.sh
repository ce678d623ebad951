#!/usr/bin/env bash
#
# 50-dump-restore.sh: pg_dump keeps every a2 row, and the protocol carries
# on after pg_restore (issue "Prove it" section 6; SPEC 2: the extension's
# tables are registered with pg_extension_config_dump).
#
# For the extension in public and in a schema of its own: fill a database
# (sessions with lanes, processed, failed, dead-lettered and leased events,
# causes, unicode and 1024-byte names, snapshots with history and pins,
# presence rows and a tombstone), dump it with pg_dump -Fc, restore it with
# pg_restore into a fresh database -- and also through a plain-SQL dump and
# psql -- then check that every row of every a2 table is identical, that
# the privileges on a2's objects (a role given a2_grant_worker) are
# restored as they were, and that appending, claiming, completing,
# failing, snapshots and presence still behave on the restored data.
# A third round fills a 0.1.0 install and updates it to the default
# version before the dump: pg_dump writes CREATE EXTENSION a2, so the
# restore is a fresh install from the generated script, and the updated
# database's rows and privileges must fit it.
#
# Environment: PGHOST/PGPORT/PGUSER as exported by scripts/test.sh;
# A2_DUMP_KEEP=1 keeps the databases (a2_dump_src, a2_dump_custom,
# a2_dump_plain) of the last round for inspection.

set -euo pipefail

# The server's own pg_dump: PG_CONFIG's bindir (scripts/test.sh exports
# it), else Debian's PostgreSQL 15, else whatever PATH has.
if [[ -n ${PG_CONFIG:-} ]]; then
	PGBIN=$("$PG_CONFIG" --bindir)
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[[ -x $PGBIN/pg_dump ]] || PGBIN=$(dirname "$(command -v pg_dump)")
PATH=$PGBIN:$PATH
export PGCLIENTENCODING=UTF8

src=a2_dump_src
work=$(mktemp -d)
dbs=("$src" a2_dump_custom a2_dump_plain)
cleanup() {
	rm -rf -- "$work"
	for d in "${dbs[@]}"; do
		dropdb --if-exists "$d" >/dev/null 2>&1 || true
	done
	psql -X -q -d postgres -c "DROP ROLE IF EXISTS regress_a2_dump_worker" >/dev/null 2>&1 || true
}
trap cleanup EXIT
[[ ${A2_DUMP_KEEP:-0} == 1 ]] && trap - EXIT

failures=0
fail() {
	echo "not ok - $*"
	failures=$((failures + 1))
}
pass() {
	echo "ok - $*"
}

q() { # q DB SQL: one value
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$1" -c "$2"
}

# a2_fill, a2_fingerprint, a2_protocol_checks
# shellcheck source=test/lib/a2-data.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/a2-data.sh"

# The privileges on a2's objects, by name.  pg_dump writes only the changes
# since CREATE EXTENSION (pg_init_privs), so these survive a restore only
# if the fresh install starts from the same privileges as this one.
acls_sql="SELECT pg_describe_object(d.classid, d.objid, 0) || ' ' || coalesce(c.relacl::text, p.proacl::text, '-')
  FROM pg_depend d
  LEFT JOIN pg_class c ON d.classid = 'pg_class'::regclass AND c.oid = d.objid
  LEFT JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND p.oid = d.objid
 WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')
 ORDER BY 1"
role=regress_a2_dump_worker
psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "SET client_min_messages = warning" -c "DROP ROLE IF EXISTS $role" -c "CREATE ROLE $role"

run_round() { # run_round LABEL "CREATE EXTENSION clause" [update]
	local label=$1 clause=$2 update=${3:-} fp_src fp_dst acl_src d
	echo "# $label"
	for d in "${dbs[@]}"; do
		dropdb --if-exists "$d" >/dev/null 2>&1
	done
	createdb "$src"
	a2_fill "$src" "$clause"
	if [[ -n $update ]]; then
		if q "$src" "ALTER EXTENSION a2 UPDATE" >/dev/null; then
			pass "$label: ALTER EXTENSION a2 UPDATE to $(q "$src" "SELECT extversion FROM pg_extension WHERE extname = 'a2'")"
		else
			fail "$label: ALTER EXTENSION a2 UPDATE"
		fi
	fi
	q "$src" "SELECT $(q "$src" "SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension WHERE extname = 'a2'").a2_grant_worker('$role')" >/dev/null
	fp_src=$(a2_fingerprint "$src")
	acl_src=$(q "$src" "$acls_sql")

	pg_dump -Fc -f "$work/a2.dump" "$src"
	createdb a2_dump_custom
	if pg_restore --exit-on-error -d a2_dump_custom "$work/a2.dump"; then
		pass "$label: pg_restore of the custom-format dump"
	else
		fail "$label: pg_restore of the custom-format dump"
	fi
	pg_dump -Fp -f "$work/a2.sql" "$src"
	createdb a2_dump_plain
	if psql -X -q -v ON_ERROR_STOP=1 -d a2_dump_plain -f "$work/a2.sql" >/dev/null; then
		pass "$label: psql restore of the plain dump"
	else
		fail "$label: psql restore of the plain dump"
	fi

	for d in a2_dump_custom a2_dump_plain; do
		fp_dst=$(a2_fingerprint "$d")
		if [[ $fp_dst == "$fp_src" ]]; then
			pass "$label: $d: every row of every a2 table is identical ($(echo "$fp_src" | awk '{printf "%s%s %s", sep, $1, $2; sep=", "}'))"
		else
			fail "$label: $d: a2 tables differ after restore"
			diff <(echo "$fp_src") <(echo "$fp_dst") || true
		fi
		if [[ $(q "$d" "SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'a2'") == \
			$(q "$src" "SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'a2'") ]]; then
			pass "$label: $d: extension restored with the same version and schema"
		else
			fail "$label: $d: extension version or schema differs"
		fi
		if [[ $(q "$d" "$acls_sql") == "$acl_src" ]]; then
			pass "$label: $d: the privileges on a2's objects are restored as they were"
		else
			fail "$label: $d: the privileges on a2's objects are restored as they were"
			diff <(echo "$acl_src") <(q "$d" "$acls_sql") | sed 's/^/#   /' || true
		fi
	done
}

run_round "extension in public" ""
for d in a2_dump_custom a2_dump_plain; do
	a2_protocol_checks "$d" | sed "s/^\(\(not \)\{0,1\}ok - \)/\1public: $d: /" >"$work/checks"
	cat "$work/checks"
	failures=$((failures + $(grep -c '^not ok' "$work/checks" || true)))
done

run_round "extension in schema a2_elsewhere" "SCHEMA a2_elsewhere"
for d in a2_dump_custom a2_dump_plain; do
	if [[ $(q "$d" "SELECT count(*) FROM a2_elsewhere.a2_events") -gt 0 &&
		$(q "$d" "SELECT count(*) FROM pg_class WHERE relname = 'a2_events' AND relnamespace = 'public'::regnamespace") -eq 0 ]]; then
		pass "a2_elsewhere: $d: the tables were restored into a2_elsewhere"
	else
		fail "a2_elsewhere: $d: the tables are not in a2_elsewhere"
	fi
	a2_protocol_checks "$d" | sed "s/^\(\(not \)\{0,1\}ok - \)/\1a2_elsewhere: $d: /" >"$work/checks"
	cat "$work/checks"
	failures=$((failures + $(grep -c '^not ok' "$work/checks" || true)))
done

# The oldest version with an install script of its own, filled, then
# updated to the default version before the dump.
run_round "extension filled at 0.1.0, updated" "VERSION '0.1.0'" update
for d in a2_dump_custom a2_dump_plain; do
	a2_protocol_checks "$d" | sed "s/^\(\(not \)\{0,1\}ok - \)/\1updated: $d: /" >"$work/checks"
	cat "$work/checks"
	failures=$((failures + $(grep -c '^not ok' "$work/checks" || true)))
done

if [[ $failures -gt 0 ]]; then
	echo "dump-restore: $failures check(s) FAILED" >&2
	exit 1
fi
echo "dump-restore: passed"
