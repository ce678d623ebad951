#!/usr/bin/env bash
#
# 88-packages.sh: a2 installed the way PostgreSQL users install extensions,
# each artifact built from this tree, installed into a clean place, and run
# from there (docs/operations.md, "Packages").
#
#   pgxn            `make dist` makes dist/a2-X.Y.Z.zip.  The zip against
#                   META.json: one top directory a2-X.Y.Z/; META.json in it
#                   is the tree's, its name, version and provides match
#                   a2.control; the files it names are in the zip; its
#                   PostgreSQL prereq admits every major a2 supports and no
#                   other; the zip holds the tracked files but those the
#                   Makefile's DIST_EXCLUDE leaves out, and no build output.
#                   Then Debian's pgxnclient (`pgxn install ./a2-X.Y.Z.zip`)
#                   unpacks it into a temporary directory and builds and
#                   installs from there into a private copy of PostgreSQL
#                   (PG_CONFIG's, without a2), which then runs a cluster with
#                   a2 preloaded: CREATE EXTENSION a2 and the protocol smoke
#                   test debian/tests/smoke.sql.
#   npm             `npm pack` of clients/node (a copy of its tracked files,
#                   after npm ci), the tarball's files checked, installed
#                   into an empty project with its dependency pg from the
#                   npm registry; examples/node-worker.mjs, importing
#                   'a2-client' from there, runs against the pgxn part's
#                   cluster and must ship four orders and dead-letter one.
#   debian build    scripts/package.sh build: postgresql-NN-a2 for each
#                   major of A2_PACKAGE_MAJORS (default "15 17 18"; 15 on
#                   this machine, 17 and 18 in debootstrap roots).
#   lintian         lintian on every .changes (source and binary packages):
#                   no error or warning that debian/ does not override with
#                   its reason; info and pedantic findings are printed.
#   debian files    each package holds exactly the files the pgxn part's
#                   `make install` installed (with NN for 15), plus its
#                   documentation under /usr/share/doc/postgresql-NN-a2.
#   debian install  scripts/package.sh test: each .deb installed into a
#                   throwaway overlay of a clean root of its Debian suite,
#                   its autopkgtest debian/tests/installed (a2 preloaded,
#                   CREATE EXTENSION a2, the smoke test), purged, nothing
#                   left; what dpkg installed is what the .deb lists.
#
# Each part is reported, and every part runs even when an earlier one
# failed (but those that need its output).  Needs root, or sudo, for the
# Debian parts (debootstrap, chroot, mount).  A fresh machine first makes
# the roots (scripts/package.sh; cached in /var/cache/a2-roots): five of
# them, 2.5 to 10 minutes each depending on the machine's load.  With the
# roots made, on the shared 2-CPU machine: 5m38s for 15, 17 and 18 (pgxn
# 28s, npm 18s, the builds 33s, 62s and 71s, lintian 20s a major, the
# installs 26s, 28s and 43s); about 2 minutes with A2_PACKAGE_MAJORS=15.
#
# Environment: A2_ROOT, PG_CONFIG (exported by scripts/test.sh);
# A2_PACKAGE_MAJORS; A2_ROOTS_DIR, A2_APT_MIRROR (scripts/package.sh).

set -euo pipefail

A2_ROOT=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$A2_ROOT/scripts/lib.sh"
cd "$A2_ROOT"

self=$A2_ROOT/test/suites/88-packages.sh
majors=${A2_PACKAGE_MAJORS:-15 17 18}
version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" a2.control)

# --- the parts (each runs as `88-packages.sh part NAME WORKDIR`) -------------

# The private PostgreSQL the pgxn part installs into and runs.
pg_env() {
	local work=$1
	PG_PRIVATE=$work/pg/usr/lib/postgresql/$A2_PG_MAJOR
	PG_PRIVATE_CONFIG=$PG_PRIVATE/bin/pg_config
	PG_DATA=$work/cluster/data
	PG_SOCK=$work/cluster/sock
}

# psql on the private cluster (its socket only; whatever PGHOST/PGPORT say).
ppsql() {
	"$PG_PRIVATE/bin/psql" -X -h "$PG_SOCK" -p 5432 -U postgres "$@"
}

