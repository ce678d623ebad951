#!/usr/bin/env bash
#
# 85-python-client.sh: the Python client (clients/python) against the test
# cluster, as a fresh machine would run it:
#
#  1. Debian's python3 with python3-psycopg and python3-psycopg-pool
#     (>= 3.1); installed through scripts/deps.sh when missing, with
#     python3-setuptools, python3-wheel, python3-pip, python3-build and
#     python3-venv for the packaging check.  No PyPI.
#  2. packaging: a wheel and an sdist built from a scratch copy of
#     clients/python (python3 -m build --no-isolation); the sdist must hold
#     the package, py.typed, the README and examples/worker.py, the wheel
#     the package and py.typed, its metadata the psycopg and psycopg-pool
#     requirements and the a2 versions the package says it serves
#     (a2_client.A2_VERSIONS).  The wheel is installed (--no-index
#     --no-deps) into a virtualenv made with --system-site-packages, so
#     psycopg comes from Debian, and examples/worker.py, taken from the
#     sdist and run from a directory outside any source tree with that
#     virtualenv's python -I, must import a2_client from the virtualenv and
#     ship four orders and dead-letter one in a fresh database a2_py_pkg.
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
have_venv() { # ensurepip is Debian's python3-venv
	[[ $(dpkg-query -W -f='${Status}' python3-venv 2>/dev/null || true) == *" ok installed" ]]
}
if ! have_psycopg || ! have_venv || ! "$python" -c 'import setuptools, wheel, pip, build' 2>/dev/null; then
	a2_log "python-client: installing Debian's python3-psycopg, python3-psycopg-pool (and setuptools, wheel, pip, build, venv for packaging)"
	A2_EXTRA_PACKAGES="python3-psycopg python3-psycopg-pool python3-setuptools python3-wheel python3-pip python3-build python3-venv" \
		bash scripts/deps.sh
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

