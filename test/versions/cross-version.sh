#!/usr/bin/env bash
#
# test/versions/cross-version.sh upgrade|dump: a2 data carried from a
# PostgreSQL 15 cluster to a server of the version PG_CONFIG names.
#
#   upgrade  pg_upgrade (the new version's) of a stopped 15 cluster into a
#            new, empty cluster
#   dump     the new version's pg_dump -Fc of the running 15 server,
#            pg_restore'd into the new one; and a plain dump by 15's own
#            pg_dump, restored with psql
#
# The 15 cluster holds two databases filled by a2_fill (test/lib/a2-data.sh):
# the extension in public and in schema a2_elsewhere.  Afterwards, for each
# database on the new server: every row of every a2 table is identical, the
# extension has the same version and schema (no ALTER EXTENSION needed),
# and the protocol runs on the carried data (a2_protocol_checks).
#
# Run by scripts/matrix.sh inside a Debian root, as root; both clusters run
# as the postgres user under a temporary directory, removed at the end.
# Environment: PG_CONFIG (the new version), A2_OLD_BINDIR (PostgreSQL 15's
# bindir, with a2 installed), A2_OLD_PGPORT, A2_NEW_PGPORT, and whatever
# the 15 binaries need to run there (LD_LIBRARY_PATH).

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
# shellcheck source=test/lib/a2-data.sh
. "$A2_ROOT/test/lib/a2-data.sh"

mode=${1:-}
[[ $mode == upgrade || $mode == dump ]] || a2_die "usage: $0 upgrade|dump"

a2_find_pg_config
new_config=$PG_CONFIG
new_bindir=$PGBIN
new_major=$A2_PG_MAJOR
old_bindir=${A2_OLD_BINDIR:?A2_OLD_BINDIR must name PostgreSQL 15\'s bindir}
old_config=$old_bindir/pg_config
old_port=${A2_OLD_PGPORT:-54335}
new_port=${A2_NEW_PGPORT:-54336}
[[ $("$old_config" --version) == "PostgreSQL 15."* ]] ||
	a2_die "cross-version: $old_config is not PostgreSQL 15"
[[ $new_major -gt 15 ]] || a2_die "cross-version: PG_CONFIG must name a version newer than 15"
export PGCLIENTENCODING=UTF8 PGUSER=postgres
unset PGDATABASE PGSERVICE PGOPTIONS

work=$(mktemp -d /tmp/a2-xv.XXXXXX)
chmod 0755 "$work"
mkdir "$work/up"
chown postgres: "$work/up"

old_cluster() {
	PG_CONFIG=$old_config A2_PGDATA=$work/old/data A2_PGPORT=$old_port \
		bash "$A2_ROOT/scripts/cluster.sh" "$@"
}
new_cluster() {
	PG_CONFIG=$new_config A2_PGDATA=$work/new/data A2_PGPORT=$new_port \
		bash "$A2_ROOT/scripts/cluster.sh" "$@"
}
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	new_cluster destroy >/dev/null 2>&1 || true
	old_cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$work"
}
trap cleanup EXIT

on_old() { PGHOST=$work/old/sock PGPORT=$old_port "$@"; }
on_new() { PGHOST=$work/new/sock PGPORT=$new_port "$@"; }

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
ext_sql="SELECT extversion || ' ' || extnamespace::regnamespace FROM pg_extension WHERE extname = 'a2'"

# --- the 15 cluster and its data ----------------------------------------------

declare -A fp ext
dbs=(a2_xv_public a2_xv_schema)
echo "# PostgreSQL 15 ($old_bindir): two databases of a2 data"
old_cluster start
[[ $(on_old q postgres "SELECT current_setting('server_version_num')::int / 10000") == 15 ]] ||
	fail "the old cluster is not PostgreSQL 15"
for db in "${dbs[@]}"; do
	on_old createdb "$db"
done
on_old a2_fill a2_xv_public ""
on_old a2_fill a2_xv_schema "SCHEMA a2_elsewhere"
for db in "${dbs[@]}"; do
	fp[$db]=$(on_old a2_fingerprint "$db")
	ext[$db]=$(on_old q "$db" "$ext_sql")
	echo "# $db: a2 ${ext[$db]}; $(awk '{printf "%s%s %s", sep, $1, $2; sep=", "}' <<<"${fp[$db]}")"