part_pgxn() {
	local work=$1 zip prefix before after out
	a2_find_pg_config
	pg_env "$work"

	a2_log "pgxn: make dist"
	rm -f "dist/a2-$version.zip"
	make --no-print-directory -s PG_CONFIG="$PG_CONFIG" dist
	zip=$A2_ROOT/dist/a2-$version.zip
	[[ -f $zip ]] || a2_die "pgxn: make dist made no dist/a2-$version.zip"

	a2_log "pgxn: the zip against META.json"
	local exclude
	exclude=$(sed -n 's/^DIST_EXCLUDE = //p' Makefile)
	[[ -n $exclude ]] || a2_die "pgxn: no DIST_EXCLUDE in the Makefile"
	git ls-files -z >"$work/tracked"
	python3 - "$zip" "$version" "$A2_PG_MAJORS" "$exclude" "$work/tracked" <<'EOF'
import json, re, sys, zipfile

zip_path, version, majors, exclude = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
tracked = {f for f in open(sys.argv[5]).read().split("\0") if f}
top = f"a2-{version}/"
bad = []
z = zipfile.ZipFile(zip_path)
names = z.namelist()
files = {n[len(top):] for n in names if n.startswith(top) and not n.endswith("/")}
if not all(n.startswith(top) for n in names):
    bad.append(f"entries outside {top}: {[n for n in names if not n.startswith(top)][:5]}")

if "META.json" not in files:
    sys.exit(f"pgxn: the zip has no {top}META.json")
meta_bytes = z.read(top + "META.json")
if meta_bytes != open("META.json", "rb").read():
    bad.append("META.json in the zip differs from the tree's")
meta = json.loads(meta_bytes)

for key in ("name", "version", "abstract", "maintainer", "license", "provides", "meta-spec"):
    if key not in meta:
        bad.append(f"META.json lacks the required key {key!r}")
if meta.get("name") != "a2":
    bad.append(f"name is {meta.get('name')!r}, not 'a2'")
if meta.get("version") != version:
    bad.append(f"version is {meta.get('version')!r}, a2.control says {version}")
if not re.fullmatch(r"\d+\.\d+\.\d+", str(meta.get("version"))):
    bad.append("version is not a semantic version")
if meta.get("meta-spec", {}).get("version") != "1.0.0":
    bad.append("meta-spec version is not 1.0.0")
if meta.get("release_status", "stable") not in ("stable", "testing", "unstable"):
    bad.append(f"release_status {meta.get('release_status')!r}")

provides = meta.get("provides", {})
if set(provides) != {"a2"}:
    bad.append(f"provides {sorted(provides)}, not just a2")
for ext, p in provides.items():
    if p.get("version") != version:
        bad.append(f"provides.{ext}.version is {p.get('version')!r}, a2.control says {version}")
    for key in ("file", "docfile"):
        if key in p and p[key] not in files:
            bad.append(f"provides.{ext}.{key} {p[key]!r} is not in the zip")
    if "file" not in p:
        bad.append(f"provides.{ext} names no file")

# prereqs: "PostgreSQL": ">= 15.0.0, < 19.0.0" must admit exactly the supported majors
req = meta.get("prereqs", {}).get("runtime", {}).get("requires", {}).get("PostgreSQL")
def key(v):
    return tuple(int(x) for x in v.split("."))
def admits(rng, v):
    for c in rng.split(","):
        m = re.fullmatch(r"\s*(>=|<=|>|<|==|!=)?\s*(\d+\.\d+\.\d+)\s*", c)
        if not m:
            raise ValueError(c)
        op, want = m.group(1) or ">=", key(m.group(2))
        have = key(v)
        if not {">=": have >= want, "<=": have <= want, ">": have > want, "<": have < want,
                "==": have == want, "!=": have != want}[op]:
            return False
    return True
if req is None:
    bad.append("prereqs.runtime.requires.PostgreSQL is missing")
else:
    try:
        lo, hi = min(int(m) for m in majors), max(int(m) for m in majors)
        for m in range(lo, hi + 1):
            for minor in ("0.0", "99.0"):
                if not admits(req, f"{m}.{minor}"):
                    bad.append(f"the PostgreSQL prereq {req!r} refuses {m}.{minor}, which a2 supports")
        for m in (lo - 1, hi + 1):
            if admits(req, f"{m}.0.0"):
                bad.append(f"the PostgreSQL prereq {req!r} admits {m}, which a2 does not support")
    except ValueError as e:
        bad.append(f"cannot read the PostgreSQL prereq {req!r}: {e}")

# the files: the tracked ones but those left out, and no build output
want = {f for f in tracked if not any(f == x or f.startswith(x + "/") for x in exclude)}
if files - want:
    bad.append(f"in the zip but not tracked (or excluded): {sorted(files - want)[:10]}")
if want - files:
    bad.append(f"tracked but not in the zip: {sorted(want - files)[:10]}")
for f in files:
    if re.search(r"(\.o|\.so|\.bc)$|(^|/)node_modules/|^debian/|^clients/", f):
        bad.append(f"build output or excluded file in the zip: {f}")
for f in ("a2.control", "Makefile", "README.md"):
    if f not in files:
        bad.append(f"{f} is not in the zip")

if bad:
    print("\n".join("pgxn: " + b for b in bad), file=sys.stderr)
    sys.exit(1)
print(f"pgxn: {zip_path}: {len(files)} files, META.json agrees (version {version}, "
      f"provides a2 from {provides['a2']['file']}, PostgreSQL {req})")
EOF

	a2_log "pgxn: a private PostgreSQL $A2_PG_MAJOR in $work/pg (PG_CONFIG's, without a2)"
	prefix=$(dirname "$("$PG_CONFIG" --bindir)")
	prefix=${prefix%/lib/postgresql/"$A2_PG_MAJOR"}
	[[ -d $prefix/lib/postgresql/$A2_PG_MAJOR && -d $prefix/share/postgresql/$A2_PG_MAJOR ]] ||
		a2_die "pgxn: $PG_CONFIG is not in a Debian layout (PREFIX/lib/postgresql/$A2_PG_MAJOR/bin)"
	mkdir -p "$work/pg/usr/lib/postgresql" "$work/pg/usr/share/postgresql" "$work/pg/usr/include"
	cp -a "$prefix/lib/postgresql/$A2_PG_MAJOR" "$work/pg/usr/lib/postgresql/"
	cp -a "$prefix/share/postgresql/$A2_PG_MAJOR" "$work/pg/usr/share/postgresql/"
	cp -a "$("$PG_CONFIG" --includedir)" "$work/pg/usr/include/"
	rm -rf "$PG_PRIVATE"/lib/a2.so "$PG_PRIVATE"/lib/bitcode/a2 "$PG_PRIVATE"/lib/bitcode/a2.index.bc \
		"$work/pg/usr/share/postgresql/$A2_PG_MAJOR"/extension/a2.control \
		"$work/pg/usr/share/postgresql/$A2_PG_MAJOR"/extension/a2--*.sql \
		"$work/pg/usr/share/postgresql/$A2_PG_MAJOR"/extension/a2-prepare--*.sql
	[[ $("$PG_PRIVATE_CONFIG" --pkglibdir) == "$PG_PRIVATE/lib" ]] ||
		a2_die "pgxn: the copy's pg_config does not point into the copy"
	# pgxnclient checks that pg_config's libdir is writable (it would use
	# sudo otherwise); in the copy that directory is empty and unused.
	mkdir -p "$("$PG_PRIVATE_CONFIG" --libdir)"
	before=$work/pg-before.txt
	after=$work/pg-after.txt
	(cd "$work/pg" && find . -mindepth 1 ! -type d -printf '/%P\n' | LC_ALL=C sort) >"$before"

	a2_log "pgxn: pgxn install ./$(basename "$zip") (pgxnclient $(pgxn --version 2>/dev/null | awk '{print $NF}'))"
	(cd "$A2_ROOT/dist" && MAKEFLAGS=-j"$(nproc)" pgxn install --pg_config "$PG_PRIVATE_CONFIG" \
		"./$(basename "$zip")") >"$work/pgxn-install.log" 2>&1 || {
		tail -n 40 "$work/pgxn-install.log" >&2
		a2_die "pgxn: pgxn install failed (log above)"
	}
	(cd "$work/pg" && find . -mindepth 1 ! -type d -printf '/%P\n' | LC_ALL=C sort) >"$after"
	# What make install added, with the copy's prefix made /usr again: the
	# list the Debian packages are compared with.
	LC_ALL=C comm -13 "$before" "$after" >"$work/make-install.txt"
	if LC_ALL=C comm -23 "$before" "$after" | grep -q .; then
		a2_die "pgxn: make install removed files: $(LC_ALL=C comm -23 "$before" "$after" | head -5)"
	fi
	if ! grep -qx "/usr/lib/postgresql/$A2_PG_MAJOR/lib/a2.so" "$work/make-install.txt" ||
		! grep -qx "/usr/share/postgresql/$A2_PG_MAJOR/extension/a2.control" "$work/make-install.txt"; then
		a2_die "pgxn: make install put no a2.so or a2.control into the copy: $(cat "$work/make-install.txt")"
	fi
	a2_log "pgxn: make install installed $(wc -l <"$work/make-install.txt") files"

	a2_log "pgxn: a cluster of the copy with a2 preloaded"
	mkdir -p "$work/cluster"
	chown postgres: "$work/cluster" 2>/dev/null || true
	as_postgres mkdir -p "$PG_DATA" "$PG_SOCK"
	as_postgres "$PG_PRIVATE/bin/initdb" -D "$PG_DATA" -U postgres -A trust --no-sync >"$work/initdb.log" 2>&1 || {
		cat "$work/initdb.log" >&2
		a2_die "pgxn: initdb failed"
	}
	as_postgres "$PG_PRIVATE/bin/pg_ctl" -D "$PG_DATA" -l "$work/cluster/log" -w -t 60 \
		-o "-c listen_addresses='' -k $PG_SOCK -p 5432 -c shared_preload_libraries=a2 -c fsync=off" start >/dev/null || {
		tail -n 30 "$work/cluster/log" >&2
		a2_die "pgxn: the cluster did not start"
	}
	ppsql -q -d postgres -c 'CREATE DATABASE a2_smoke'
	out=$(ppsql -d a2_smoke -v ON_ERROR_STOP=1 \
		-f debian/tests/smoke.sql) || a2_die "pgxn: the smoke test failed on the installed zip"
	printf '%s\n' "$out"
	grep -qx " a2 $version: smoke test passed" <<<"$out" ||
		a2_die "pgxn: the smoke test did not report a2 $version"
	ppsql -q -d postgres -c 'DROP DATABASE a2_smoke'
}

