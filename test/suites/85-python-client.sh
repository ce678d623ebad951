#!/usr/bin/env bash
#
# 85-python-client.sh: the Python client (clients/python) against the test
# cluster, as a fresh machine would run it:
#
#  1. Debian's python3 with python3-psycopg and python3-psycopg-pool
#     (>= 3.1); installed through scripts/deps.sh when missing, with
#     python3-setuptools, python3-wheel and python3-pip for the packaging
#     check.  No PyPI.
#  2. packaging: a wheel built from clients/python/pyproject.toml (pip,
#     offline, no build isolation) in a scratch copy must hold the package
#     and its py.typed marker.
#  3. types: mypy --strict over the package, its tests and the example, when
#     Debian's mypy is installed (reported as skipped otherwise).
#  4. a transaction-mode pgbouncer in front of the cluster
#     (scripts/pgbouncer.sh), stopped at the end.
#  5. python3 -m unittest over clients/python/tests twice: directly, and
#     with A2_PY_VIA_PGBOUNCER=1, where every store under test connects
#     through pgbouncer (the stream's LISTEN stays direct).  The tests create
#     and drop their own databases a2_py_*; test_example.py runs
#     examples/worker.py, which must ship four orders and dead-letter one.
#
# Environment: PGHOST/PGPORT/PGUSER and A2_PGDATA/A2_PGPORT as exported by
# scripts/test.sh; A2_ROOT.  About two minutes.

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
cd "$A2_ROOT"

[[ -n ${PGHOST:-} && -n ${PGPORT:-} ]] ||
	a2_die "python-client: PGHOST and PGPORT must name the test cluster (scripts/test.sh exports them)"

python=/usr/bin/python3
have_psycopg() {
	[[ -x $python ]] && "$python" -c 'import psycopg, psycopg_pool, sys; sys.exit(0 if psycopg.__version__ >= "3.1" and psycopg_pool.__version__ >= "3.1" else 1)' 2>/dev/null
}
if ! have_psycopg || ! "$python" -c 'import setuptools, wheel, pip' 2>/dev/null; then
	a2_log "python-client: installing Debian's python3-psycopg, python3-psycopg-pool (and setuptools, wheel, pip for packaging)"
	A2_EXTRA_PACKAGES="python3-psycopg python3-psycopg-pool python3-setuptools python3-wheel python3-pip" bash scripts/deps.sh
fi
have_psycopg || a2_die "python-client: $python cannot import psycopg and psycopg_pool >= 3.1"
a2_log "python-client: $("$python" --version), psycopg $("$python" -c 'import psycopg; print(psycopg.__version__)'), psycopg_pool $("$python" -c 'import psycopg_pool; print(psycopg_pool.__version__)')"

export PYTHONDONTWRITEBYTECODE=1
scratch=$(mktemp -d)
bouncer_started=0
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ $bouncer_started -eq 1 ]]; then
		bash scripts/pgbouncer.sh stop || a2_warn "python-client: could not stop pgbouncer"
	fi
	rm -rf "$scratch"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

declare -a results=()
failed=0
record() { # record NAME STATUS DETAIL
	results+=("$(printf '%-22s %-7s %s' "$1" "$2" "$3")")
	[[ $2 != FAIL ]] || failed=1
}

# -- packaging -----------------------------------------------------------------
a2_log "python-client: building a wheel from pyproject.toml"
cp -r clients/python "$scratch/src"
rm -rf "$scratch/src/build" "$scratch/src/dist" "$scratch"/src/src/*.egg-info
if "$python" -m pip wheel --quiet --no-deps --no-build-isolation --no-index \
	-w "$scratch/wheel" "$scratch/src" >"$scratch/pip.log" 2>&1; then
	wheel=$(find "$scratch/wheel" -name 'a2_client-*.whl' | head -n 1)
	if [[ -n $wheel ]] && "$python" - "$wheel" <<'EOF'; then
import sys, zipfile
names = set(zipfile.ZipFile(sys.argv[1]).namelist())
need = {"a2_client/__init__.py", "a2_client/py.typed", "a2_client/errors.py", "a2_client/models.py"}
missing = need - names
sys.exit(f"missing from the wheel: {sorted(missing)}" if missing else 0)
EOF
		record packaging PASS "$(basename "$wheel")"
	else
		record packaging FAIL "the wheel lacks files (see above)"
	fi
else
	cat "$scratch/pip.log" >&2
	record packaging FAIL "pip wheel failed"
fi

# -- types -----------------------------------------------------------------------
if "$python" -m mypy --version >/dev/null 2>&1; then
	a2_log "python-client: mypy --strict"
	if (cd clients/python && "$python" -m mypy --cache-dir "$scratch/mypy" --strict); then
		record "mypy --strict" PASS "src, tests, examples"
	else
		record "mypy --strict" FAIL "type errors (above)"
	fi
else
	record "mypy --strict" SKIP "Debian's mypy is not installed"
fi

# -- the tests, direct and through pgbouncer ---------------------------------------
[[ -x scripts/pgbouncer.sh ]] || a2_die "python-client: scripts/pgbouncer.sh is missing"
bouncer_started=1
bash scripts/pgbouncer.sh start
eval "$(bash scripts/pgbouncer.sh env)"
export A2_PGBOUNCER_URL A2_PY_REQUIRE_PGBOUNCER=1

run_tests() { # run_tests NAME [ENV=VALUE...]
	local name=$1 log="$scratch/$1.log" summary
	shift
	a2_log "python-client: python3 -m unittest ($name)"
	local rc=0
	(cd clients/python && env "$@" timeout 900 "$python" -W error::ResourceWarning -m unittest discover \
		-s tests -t . -v) >"$log" 2>&1 || rc=$?
	grep -E ' \.\.\. (ok|FAIL|ERROR|skipped)' "$log" | sed 's/^/    /' || true
	summary="$(grep -E '^Ran [0-9]+ tests' "$log" | tail -n 1); $(tail -n 1 "$log")"
	if [[ $rc -eq 0 ]] && grep -qE '^OK' "$log"; then
		record "unittest $name" PASS "$summary"
	else
		sed -n '/^=\{20,\}/,$p' "$log" >&2
		record "unittest $name" FAIL "$summary (exit $rc)"
	fi
}
run_tests direct A2_PY_VIA_PGBOUNCER=0
run_tests pgbouncer A2_PY_VIA_PGBOUNCER=1

printf '\n==> python-client summary\n'
printf '    %s\n' "${results[@]}"
if [[ $failed -ne 0 ]]; then
	a2_warn "python-client: FAILED"
	exit 1
fi
a2_log "python-client: passed"
