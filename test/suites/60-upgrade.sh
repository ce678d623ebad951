#!/usr/bin/env bash
#
# 60-upgrade.sh: reinstalling and upgrading the extension (issue "Prove it"
# section 6).
#
#  1. DROP EXTENSION a2 leaves nothing behind: the database's objects after
#     CREATE EXTENSION + use + DROP EXTENSION are exactly those before, in
#     public and in a schema of the user's.
#  2. CREATE EXTENSION a2 again works in the same session, whose SPI plans
#     were prepared against the dropped tables: every function is called,
#     the extension dropped and created again (in the same session, in
#     another session, inside one transaction, in another schema, and a
#     rolled-back DROP), and every function called again.
#  3. CREATE EXTENSION a2 SCHEMA other: other.a2_append(...) works with the
#     schema off search_path and writes other.a2_events.
#  4. Every update script src/sql/upgrade/a2--X--Y.sql, and every earlier
#     version to the default one: CREATE EXTENSION a2 VERSION 'X' with data
#     (0.1.0 from its own install script, later versions through the
#     updates from it), ALTER EXTENSION a2 UPDATE TO 'Y' (or, to the
#     default version, plain ALTER EXTENSION a2 UPDATE), and the result must
#     describe the same objects, property by property, as a fresh install
#     of Y, keep the data and run the protocol.  A fresh install of the
#     default version runs a2--VERSION.sql, which make generates from
#     src/sql/objects/; so for it the two sides are independent sources,
#     written apart, that must agree.
#  5. Appenders granted by hand under 0.2.0 (INSERT on a2_events to PUBLIC
#     and to a named role) append after ALTER EXTENSION a2 UPDATE, to new
#     and to dropped sessions, and so they do in a pg_dump copy.
#
# Environment: PGHOST/PGPORT/PGUSER as exported by scripts/test.sh; A2_ROOT.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# The installation whose extension directory holds the upgrade scripts:
# PGBIN if set, else PG_CONFIG's bindir (scripts/test.sh exports it), else
# Debian's PostgreSQL 15.
if [[ -z ${PGBIN:-} && -n ${PG_CONFIG:-} ]]; then
	PGBIN=$("$PG_CONFIG" --bindir)
fi
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
[[ -x $PGBIN/psql ]] || PGBIN=$(dirname "$(command -v psql)")
PATH=$PGBIN:$PATH
export PGCLIENTENCODING=UTF8

db=a2_upgrade_suite
db2=a2_upgrade_fresh
work=$(mktemp -d)
cleanup() {
	if declare -F drop_hand_roles >/dev/null; then drop_hand_roles; fi
	rm -rf -- "$work"
	dropdb --if-exists "$db" >/dev/null 2>&1 || true
	dropdb --if-exists "$db2" >/dev/null 2>&1 || true
}
trap cleanup EXIT

failures=0
fail() {
	echo "not ok - $*"
	failures=$((failures + 1))
}
pass() {
	echo "ok - $*"
}
check() { # check LABEL COMMAND...
	local label=$1
	shift
	if "$@"; then pass "$label"; else fail "$label"; fi
}
psql_db() { # psql_db DB [args]
	local d=$1
	shift
	psql -X -q -At -v ON_ERROR_STOP=1 -d "$d" "$@"
}
fresh_db() {
	dropdb --if-exists "$1" >/dev/null 2>&1
	createdb "$1"
}
# Print checks recorded by a psql script into the temp table "checks".
report_checks() { # report_checks PREFIX FILE
	local line
	while IFS= read -r line; do
		case $line in
		ok\ -\ *) pass "$1: ${line#ok - }" ;;
		not\ ok\ -\ *) fail "$1: ${line#not ok - }" ;;
		*) echo "# $line" ;;
		esac
	done <"$2"
}

# Everything in a database, by name (no OIDs), temporary schemas aside.
inventory_sql="
SELECT 'namespace ' || nspname FROM pg_namespace WHERE nspname !~ '^pg_(toast_)?temp_'
UNION ALL
SELECT 'class ' || n.nspname || '.' || c.relname || ' ' || c.relkind::text
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname !~ '^pg_(toast_)?temp_' AND n.nspname <> 'pg_toast'
UNION ALL
SELECT 'toast ' || count(*) FROM pg_class WHERE relnamespace = 'pg_toast'::regnamespace
UNION ALL
SELECT 'function ' || p.oid::regprocedure::text FROM pg_proc p
UNION ALL
SELECT 'type ' || t.typnamespace::regnamespace || '.' || t.typname FROM pg_type t
UNION ALL
SELECT 'operator ' || o.oid::regoperator::text FROM pg_operator o
UNION ALL
SELECT 'cast ' || format_type(castsource, NULL) || ' -> ' || format_type(casttarget, NULL) FROM pg_cast
UNION ALL
SELECT 'constraint ' || conname || ' on ' || conrelid::regclass::text FROM pg_constraint
UNION ALL
SELECT 'trigger ' || tgname FROM pg_trigger
UNION ALL
SELECT 'policy ' || polname FROM pg_policy
UNION ALL
SELECT 'extension ' || extname FROM pg_extension
UNION ALL
SELECT 'event trigger ' || evtname FROM pg_event_trigger
UNION ALL
SELECT 'rows pg_depend ' || count(*) FROM pg_depend
UNION ALL
SELECT 'rows pg_description ' || count(*) FROM pg_description
UNION ALL
SELECT 'rows pg_init_privs ' || count(*) FROM pg_init_privs
UNION ALL
SELECT 'rows pg_attrdef ' || count(*) FROM pg_attrdef
UNION ALL
SELECT 'orphaned pg_statistic rows ' || count(*) FROM pg_statistic s
 WHERE NOT EXISTS (SELECT 1 FROM pg_class c WHERE c.oid = s.starelid)