part_npm() {
	local work=$1 src app tgz out url pkgdir resolved
	a2_find_pg_config
	pg_env "$work"
	[[ -S $PG_SOCK/.s.PGSQL.5432 ]] || a2_die "npm: the pgxn part's cluster is not running"
	if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
		a2_log "npm: node or npm missing; installing Debian's nodejs and npm"
		A2_EXTRA_PACKAGES="nodejs npm" bash scripts/deps.sh
	fi
	a2_log "npm: node $(node --version), npm $(npm --version)"

	src=$work/node-src
	mkdir -p "$src"
	git ls-files -z clients/node | (cd "$A2_ROOT" && tar --null -T - -cf -) | tar -C "$src" -xf -
	a2_log "npm: npm ci and npm pack in a copy of clients/node"
	(cd "$src/clients/node" && npm ci --no-audit --no-fund --loglevel=error >/dev/null &&
		npm pack --pack-destination "$work" --loglevel=error >"$work/npm-pack.txt")
	tgz=$work/$(tail -n 1 "$work/npm-pack.txt")
	[[ -f $tgz ]] || a2_die "npm: npm pack made no tarball ($(cat "$work/npm-pack.txt"))"
	tar -tzf "$tgz" | LC_ALL=C sort >"$work/npm-files.txt"
	for f in package/package.json package/README.md package/dist/index.js package/dist/index.d.ts; do
		grep -qx "$f" "$work/npm-files.txt" || a2_die "npm: $(basename "$tgz") lacks $f"
	done
	if grep -E '^package/(build|test|node_modules)/' "$work/npm-files.txt"; then
		a2_die "npm: $(basename "$tgz") holds tests or build output (above)"
	fi
	tar -xzOf "$tgz" package/package.json | python3 -c '
import json, sys
p = json.load(sys.stdin)
r = p.get("a2", {}).get("extension")
if not r:
    sys.exit("npm: the packed package.json does not say which a2 versions it serves (\"a2\": {\"extension\": ...})")
print("npm: %s %s serves a2 %s" % (p["name"], p["version"], r))'

	a2_log "npm: npm install $(basename "$tgz") into an empty project"
	app=$work/app
	mkdir -p "$app"
	printf '{ "name": "a2-package-check", "private": true, "type": "module" }\n' >"$app/package.json"
	(cd "$app" && npm install --no-audit --no-fund --loglevel=error "$tgz" >/dev/null)
	pkgdir=$app/node_modules/a2-client
	[[ -d $pkgdir && ! -L $pkgdir ]] || a2_die "npm: a2-client is not installed in the project (or is a link)"
	[[ -f $app/node_modules/pg/package.json ]] || a2_die "npm: its peer dependency pg was not installed"
	a2_log "npm: installed a2-client $(node -p 'require(process.argv[1]).version' "$pkgdir/package.json") with pg $(node -p 'require(process.argv[1]).version' "$app/node_modules/pg/package.json")"

	# The example, importing the installed package instead of the tree's build.
	sed "s|from '../clients/node/dist/index.js'|from 'a2-client'|" examples/node-worker.mjs >"$app/worker.mjs"
	grep -q "from 'a2-client'" "$app/worker.mjs" ||
		a2_die "npm: examples/node-worker.mjs no longer imports ../clients/node/dist/index.js; update this suite"
	resolved=$(cd "$app" && node --input-type=module -e "console.log(import.meta.resolve('a2-client'))")
	[[ $resolved == "file://$pkgdir/"* ]] || a2_die "npm: 'a2-client' resolves to $resolved, not the installed package"

	ppsql -q -d postgres -c 'CREATE DATABASE a2_npm'
	ppsql -q -d a2_npm -c 'CREATE EXTENSION a2'
	url="postgresql://postgres@/a2_npm?host=$(node -p 'encodeURIComponent(process.argv[1])' "$PG_SOCK")&port=5432"
	a2_log "npm: the example from the installed package"
	out=$(cd "$app" && A2_DATABASE_URL=$url timeout 60 node worker.mjs)
	printf '%s\n' "$out"
	grep -qx 'shipments of order-42: 2 tea, 6 cups, 1 sugar, 4 spoons' <<<"$out" ||
		a2_die "npm: the example did not ship the four good orders"
	grep -q '^#3 order.placed: dead_lettered (3/3)' <<<"$out" ||
		a2_die "npm: the example did not dead-letter the bad order"
}