# -- packaging: a wheel and an sdist, installed, the example run from them ------
pkg="$scratch/pkg"
pkg_db=a2_py_pkg
pkg_check() { # the steps below; the first failure is recorded and ends the check
	a2_log "python-client: building a wheel and an sdist (python3 -m build --no-isolation)"
	mkdir -p "$pkg"
	cp -r clients/python "$pkg/src"
	rm -rf "$pkg/src/build" "$pkg/src/dist" "$pkg"/src/src/*.egg-info
	find "$pkg/src" -name __pycache__ -prune -exec rm -rf {} +
	if ! "$python" -m build --no-isolation --outdir "$pkg/dist" "$pkg/src" >"$pkg/build.log" 2>&1; then
		cat "$pkg/build.log" >&2
		record packaging FAIL "python3 -m build failed"
		return
	fi
	local wheel sdist
	wheel=$(find "$pkg/dist" -name 'a2_client-*-py3-none-any.whl' | head -n 1)
	sdist=$(find "$pkg/dist" -name 'a2*client-*.tar.gz' | head -n 1)
	if [[ -z $wheel || -z $sdist ]]; then
		record packaging FAIL "no wheel or no sdist in $pkg/dist"
		return
	fi
	# What each artifact holds, and what the metadata says.
	if ! "$python" - "$wheel" "$sdist" "$pkg/src/src/a2_client/_versions.py" <<'EOF'; then
import email, re, sys, tarfile, zipfile
wheel, sdist, versions_py = sys.argv[1:]
served = re.search(r'^A2_VERSIONS = "([^"]+)"$', open(versions_py).read(), re.M)
if served is None:
    sys.exit("no A2_VERSIONS in _versions.py")
module = ["__init__.py", "_pool.py", "_store.py", "_astore.py", "_versions.py", "errors.py", "models.py", "py.typed"]
problems = []
w = zipfile.ZipFile(wheel)
names = set(w.namelist())
problems += [f"wheel lacks a2_client/{m}" for m in module if f"a2_client/{m}" not in names]
meta_name = next((n for n in names if n.endswith(".dist-info/METADATA")), None)
if meta_name is None:
    problems.append("wheel has no METADATA")
else:
    meta = email.message_from_bytes(w.read(meta_name))
    requires = [re.sub(r"[\s()]", "", r) for r in meta.get_all("Requires-Dist") or []]
    for need in ("psycopg>=3.1", "psycopg-pool>=3.1"):
        if need not in requires:
            problems.append(f"wheel metadata lacks Requires-Dist {need} (has {requires})")
    if f'`a2_client.A2_VERSIONS` is `"{served.group(1)}"`' not in str(meta.get_payload()):
        problems.append(f"wheel metadata (its README) does not state A2_VERSIONS {served.group(1)}")
t = tarfile.open(sdist)
snames = set(t.getnames())
top = sorted(snames)[0].split("/")[0]
need = [f"src/a2_client/{m}" for m in module] + ["README.md", "pyproject.toml", "PKG-INFO", "examples/worker.py"]
problems += [f"sdist lacks {n}" for n in need if f"{top}/{n}" not in snames]
print("\n".join(problems), file=sys.stderr)
sys.exit(1 if problems else 0)
EOF
		record packaging FAIL "the wheel or the sdist lacks something (above)"
		return
	fi
	# A virtualenv over Debian's site packages; nothing but the wheel installed.
	a2_log "python-client: installing the wheel into a virtualenv (--system-site-packages, --no-index --no-deps)"
	local venv="$pkg/venv" origin rc=0
	if ! "$python" -m venv --system-site-packages "$venv" >"$pkg/venv.log" 2>&1 ||
		! "$venv/bin/python" -m pip install --quiet --no-index --no-deps "$wheel" >>"$pkg/venv.log" 2>&1; then
		cat "$pkg/venv.log" >&2
		record packaging FAIL "virtualenv or pip install failed"
		return
	fi
	# pip check also reports Debian's own packages; only a2-client's lines count.
	if "$venv/bin/python" -m pip check 2>&1 | grep -i '^a2-client' >&2; then
		record packaging FAIL "Debian's packages do not meet a2-client's requirements (above)"
		return
	fi
	# The example, taken from the sdist, run outside any source tree.
	mkdir -p "$pkg/sdist" "$pkg/run/example"
	tar -xzf "$sdist" -C "$pkg/sdist"
	cp "$pkg"/sdist/*/examples/worker.py "$pkg/run/example/worker.py"
	psql -X -q -v ON_ERROR_STOP=1 -d postgres -c "DROP DATABASE IF EXISTS $pkg_db WITH (FORCE)" -c "CREATE DATABASE $pkg_db"
	psql -X -q -v ON_ERROR_STOP=1 -d "$pkg_db" -c 'CREATE EXTENSION a2'
	a2_log "python-client: examples/worker.py from the sdist, on the installed wheel"
	(cd "$pkg/run" && env -u PYTHONPATH A2_DATABASE_URL="dbname=$pkg_db" timeout 120 "$venv/bin/python" -I - \
		>"$pkg/worker.out" 2>"$pkg/worker.err" <<'EOF') || rc=$?
import runpy, sys
sys.argv = ["example/worker.py"]
try:
    runpy.run_path("example/worker.py", run_name="__main__")
finally:
    module = sys.modules.get("a2_client")
    print("a2_client from", getattr(module, "__file__", None), file=sys.stderr)
EOF
	psql -X -q -d postgres -c "DROP DATABASE IF EXISTS $pkg_db WITH (FORCE)" || true
	sed 's/^/    worker: /' "$pkg/worker.out"
	origin=$(sed -n 's/^a2_client from //p' "$pkg/worker.err" | tail -n 1)
	if [[ $rc -ne 0 ]]; then
		cat "$pkg/worker.err" >&2
		record packaging FAIL "examples/worker.py exited $rc"
	elif [[ $origin != "$venv"/lib/python3*/site-packages/a2_client/__init__.py ]]; then
		record packaging FAIL "the example imported a2_client from $origin, not the virtualenv"
	elif ! grep -qx 'shipments of order-42: 2 tea, 6 cups, 1 sugar, 4 spoons' "$pkg/worker.out" ||
		! grep -q '^#3 order.placed: dead_lettered (3/3)' "$pkg/worker.out" ||
		[[ $(grep -c ': completed$' "$pkg/worker.out") -ne 4 ]]; then
		record packaging FAIL "examples/worker.py did not ship four orders and dead-letter one (above)"
	else
		record packaging PASS "$(basename "$wheel"), $(basename "$sdist"): the example ran on the installed wheel"
	fi
}
pkg_check

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