ORDER BY 1"

# The extension's objects, described without OIDs for comparing an
# upgraded install with a fresh one: one line per property, "object |
# property: value", so that a difference names the object and what differs.
describe_sql="
WITH ext AS (SELECT oid, extnamespace FROM pg_extension WHERE extname = 'a2'),
members AS (
	SELECT d.classid, d.objid FROM pg_depend d, ext
	 WHERE d.refclassid = 'pg_extension'::regclass AND d.refobjid = ext.oid AND d.deptype = 'e'),
facts(obj, prop, val) AS (
	SELECT 'extension a2', 'version', extversion FROM pg_extension WHERE extname = 'a2'
	UNION ALL
	SELECT 'extension a2', 'relocatable', extrelocatable::text FROM pg_extension WHERE extname = 'a2'
	UNION ALL
	SELECT 'extension a2', 'member', pg_describe_object(classid, objid, 0) FROM members
	UNION ALL
	SELECT 'extension a2', 'config ' || c::regclass::text, 'where ' || coalesce(w, '')
	  FROM pg_extension e, unnest(e.extconfig, e.extcondition) AS u(c, w) WHERE e.extname = 'a2'
	UNION ALL
	SELECT 'function ' || p.oid::regprocedure::text, f.prop, f.val
	  FROM pg_proc p JOIN members m ON m.classid = 'pg_proc'::regclass AND m.objid = p.oid
	 CROSS JOIN LATERAL (VALUES
		('arguments', pg_get_function_arguments(p.oid)),
		('result', pg_get_function_result(p.oid)),
		('language', (SELECT l.lanname::text FROM pg_language l WHERE l.oid = p.prolang)),
		('volatility', p.provolatile::text),
		('strict', p.proisstrict::text),
		('security definer', p.prosecdef::text),
		('parallel', p.proparallel::text),
		('leakproof', p.proleakproof::text),
		('cost/rows', p.procost || '/' || p.prorows),
		('config', coalesce(p.proconfig::text, '')),
		('source', p.prosrc),
		('binary', coalesce(p.probin, '')),
		('acl', coalesce(p.proacl::text, '')),
		('comment', coalesce(obj_description(p.oid, 'pg_proc'), ''))) AS f(prop, val)
	UNION ALL
	SELECT 'relation ' || c.oid::regclass::text, f.prop, f.val
	  FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
	 CROSS JOIN LATERAL (VALUES
		('kind', c.relkind::text),
		('persistence', c.relpersistence::text),
		('options', coalesce(c.reloptions::text, '')),
		('acl', coalesce(c.relacl::text, '')),
		('row security', c.relrowsecurity || '/' || c.relforcerowsecurity),
		('replica identity', c.relreplident::text),
		('comment', coalesce(obj_description(c.oid, 'pg_class'), ''))) AS f(prop, val)
	UNION ALL
	SELECT 'relation ' || c.oid::regclass::text,
		   'column #' || lpad((row_number() OVER (PARTITION BY c.oid ORDER BY a.attnum))::text, 2, '0'),
		   a.attname || ' ' || format_type(a.atttypid, a.atttypmod) || ' notnull=' || a.attnotnull
		   || ' default=' || coalesce(pg_get_expr(d.adbin, d.adrelid), '') || ' collation=' || a.attcollation::regcollation::text
		   || ' storage=' || a.attstorage::text || ' compression=' || a.attcompression::text
		   || ' statistics=' || coalesce(a.attstattarget, -1) || ' acl=' || coalesce(a.attacl::text, '')
		   || ' comment=' || coalesce(col_description(c.oid, a.attnum), '')
	  FROM pg_class c JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = c.oid
	  JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
	  LEFT JOIN pg_attrdef d ON d.adrelid = c.oid AND d.adnum = a.attnum
	UNION ALL
	SELECT 'relation ' || i.indrelid::regclass::text, 'index ' || i.indexrelid::regclass::text,
		   pg_get_indexdef(i.indexrelid) || ' options=' || coalesce(ic.reloptions::text, '')
		   || ' comment=' || coalesce(obj_description(i.indexrelid, 'pg_class'), '')
	  FROM pg_index i JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = i.indrelid
	  JOIN pg_class ic ON ic.oid = i.indexrelid
	UNION ALL
	SELECT 'relation ' || co.conrelid::regclass::text, 'constraint ' || co.conname, pg_get_constraintdef(co.oid)
	  FROM pg_constraint co JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = co.conrelid
	UNION ALL
	SELECT 'relation ' || t.tgrelid::regclass::text, 'trigger ' || t.tgname, pg_get_triggerdef(t.oid)
	  FROM pg_trigger t JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = t.tgrelid
	 WHERE NOT t.tgisinternal
	UNION ALL
	SELECT 'relation ' || p.polrelid::regclass::text, 'policy ' || p.polname, p.polcmd::text
	  FROM pg_policy p JOIN members m ON m.classid = 'pg_class'::regclass AND m.objid = p.polrelid
	UNION ALL
	-- the privileges pg_dump treats as the extension's own (it dumps only
	-- changes made after CREATE EXTENSION or ALTER EXTENSION UPDATE)
	SELECT 'initial privileges', pg_describe_object(ip.classoid, ip.objoid, ip.objsubid),
		   ip.privtype::text || ' ' || ip.initprivs::text
	  FROM pg_init_privs ip JOIN members m ON m.classid = ip.classoid AND m.objid = ip.objoid
)
SELECT obj || ' | ' || prop || ': ' || val FROM facts ORDER BY obj, prop, val"