part_debian_build() {
	local work=$1
	# shellcheck disable=SC2086 # a list of majors
	bash scripts/package.sh build --out "$work/debian" $majors
}

part_lintian() {
	local work=$1 m c
	local -a changes=()
	for m in $majors; do
		changes+=("$work/debian/pg$m/a2_${version}"-*_amd64.changes)
	done
	command -v lintian >/dev/null 2>&1 || A2_EXTRA_PACKAGES=lintian bash scripts/deps.sh
	a2_log "lintian: $(lintian --version) on ${changes[*]##*/}"
	# Every finding is shown, those debian/ overrides as O: under its
	# reasons (N:); an error (E:) or warning (W:) not overridden fails.
	# (--fail-on would count the overridden ones when they are shown.)
	# One run per .changes: each is an upload of its own, and lintian takes
	# the packages of one source version together (the dbgsym package of
	# one major would be judged against another major's package).
	: >"$work/lintian.txt"
	for c in "${changes[@]}"; do
		lintian --fail-on none --display-info --pedantic --show-overrides "$c" | tee -a "$work/lintian.txt"
	done
	if grep -qE '^[EW]: ' "$work/lintian.txt"; then
		a2_die "lintian: errors or warnings (E:, W: above) to fix, or to override in debian/ with the reason"
	fi
	a2_log "lintian: no error or warning; $(grep -c '^O: ' "$work/lintian.txt") overridden, $(grep -cE '^[IP]: ' "$work/lintian.txt") info/pedantic"
}

