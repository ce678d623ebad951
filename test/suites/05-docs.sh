#!/usr/bin/env bash
#
# 05-docs.sh: docs/ agrees with the code (test/docs/check.py).
#
#  - functions: every function of the extension (pg_proc, through
#    pg_depend) has a signature block in docs/functions.md equal to what
#    PostgreSQL has (argument names, types, defaults, result), and no block
#    names a function that does not exist;
#  - errors: the table "SQLSTATEs a2 raises" in docs/errors.md lists exactly
#    the SQLSTATEs of every errcode() in src/ and every ERRCODE in
#    src/sql/objects/*.sql (the current definition of every SQL object);
#  - snippets: every code block of docs/clients.md is marked with the
#    program it comes from and is a verbatim excerpt of it (the programs
#    are what test/suites/86-cookbook.sh runs);
#  - links: relative links and #anchors in README.md, docs/*.md and
#    test/README.md resolve;
#  - nothing names a place outside the repository as the contract;
#  - tests: test/suites/SUITES lists exactly test/suites/*.sh, the check
#    that scripts/test.sh makes of it (test/lib/suites.sh) fails on a
#    suite the list leaves out, and test/README.md describes every suite.
#
# Uses a fresh database a2_docs on the test cluster (PGHOST/PGPORT from
# scripts/test.sh) and /usr/bin/python3.  Takes a second.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
a2_find_pg_config
cd "$A2_ROOT"

db=a2_docs
work=$(mktemp -d /tmp/a2-docs.XXXXXX)
trap 'rm -rf -- "$work"' EXIT

dropdb --if-exists --force "$db"
createdb "$db"
psql -X -q -v ON_ERROR_STOP=1 -d "$db" -c 'CREATE EXTENSION a2'
psql -X -At -v ON_ERROR_STOP=1 -d "$db" >"$work/procs" <<'SQL'
SELECT p.proname, pg_catalog.pg_get_function_arguments(p.oid), pg_catalog.pg_get_function_result(p.oid)
  FROM pg_catalog.pg_proc p
  JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
  JOIN pg_catalog.pg_extension e ON e.oid = d.refobjid AND e.extname = 'a2'
 ORDER BY 1, 2;
SQL
dropdb --if-exists --force "$db"

rc=0
check=(/usr/bin/python3 test/docs/check.py)
"${check[@]}" functions docs/functions.md "$work/procs" || rc=1
"${check[@]}" errors docs/errors.md "$("$PG_CONFIG" --includedir-server)/utils/errcodes.h" || rc=1
"${check[@]}" snippets docs/clients.md || rc=1
"${check[@]}" links README.md docs/*.md clients/node/README.md examples/clients/README.md test/README.md || rc=1

# The contract lives in this repository.
if grep -n -E 'SPEC\.md|shared folder' README.md docs/*.md; then
	a2_warn "docs: README.md or docs/ points outside the repository for the contract"
	rc=1
fi

# The tests' layout: test/suites/SUITES and test/suites/*.sh agree, and
# test/README.md describes every listed suite.  Then the check itself, on a
# scratch directory: a suite left out of the list fails it, and a listed
# suite without its run bit is listed all the same.
# shellcheck source=test/lib/suites.sh
. test/lib/suites.sh
listed=$(a2_suites test/suites) || rc=1
for name in $listed; do
	if ! grep -qF "$name.sh" test/README.md; then
		a2_warn "docs: test/README.md does not describe the suite test/suites/$name.sh"
		rc=1
	fi
done
a2_log "docs: $(wc -w <<<"$listed") suites listed in test/suites/SUITES"
mkdir "$work/suites"
printf '# a fixture\nlisted\n' >"$work/suites/SUITES"
printf 'exit 0\n' >"$work/suites/listed.sh"
printf 'exit 0\n' >"$work/suites/unlisted.sh"
chmod 0644 "$work/suites/listed.sh"
if a2_suites "$work/suites" >"$work/suites.out" 2>"$work/suites.err" ||
	! grep -q 'unlisted.sh is not listed' "$work/suites.err"; then
	a2_warn "docs: test/lib/suites.sh accepted a suite that test/suites/SUITES leaves out"
	rc=1
fi
printf 'unlisted\n' >>"$work/suites/SUITES"
if ! a2_suites "$work/suites" >"$work/suites.out" ||
	[[ $(tr '\n' ' ' <"$work/suites.out") != 'listed unlisted ' ]]; then
	a2_warn "docs: test/lib/suites.sh did not list exactly the two suites of its fixture: $(cat "$work/suites.out")"
	rc=1
fi

if [[ $rc -ne 0 ]]; then
	a2_die "docs: docs/ or test/README.md disagrees with the code (see the lines above)"
fi
a2_log "docs: passed"