# One call of every function; prints the checks it records.
exercise_sql() { # exercise_sql SCHEMA PREFIX
	cat <<EOF
SET a2.now = '2026-06-01 00:00:00+00';
SELECT pg_temp.chk('$2: append', jsonb_path_query_array($1.a2_append('$2:s1', '[{"id":"$2:e1","type":"a"},{"id":"$2:e2","type":"b","lane":"L"}]'), '\$.events[*].index') = '[1, 2]');
SELECT pg_temp.chk('$2: read', jsonb_array_length($1.a2_read('$2:s1')) = 2);
SELECT pg_temp.chk('$2: claim', jsonb_path_query_array($1.a2_claim('$2:s1', 'w', 60000), '\$.events[*].index') = '[1, 2]');
SELECT pg_temp.chk('$2: renew', $1.a2_renew('$2:s1', 'w', '[{"index":1,"attempt":1},{"index":2,"attempt":1}]', 60000) = '{"renewed": [1, 2], "superseded": []}');
SELECT pg_temp.chk('$2: put_snapshots', $1.a2_put_snapshots('$2:s1', 'r', '[{"index":1,"state":"one","pinEventIndexes":[2]}]') IS NOT NULL);
SELECT pg_temp.chk('$2: append under the fence', $1.a2_append('$2:s1', '[{"id":"$2:e3","type":"c","cause":{"index":1,"attempt":1}}]')->'events'->0->>'index' = '3');
SELECT pg_temp.chk('$2: complete', $1.a2_complete('$2:s1', 1, 1, '[{"id":"$2:c1","type":"child"}]')->'events'->0->>'index' = '4');
SELECT pg_temp.chk('$2: fail', $1.a2_fail('$2:s1', 2, 1, 'boom', 1) = '{"outcome": "dead_lettered", "failureCount": 1}');
SELECT pg_temp.chk('$2: read_state', $1.a2_read_state('$2:s1', 'r', 2)->'snapshot' = '{"index": 1, "state": "one"}');
SELECT pg_temp.chk('$2: read_states', jsonb_array_length($1.a2_read_states('[{"sessionId":"$2:s1"},{"sessionId":"$2:none"}]', 'r')) = 2);
SELECT pg_temp.chk('$2: presence_set', $1.a2_presence_set('$2:ns', 'p', '{"a":1,"b":null}', '2026-06-01 00:00:00+00', 1, 60000) IS NOT NULL);
SELECT pg_temp.chk('$2: presence_read', $1.a2_presence_read('$2:ns') = '[{"at": "2026-06-01T00:00:00.000Z", "seen": 1, "field": "a", "value": 1, "expiresAt": "2026-06-01T00:01:00.000Z", "participant": "p"}]');
SELECT pg_temp.chk('$2: the rows are in $1', (SELECT count(*) FROM $1.a2_events WHERE session_id = '$2:s1') = 4);
EOF
}

checks_prelude="
CREATE TEMP TABLE checks (n serial, label text, ok boolean);
CREATE FUNCTION pg_temp.chk(label text, ok boolean) RETURNS void LANGUAGE sql
	AS \$\$ INSERT INTO checks (label, ok) VALUES (label, coalesce(ok, false)) \$\$;
CREATE FUNCTION pg_temp.outcome(sql text) RETURNS text LANGUAGE plpgsql AS \$\$
BEGIN
	EXECUTE sql;
	RETURN 'ok';
EXCEPTION WHEN OTHERS THEN
	RETURN SQLSTATE;
END \$\$;
\\o /dev/null"
checks_report="
\\o
SELECT CASE WHEN ok THEN 'ok - ' ELSE 'not ok - ' END || label FROM checks ORDER BY n;"

# ---------------------------------------------------------------------
# 1. DROP EXTENSION leaves no stray objects
# ---------------------------------------------------------------------
for schema in public a2_own; do
	fresh_db "$db"
	clause=
	if [[ $schema != public ]]; then
		psql_db "$db" -c "CREATE SCHEMA $schema"
		clause="SCHEMA $schema"
	fi
	psql_db "$db" -c "$inventory_sql" >"$work/before"
	psql_db "$db" -c "CREATE EXTENSION a2 $clause"
	psql_db "$db" -c "$inventory_sql" >"$work/installed"
	# use it, so data, TOAST values and statistics exist too
	psql_db "$db" >/dev/null <<EOF