# deb_files WORK MAJOR: the files (not directories) of the .deb, one per
# line, in WORK/deb-MAJOR.txt.
deb_files() {
	local work=$1 m=$2 deb
	deb=$(echo "$work/debian/pg$m/postgresql-$m-a2_${version}"-*_amd64.deb)
	[[ -f $deb ]] || a2_die "no $deb"
	dpkg-deb --fsys-tarfile "$deb" | tar -t | sed -n 's|^\./|/|; /[^/]$/p' | LC_ALL=C sort >"$work/deb-$m.txt"
}

part_debian_files() {
	local work=$1 m
	[[ -s $work/make-install.txt ]] || a2_die "debian files: no make install list (the pgxn part failed)"
	a2_find_pg_config
	for m in $majors; do
		deb_files "$work" "$m"
		# The extension's files: make install's, with this package's major.
		sed "s|/postgresql/$A2_PG_MAJOR/|/postgresql/$m/|" "$work/make-install.txt" | LC_ALL=C sort >"$work/want-$m.txt"
		grep -v "^/usr/share/doc/postgresql-$m-a2/" "$work/deb-$m.txt" |
			grep -v "^/usr/share/lintian/overrides/postgresql-$m-a2\$" >"$work/got-$m.txt" || true
		if ! diff -u "$work/want-$m.txt" "$work/got-$m.txt"; then
			a2_die "debian files: postgresql-$m-a2 does not hold what make install installs (- make install, + package)"
		fi
		for f in copyright changelog.Debian.gz README.md.gz examples/quickstart.sql; do
			grep -qx "/usr/share/doc/postgresql-$m-a2/$f" "$work/deb-$m.txt" ||
				a2_die "debian files: postgresql-$m-a2 has no /usr/share/doc/postgresql-$m-a2/$f"
		done
		a2_log "debian files: postgresql-$m-a2 holds make install's $(wc -l <"$work/want-$m.txt") files and its docs"
	done
}