done
[[ ${ext[a2_xv_public]} == "$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$A2_ROOT/a2.control") public" ]] ||
	fail "the 15 cluster has a2 ${ext[a2_xv_public]}, not this tree's version"

# check DB-ON-NEW SOURCE-DB LABEL: the carried database against the source.
check() {
	local db=$1 src=$2 label=$3 got
	got=$(on_new q "$db" "SELECT current_setting('server_version_num')::int / 10000")
	if [[ $got == "$new_major" ]]; then
		pass "$label: served by PostgreSQL $got"
	else
		fail "$label: served by PostgreSQL '$got', not $new_major"
	fi
	got=$(on_new a2_fingerprint "$db")
	if [[ $got == "${fp[$src]}" ]]; then
		pass "$label: every row of every a2 table is identical"
	else
		fail "$label: a2 tables differ"
		diff <(echo "${fp[$src]}") <(echo "$got") || true
	fi
	got=$(on_new q "$db" "$ext_sql")
	if [[ $got == "${ext[$src]}" ]]; then
		pass "$label: extension a2 $got, as on 15"
	else
		fail "$label: extension a2 '$got', on 15 '${ext[$src]}'"
	fi
	on_new a2_protocol_checks "$db" | sed "s/^\(\(not \)\{0,1\}ok - \)/\1$label: /" >"$work/checks"
	cat "$work/checks"
	failures=$((failures + $(grep -c '^not ok' "$work/checks" || true)))
}

# --- carry it over ------------------------------------------------------------

case $mode in
upgrade)
	# initdb (by starting once) with the same settings as the old cluster:
	# locale, encoding, checksums; shared_preload_libraries = 'a2'.
	new_cluster start
	# Debian's 15.20 (and 17.12) keep an attribute option pg_attver on
	# every column; a server that does not know it (18.6, 19~rc1) refuses
	# the ALTER COLUMN ... SET (pg_attver=...) that pg_upgrade's schema
	# dump carries for the extension's tables, and pg_upgrade fails.  Then
	# the option is taken off the old cluster's user columns first (what a
	# user upgrading to such a server has to do too; README "Supported
	# PostgreSQL versions"), and the run says so.
	if ! on_new psql -X -q -v ON_ERROR_STOP=1 -d postgres -c 'BEGIN' \
		-c 'CREATE TEMP TABLE a2_xv_probe (a int)' \
		-c 'ALTER TABLE a2_xv_probe ALTER COLUMN a SET (pg_attver = 1)' -c 'ROLLBACK' >/dev/null 2>&1; then
		for db in "${dbs[@]}"; do
			n=$(on_old q "$db" "WITH s AS (UPDATE pg_catalog.pg_attribute
				SET attoptions = NULLIF(ARRAY(SELECT o FROM unnest(attoptions) o WHERE o NOT LIKE 'pg_attver=%'), '{}')
				WHERE attrelid >= 16384 AND attoptions::text LIKE '%pg_attver=%' RETURNING 1) SELECT count(*) FROM s")
			echo "# $db: PostgreSQL $new_major does not know the attribute option pg_attver; taken off $n columns before pg_upgrade"
		done
	fi
	new_cluster stop
	old_cluster stop
	echo "# pg_upgrade 15 -> $new_major"
	if as_postgres env -C "$work/up" "$new_bindir/pg_upgrade" \
		--old-bindir="$old_bindir" --new-bindir="$new_bindir" \
		--old-datadir="$work/old/data" --new-datadir="$work/new/data" \
		--old-port="$old_port" --new-port="$new_port" \
		--socketdir="$work/up" --username=postgres >"$work/pg_upgrade.out" 2>&1; then
		pass "pg_upgrade 15 -> $new_major"
	else
		cat "$work/pg_upgrade.out"
		find "$work/new/data" -path '*pg_upgrade_output.d*' -name '*.log' -exec tail -n 20 {} + 2>/dev/null || true
		fail "pg_upgrade 15 -> $new_major"
		exit 1
	fi
	new_cluster start
	for db in "${dbs[@]}"; do
		check "$db" "$db" "pg_upgrade: $db"
	done
	;;
dump)
	new_cluster start
	for db in "${dbs[@]}"; do
		echo "# $db: pg_dump $new_major -Fc of the 15 server, pg_restore into $new_major"
		on_new createdb "$db"
		if on_old pg_dump -Fc -f "$work/$db.dump" "$db" &&
			on_new pg_restore --exit-on-error -d "$db" "$work/$db.dump"; then
			pass "$db: pg_dump $new_major -Fc from 15, pg_restore into $new_major"
			check "$db" "$db" "dump $new_major: $db"
		else
			fail "$db: pg_dump $new_major -Fc from 15, pg_restore into $new_major"
		fi
		echo "# $db: plain pg_dump by 15, psql into $new_major"
		on_new createdb "${db}_plain"
		if on_old "$old_bindir/pg_dump" -Fp -f "$work/$db.sql" "$db" &&
			on_new psql -X -q -v ON_ERROR_STOP=1 -d "${db}_plain" -f "$work/$db.sql" >/dev/null; then
			pass "$db: plain pg_dump by 15, psql into $new_major"
			check "${db}_plain" "$db" "dump 15: $db"
		else
			fail "$db: plain pg_dump by 15, psql into $new_major"
		fi
	done
	;;
esac

if [[ $failures -gt 0 ]]; then
	echo "cross-version $mode: $failures check(s) FAILED" >&2
	exit 1
fi
echo "cross-version $mode: passed"