SET a2.now = '2026-06-01 00:00:00+00';
SELECT $schema.a2_append('d:s1', (SELECT jsonb_agg(jsonb_build_object('type', 't', 'payload', repeat('x', 10000))) FROM generate_series(1, 50)));
SELECT $schema.a2_claim('d:s1', 'w', 60000);
SELECT $schema.a2_put_snapshots('d:s1', 'r', '[{"index":1,"state":1,"pinEventIndexes":[2]},{"index":0,"state":0,"pinEventIndexes":[3]}]');
SELECT $schema.a2_presence_set('d:ns', 'p', '{"a":1,"b":null}', '2026-06-01 00:00:00+00', 1, 60000);
ANALYZE $schema.a2_events, $schema.a2_snapshots, $schema.a2_snapshot_history, $schema.a2_snapshot_pins,
		$schema.a2_presence, $schema.a2_presence_tombstones;
EOF
	psql_db "$db" -c "DROP EXTENSION a2"
	psql_db "$db" -c "$inventory_sql" >"$work/after"
	check "schema $schema: CREATE EXTENSION adds objects" \
		bash -c "! cmp -s '$work/before' '$work/installed'"
	if cmp -s "$work/before" "$work/after"; then
		pass "schema $schema: DROP EXTENSION a2 leaves the database as it was before CREATE EXTENSION"
	else
		fail "schema $schema: DROP EXTENSION a2 leaves the database as it was before CREATE EXTENSION"
		diff "$work/before" "$work/after" | sed 's/^/#   /' | head -40
	fi
	check "schema $schema: CREATE EXTENSION a2 again after DROP" psql_db "$db" -c "CREATE EXTENSION a2 $clause"
	check "schema $schema: ... installs the same objects" cmp -s "$work/installed" <(psql_db "$db" -c "$inventory_sql")
done

# ---------------------------------------------------------------------
# 2. Re-creating the extension under a session with cached plans
# ---------------------------------------------------------------------
fresh_db "$db"
psql_db "$db" -c "CREATE EXTENSION a2"
{
	echo "$checks_prelude"
	exercise_sql public first
	echo "DROP EXTENSION a2;"
	echo "CREATE EXTENSION a2;"
	exercise_sql public recreated
	echo "SELECT pg_temp.chk('recreated: the old rows went with the old tables', (SELECT count(*) FROM a2_events WHERE session_id LIKE 'first:%') = 0);"
	# another session drops and re-creates it while this one keeps its plans
	echo "\\! psql -X -q -d $db -c 'DROP EXTENSION a2' -c 'CREATE EXTENSION a2'"
	exercise_sql public other_session
	# drop and create inside one transaction, then call in it
	echo "BEGIN;"
	echo "DROP EXTENSION a2;"
	echo "CREATE EXTENSION a2;"
	exercise_sql public same_xact
	echo "COMMIT;"
	# a DROP that is rolled back: the same tables carry on
	echo "BEGIN; DROP EXTENSION a2; ROLLBACK;"
	echo "SELECT pg_temp.chk('rolled-back drop: appending continues in the surviving table', a2_append('same_xact:s1', '[{\"type\":\"z\"}]')->'events'->0->>'index' = '5');"
	# a DROP, a failed call, then CREATE: the failure must not poison the cache
	echo "DROP EXTENSION a2;"
	echo "SELECT pg_temp.chk('dropped: a2_append no longer exists', pg_temp.outcome(\$\$SELECT a2_append('x', '[]')\$\$) = '42883');"
	echo "CREATE EXTENSION a2;"
	exercise_sql public after_gap
	# re-created in another schema, off search_path
	echo "DROP EXTENSION a2;"
	echo "CREATE SCHEMA moved;"
	echo "CREATE EXTENSION a2 SCHEMA moved;"
	exercise_sql moved moved
	echo "SELECT pg_temp.chk('moved: nothing left in public', to_regclass('public.a2_events') IS NULL);"
	echo "DROP EXTENSION a2;"
	echo "CREATE EXTENSION a2;"
	exercise_sql public back
	echo "$checks_report"
} >"$work/recreate.sql"
if psql_db "$db" -f "$work/recreate.sql" >"$work/recreate.out" 2>"$work/recreate.err"; then
	report_checks "same session" "$work/recreate.out"
else
	sed 's/^/#   /' "$work/recreate.err"
	fail "same session: the script stopped (psql exit status non-zero)"
fi

# ---------------------------------------------------------------------
# 3. CREATE EXTENSION a2 SCHEMA other_schema in a fresh database
# ---------------------------------------------------------------------
fresh_db "$db"
{
	echo "CREATE SCHEMA other_schema;"
	echo "CREATE EXTENSION a2 SCHEMA other_schema;"
	echo "SET search_path = public;"
	echo "$checks_prelude"
	exercise_sql other_schema other
	echo "SELECT pg_temp.chk('other: the tables are in other_schema only', to_regclass('public.a2_events') IS NULL AND to_regclass('other_schema.a2_events') IS NOT NULL);"
	echo "SELECT pg_temp.chk('other: unqualified calls do not resolve off search_path', pg_temp.outcome(\$\$SELECT a2_read('x')\$\$) = '42883');"
	# a user table named like ours earlier on search_path changes nothing
	echo "CREATE TABLE public.a2_events (session_id text, idx bigint);"
	echo "SET search_path = public, other_schema;"
	echo "SELECT pg_temp.chk('other: a decoy public.a2_events is ignored', a2_append('other:s1', '[{\"type\":\"d\"}]')->'events'->0->>'index' = '5' AND (SELECT count(*) FROM public.a2_events) = 0);"
	echo "$checks_report"
} >"$work/schema.sql"
if psql_db "$db" -f "$work/schema.sql" >"$work/schema.out" 2>"$work/schema.err"; then
	report_checks "other schema" "$work/schema.out"