part_debian_install() {
	local work=$1 m
	for m in $majors; do
		deb_files "$work" "$m"
	done
	# shellcheck disable=SC2086 # a list of majors
	bash scripts/package.sh test --out "$work/debian" $majors
	for m in $majors; do
		# dpkg -L lists directories too; the files must be the .deb's.
		grep -Fxf "$work/deb-$m.txt" "$work/debian/pg$m/installed.txt" | LC_ALL=C sort >"$work/installed-files-$m.txt" || true
		diff -u "$work/deb-$m.txt" "$work/installed-files-$m.txt" ||
			a2_die "debian install: dpkg did not install every file of postgresql-$m-a2"
	done
}

if [[ ${1:-} == part ]]; then
	"part_${2//-/_}" "$3"
	exit
fi

# --- main --------------------------------------------------------------------

command -v dpkg-query >/dev/null 2>&1 || {
	echo "skipped: not a Debian machine (no dpkg): the packages are Debian's"
	exit 0
}
if [[ $EUID -ne 0 ]] && ! sudo -n true 2>/dev/null; then
	echo "skipped: the Debian packages need root or password-less sudo (debootstrap, chroot, mount)"
	exit 0
fi
a2_find_pg_config

work=$(mktemp -d /tmp/a2-packages.XXXXXX)
chmod 0755 "$work"
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	pg_env "$work"
	if [[ -f $PG_DATA/postmaster.pid ]]; then
		as_postgres "$PG_PRIVATE/bin/pg_ctl" -D "$PG_DATA" -m immediate -w stop >/dev/null 2>&1 ||
			a2_warn "packages: could not stop the cluster in $PG_DATA"
	fi
	rm -rf --one-file-system -- "$work"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

results=()
failed=0
part() { # part NAME [NEEDS...]: run it unless a part it needs failed
	local name=$1 need t0=$SECONDS
	shift
	for need in "$@"; do
		if [[ " $failed_parts " == *" $need "* ]]; then
			results+=("FAIL  $name (not run: $need failed)")
			failed=$((failed + 1))
			failed_parts+=" $name"
			return
		fi
	done
	printf '\n--- packages: %s ---\n\n' "$name"
	if bash "$self" part "$name" "$work"; then
		results+=("$(printf 'PASS  %s (%ds)' "$name" $((SECONDS - t0)))")
	else
		results+=("$(printf 'FAIL  %s (%ds)' "$name" $((SECONDS - t0)))")
		failed=$((failed + 1))
		failed_parts+=" $name"
	fi
}
failed_parts=

a2_log "packages: a2 $version; Debian packages for PostgreSQL $majors"
part pgxn
part npm pgxn
part debian-build
part lintian debian-build
part debian-files debian-build pgxn
part debian-install debian-build

printf '\n--- packages: summary ---\n\n'
printf '%s\n' "${results[@]}"
[[ $failed -eq 0 ]]