else
	sed 's/^/#   /' "$work/schema.err"
	fail "other schema: the script stopped (psql exit status non-zero)"
fi

# ---------------------------------------------------------------------
# 4. Every upgrade path
# ---------------------------------------------------------------------
extdir=$("$PGBIN/pg_config" --sharedir)/extension
default_version=$(sed -n "s/^default_version *= *'\(.*\)'.*/\1/p" "$A2_ROOT/a2.control")
upgrade_dir=$A2_ROOT/src/sql/upgrade
# The default version's install script is build output: make generates it
# from src/sql/objects/ (DATA_built in the Makefile).
install_script=$A2_ROOT/a2--$default_version.sql
shopt -s nullglob
scripts=("$upgrade_dir"/a2--*--*.sql)
kept=("$upgrade_dir"/a2--*.sql)
shopt -u nullglob
echo "# default version $default_version; ${#scripts[@]} update script(s) in src/sql/upgrade/"

# What is installed is what this tree builds: the generated install script
# and every kept script, byte for byte.
if [[ ! -f $install_script ]]; then
	fail "a2--$default_version.sql has not been generated (run make)"
elif cmp -s "$install_script" "$extdir/a2--$default_version.sql"; then
	pass "the generated a2--$default_version.sql is the installed one"
else
	fail "the generated a2--$default_version.sql is the installed one (run make install)"
fi
for script in "${kept[@]}"; do
	name=$(basename "$script")
	check "$name is installed as kept in src/sql/upgrade/ (else run make install)" cmp -s "$script" "$extdir/$name"
done
check "a2--$default_version.sql refuses to run outside CREATE EXTENSION" \
	grep -q '^\\echo Use "CREATE EXTENSION a2" to load this file. \\quit$' "$install_script"
check "src/sql/upgrade/ keeps no install script of the default version (make generates it)" \
	test ! -e "$upgrade_dir/a2--$default_version.sql"
check "the default version is installable (an install script, or a path from one)" \
	test "$(psql_db postgres -c "SELECT count(*) FROM pg_available_extension_versions WHERE name = 'a2' AND version = '$default_version'")" = 1
check "the installed extension offers the default version" \
	test "$(psql_db postgres -c "SELECT default_version FROM pg_available_extensions WHERE name = 'a2'")" = "$default_version"

# Every version an install can be at, oldest first.  Before 0.4.0 only
# 0.1.0 had an install script: CREATE EXTENSION a2 VERSION '0.2.0' (or
# '0.3.0') runs a2--0.1.0.sql and then the updates, which is how every
# database at those versions was made.
mapfile -t versions < <(psql_db postgres -c "SELECT version FROM pg_available_extension_versions
	WHERE name = 'a2' ORDER BY string_to_array(version, '.')::int[]")
echo "# installable versions: ${versions[*]}"

# upgrade_path FROM TO: an install of FROM with data, updated to TO (with
# ALTER EXTENSION a2 UPDATE, no TO clause, when TO is the default version),
# against a fresh install of TO.
upgrade_path() {
	local from=$1 to=$2 prepared=${3:-} label="upgrade $1 -> $2" update fresh
	[[ -z $prepared ]] || label="$label, prepared online"
	if [[ $to == "$default_version" ]]; then
		update="ALTER EXTENSION a2 UPDATE"
		fresh="CREATE EXTENSION a2"
	else
		update="ALTER EXTENSION a2 UPDATE TO '$to'"
		fresh="CREATE EXTENSION a2 VERSION '$to'"
	fi

	# the old version, with data
	fresh_db "$db"
	if ! psql_db "$db" -c "CREATE EXTENSION a2 VERSION '$from'" 2>"$work/err"; then
		fail "$label: CREATE EXTENSION a2 VERSION '$from'"
		sed 's/^/#   /' "$work/err"
		return
	fi
	psql_db "$db" >/dev/null <<'SQL'
SET a2.now = '2026-06-01 00:00:00+00';
SELECT a2_append('up:s1', '[{"id":"up:e1","type":"a"},{"id":"up:e2","type":"b","lane":"L"},{"id":"up:e3","type":"c","lane":"L"}]');
SELECT a2_claim('up:s1', 'w', 60000);
SELECT a2_put_snapshots('up:s1', 'r', '[{"index":1,"state":"one","pinEventIndexes":[2]}]');
SELECT a2_complete('up:s1', 1, 1, '[{"id":"up:c1","type":"child"}]');
SELECT a2_presence_set('up:ns', 'p', '{"a":1,"b":null}', '2026-06-01 00:00:00+00', 1, 3600000);
SQL
	# a2_cancel needs 0.4.0's columns: over older objects the library
	# refuses it (0A000, hint ALTER EXTENSION a2 UPDATE) before writing.
	# Those objects declare no a2_cancel, so the C function is bound here
	# by hand, in a schema of its own, and dropped again.
	if [[ $(printf '%s\n' "$from" 0.4.0 | sort -V | head -1) != 0.4.0 ]]; then
		local refused
		refused=$(psql -X -q -At -d "$db" 2>&1 <<SQL || true
CREATE SCHEMA up_probe;
CREATE FUNCTION up_probe.cancel(text, bigint[], text) RETURNS jsonb
	AS '\$libdir/a2', 'a2_cancel' LANGUAGE C;
\\set VERBOSITY verbose
SELECT up_probe.cancel('up:s1', NULL, 'probe');
DROP SCHEMA up_probe CASCADE;
SQL
)
		check "$label: a2_cancel over $from objects is refused with 0A000 and a hint to update" \
			grep -q 'ERROR:  0A000: a2_cancel needs the a2 0.4.0 tables' <<<"$refused"
		check "$label: ... the refusal hints ALTER EXTENSION a2 UPDATE" \
			grep -q 'HINT:  Run ALTER EXTENSION a2 UPDATE.' <<<"$refused"
		check "$label: ... and the probe left nothing behind" \
			test "$(psql_db "$db" -c "SELECT count(*) FROM pg_namespace WHERE nspname = 'up_probe'")" = 0
	fi
	# The rows as the old version's columns: an update may add columns
	# (0.3.0 adds a2_events.not_before), which must not change the rows.
	local event_cols rows_sql rows_before rows_after
	event_cols=$(psql_db "$db" -c "SELECT string_agg('e.' || quote_ident(attname), ', ' ORDER BY attnum)
		FROM pg_attribute WHERE attrelid = 'a2_events'::regclass AND attnum > 0 AND NOT attisdropped")
	rows_sql="SELECT md5(string_agg(x::text, '|' ORDER BY x::text)) FROM (
		SELECT ROW($event_cols)::text AS x FROM a2_events e UNION ALL SELECT s::text FROM a2_snapshots s
		UNION ALL SELECT p::text FROM a2_snapshot_pins p UNION ALL SELECT t::text FROM a2_presence_tombstones t) u"
	rows_before=$(psql_db "$db" -c "$rows_sql")
	if [[ -n $prepared ]]; then
		# docs/operations.md, "Upgrading without an outage": the columns
		# and indexes built before the update (twice: it may be run again)
		check "$label: $(basename "$prepared")" psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$prepared" >/dev/null
		check "$label: ... again, harmlessly" psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$prepared" >/dev/null
		# an invalid index (an interrupted CREATE INDEX CONCURRENTLY; here
		# a unique one that met duplicates) stops the update, which would
		# take an index of the same name for built
		psql_db "$db" -c "CREATE UNIQUE INDEX CONCURRENTLY a2_events_interrupted ON a2_events ((true))" >/dev/null 2>&1 || true
		if psql_db "$db" -c "$update" >"$work/err" 2>&1; then
			fail "$label: an invalid index of a2_events stops the update (it went through)"
			return
		fi
		check "$label: an invalid index of a2_events stops the update ($(head -1 "$work/err"))" \
			grep -q 'a2_events has an invalid index: a2_events_interrupted' "$work/err"
		psql_db "$db" -c "DROP INDEX CONCURRENTLY a2_events_interrupted"
	fi
	# durable waits (0.4.0): over older objects a waitFor is refused, 0A000
	if [[ $to == 0.4.0 ]]; then
		check "$label: before the update a waitFor is refused with 0A000, nothing written" \
			test "$({ echo "$checks_prelude"; echo '\o'; echo "SELECT pg_temp.outcome(\$\$SELECT a2_append('up:w', '[{\"type\":\"w\",\"waitFor\":{\"types\":[\"x\"]}}]')\$\$) || ' ' || (SELECT count(*) FROM a2_events WHERE session_id = 'up:w');"; } | psql_db "$db" 2>/dev/null | tail -1)" = "0A000 0"
	fi
	if ! psql_db "$db" -c "$update" 2>"$work/err"; then
		fail "$label: $update"
		sed 's/^/#   /' "$work/err"
		return
	fi
	pass "$label: $update"
	check "$label: ... the extension is at $to" \
		test "$(psql_db "$db" -c "SELECT extversion FROM pg_extension WHERE extname = 'a2'")" = "$to"

	fresh_db "$db2"
	psql_db "$db2" -c "$fresh"
	psql_db "$db2" -c "$describe_sql" >"$work/fresh.txt"
	psql_db "$db" -c "$describe_sql" >"$work/upgraded.txt"
	if cmp -s "$work/fresh.txt" "$work/upgraded.txt"; then
		pass "$label: the upgraded extension matches a fresh install of $to ($(grep -c ' | ' "$work/fresh.txt") properties)"
	else
		fail "$label: the upgraded extension matches a fresh install of $to"
		diff -U1 --label "fresh install of $to ($fresh)" --label "$from updated to $to ($update)" \
			"$work/fresh.txt" "$work/upgraded.txt" | sed 's/^/#   /' | head -120
	fi
	rows_after=$(psql_db "$db" -c "$rows_sql" 2>/dev/null || echo "?")
	check "$label: the rows written by $from are kept" test "$rows_before" = "$rows_after"
	{
		echo "$checks_prelude"
		echo "SET a2.now = '2026-06-01 00:00:10+00';"
		echo "SELECT pg_temp.chk('append continues after the upgrade', a2_append('up:s1', '[{\"type\":\"d\"}]')->'events'->0->>'index' = '5');"
		echo "SELECT pg_temp.chk('claim after the upgrade takes the new events, not the lane-blocked one', jsonb_path_query_array(a2_claim('up:s1', 'w2', 60000, '2026-06-01 00:05:00+00'), '\$.events[*].index') = '[4, 5]');"
		echo "SELECT pg_temp.chk('a lease from before the upgrade completes', a2_complete('up:s1', 2, 1)->>'outcome' = 'completed');"
		echo "SELECT pg_temp.chk('the tombstone from before the upgrade still wins', a2_presence_set('up:ns', 'p', '{\"b\":2}', '2025-01-01 00:00:00+00', 2, 60000) IS NOT NULL);"
		echo "SELECT pg_temp.chk('... so the field stays deleted', jsonb_path_query_array(a2_presence_read('up:ns'), '\$[*].field') = '[\"a\"]');"
		exercise_sql public "$to"
		if [[ $to == 0.4.0 ]]; then
			echo "SELECT pg_temp.chk('a wait after the upgrade: not claimed while waiting', a2_append('up:w', '[{\"type\":\"w\",\"waitFor\":{\"types\":[\"x\"],\"timeoutMs\":60000}}]') IS NOT NULL AND a2_claim('up:w', 'w', 60000)->>'outcome' = 'busy');"
			echo "SELECT pg_temp.chk('... an awaited event ends it', a2_append('up:w', '[{\"type\":\"x\"}]') IS NOT NULL AND a2_claim('up:w', 'w', 60000)->'events'->0->'waitResult' = '{\"index\": 2, \"type\": \"x\"}');"
		fi
		echo "$checks_report"
	} >"$work/upgraded.sql"
	if psql_db "$db" -f "$work/upgraded.sql" >"$work/upgraded.out" 2>"$work/upgraded.err"; then
		report_checks "$label" "$work/upgraded.out"
	else
		sed 's/^/#   /' "$work/upgraded.err"
		fail "$label: the protocol script stopped"
	fi
}

# Each update script on its own: X -> Y.
for script in "${scripts[@]}"; do
	name=$(basename "$script" .sql)
	pair=${name#a2--}
	from=${pair%%--*}
	to=${pair#*--}
	check "upgrade $from -> $to: the script refuses to run outside ALTER EXTENSION" \
		grep -q "^\\\\echo Use \"ALTER EXTENSION a2 UPDATE TO '$to'\" to load this file. \\\\quit\$" "$script"
	upgrade_path "$from" "$to"
done
# Every earlier version to the default one, through whatever path
# PostgreSQL picks (the one-step paths were done above).
for from in "${versions[@]}"; do
	[[ $from == "$default_version" ]] && continue
	check "upgrade $from -> $default_version: pg_extension_update_paths has a path" \
		test "$(psql_db postgres -c "SELECT count(*) FROM pg_extension_update_paths('a2')
			WHERE source = '$from' AND target = '$default_version' AND path IS NOT NULL")" = 1
	[[ -f $upgrade_dir/a2--$from--$default_version.sql ]] && continue
	upgrade_path "$from" "$default_version"
done
# The update from the previous version with its online preparation first
# (a2-prepare--FROM--TO.sql, generated from the update script by make):
# the columns it adds outside the update must end up as a fresh install's
# (same order, defaults, comments), and so must the indexes it builds.
shopt -s nullglob
prepared_scripts=("$extdir"/a2-prepare--*--"$default_version".sql)
shopt -u nullglob
check "one online preparation is installed for $default_version (a2-prepare--FROM--$default_version.sql)" test "${#prepared_scripts[@]}" = 1
for prepared in "${prepared_scripts[@]}"; do
	check "$(basename "$prepared") is installed as this tree generates it (else run make install)" \
		cmp -s "$prepared" "$A2_ROOT/$(basename "$prepared")"
	from=${prepared##*/a2-prepare--}
	from=${from%%--*}
	upgrade_path "$from" "$default_version" "$prepared"
	fresh_db "$db"
	psql_db "$db" -c "CREATE EXTENSION a2 VERSION '$default_version'"
	check "$(basename "$prepared") on a database already at $default_version changes nothing" \
		psql -X -q -v ON_ERROR_STOP=1 -d "$db" -f "$prepared" >/dev/null
	if [[ $from != "${versions[0]}" ]]; then
		fresh_db "$db"
		psql_db "$db" -c "CREATE EXTENSION a2 VERSION '${versions[0]}'"
		check "$(basename "$prepared") refuses a database at ${versions[0]} (55000)" \
			bash -c "psql -X -q -v ON_ERROR_STOP=1 -d '$db' -f '$prepared' 2>&1 | grep -q 'this prepares an update of a2 from $from'"
	fi
done
if [[ ${#scripts[@]} -eq 0 ]]; then
	# the one installable version: ALTER EXTENSION UPDATE is a no-op
	fresh_db "$db"
	psql_db "$db" -c "CREATE EXTENSION a2"
	before=$(psql_db "$db" -c "$describe_sql")
	check "no upgrade scripts: ALTER EXTENSION a2 UPDATE on $default_version succeeds" \
		psql_db "$db" -c "SET client_min_messages = warning" -c "ALTER EXTENSION a2 UPDATE"
	check "no upgrade scripts: ... and changes nothing" test "$before" = "$(psql_db "$db" -c "$describe_sql")"
	check "no upgrade scripts: pg_extension_update_paths lists no path" \
		test "$(psql_db "$db" -c "SELECT count(*) FROM pg_extension_update_paths('a2') WHERE path IS NOT NULL")" = 0
fi

# ---------------------------------------------------------------------
# 5. Appenders granted by hand keep appending (issue 26)
# ---------------------------------------------------------------------
# A 0.2.0 database whose appenders were set up by hand (INSERT on
# a2_events, to PUBLIC and to a named role), updated to the default
# version: each appends to a new session, to a dropped one (after its
# mark), and so does it in a copy made with pg_dump.  Up to 0.3.0 the
# PUBLIC appender got "permission denied for function
# a2_retired_last_index", and after a dump and restore the named one too.
hand_named=a2_upgrade_hand_named
hand_public=a2_upgrade_hand_public
drop_hand_roles() {
	local r
	for r in "$hand_named" "$hand_public"; do
		for d in "$db" "$db2"; do
			psql_db "$d" -c "DROP OWNED BY $r" >/dev/null 2>&1 || true
		done
		psql_db postgres -c "DROP ROLE IF EXISTS $r" >/dev/null 2>&1 || true
	done
}
hand_append() { # hand_append DB ROLE SESSION EXPECTED_INDEX LABEL
	local got
	got=$(psql -X -q -At -d "$1" -U "$2" -c "SELECT a2_append('$3', '[{\"type\":\"h\"}]')->'events'->0->>'index'" 2>"$work/err") || got="error: $(head -1 "$work/err")"
	check "$5 (index $4, got $got)" test "$got" = "$4"
}
if [[ " ${versions[*]} " == *" 0.2.0 "* ]]; then
	drop_hand_roles
	psql_db postgres -c "CREATE ROLE $hand_named LOGIN" -c "CREATE ROLE $hand_public LOGIN" >/dev/null
	fresh_db "$db"
	psql_db "$db" >/dev/null <<SQL
CREATE EXTENSION a2 VERSION '0.2.0';
GRANT SELECT, INSERT, UPDATE ON a2_events TO PUBLIC;
GRANT SELECT, INSERT, UPDATE ON a2_events TO $hand_named;
SET a2.now = '2026-06-01 00:00:00+00';
SELECT a2_append('hand:dropped', '[{"type":"a"},{"type":"b"}]');
SELECT a2_drop_session('hand:dropped', true);
SQL
	check "hand-made grants: 0.2.0 -> $default_version: ALTER EXTENSION a2 UPDATE" psql_db "$db" -c "ALTER EXTENSION a2 UPDATE"
	hand_append "$db" "$hand_public" hand:new-public 1 "hand-made grants: a role appending through INSERT granted to PUBLIC, new session"
	hand_append "$db" "$hand_named" hand:new-named 1 "hand-made grants: a role granted INSERT by name, new session"
	hand_append "$db" "$hand_public" hand:dropped 3 "hand-made grants: PUBLIC's appender continues a dropped session after its mark"
	hand_append "$db" "$hand_named" hand:dropped 4 "hand-made grants: the named appender continues it too"
	# the privilege to append is what counts: taken back, the mark is refused
	psql_db "$db" -c "REVOKE INSERT ON a2_events FROM PUBLIC" >/dev/null
	got=$(psql -X -q -At -d "$db" -U "$hand_public" -c "SELECT a2_retired_last_index('hand:dropped')" 2>&1 || true)
	check "hand-made grants: without INSERT on a2_events, a2_retired_last_index is refused (42501)" \
		grep -q 'permission denied for function a2_retired_last_index' <<<"$got"
	psql_db "$db" -c "GRANT INSERT ON a2_events TO PUBLIC" >/dev/null
	# a copy made with pg_dump: the grants it restores are the table's
	fresh_db "$db2"
	if pg_dump -d "$db" -f "$work/hand.sql" && psql_db "$db2" -f "$work/hand.sql" >/dev/null 2>"$work/err"; then
		hand_append "$db2" "$hand_public" hand:restored-public 1 "hand-made grants: after pg_dump and restore, PUBLIC's appender appends"
		hand_append "$db2" "$hand_named" hand:dropped 5 "hand-made grants: after pg_dump and restore, the named appender continues the dropped session"
	else
		fail "hand-made grants: pg_dump and restore"
		sed 's/^/#   /' "$work/err"
	fi
	drop_hand_roles
fi
# a monitoring role given a2_grant_monitor under 0.3.0 keeps
# a2_notify_status, which 0.4.0 re-creates with more columns
if [[ " ${versions[*]} " == *" 0.3.0 "* && $default_version != 0.3.0 ]]; then
	drop_hand_roles
	psql_db postgres -c "CREATE ROLE $hand_named LOGIN" >/dev/null
	fresh_db "$db"
	psql_db "$db" -c "CREATE EXTENSION a2 VERSION '0.3.0'" -c "SELECT a2_grant_monitor('$hand_named')" >/dev/null
	check "monitor grants: 0.3.0 -> $default_version: ALTER EXTENSION a2 UPDATE" psql_db "$db" -c "ALTER EXTENSION a2 UPDATE"
	got=$(psql -X -q -At -d "$db" -U "$hand_named" -c "SELECT mode IS NOT NULL FROM a2_notify_status()" 2>&1 || true)
	check "monitor grants: a role given a2_grant_monitor under 0.3.0 still calls a2_notify_status ($got)" test "$got" = t
	drop_hand_roles
fi

if [[ $failures -gt 0 ]]; then
	echo "upgrade: $failures check(s) FAILED" >&2
	exit 1
fi
echo "upgrade: passed"
