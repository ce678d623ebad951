#!/usr/bin/env bash
#
# One layer of the CI matrix: a2 against another PostgreSQL major, in a
# minimal Debian root.
#
#   scripts/matrix.sh VERSION [RESULTS]
#   scripts/matrix.sh VERSION --run COMMAND [OUT]
#
#   VERSION 17: Debian 13 (trixie), postgresql-17
#           18: Debian unstable (sid), postgresql-18
#           19: Debian unstable (sid) with experimental, postgresql-19
#               (the release candidate; see "Experimental" below)
#   --run   instead of the steps below: build and install a2 into the
#           root's PostgreSQL, then run COMMAND (bash -c, in /a2, as root,
#           with PG_CONFIG and PGBIN of that version, A2_PGDATA
#           /tmp/a2-run/data and A2_PGPORT; PostgreSQL 15 is in
#           /opt/a2-pg15 as for the cross-version checks), and copy
#           /tmp/a2-run/results to the directory OUT (default
#           ./matrix-run-pgVERSION); for measurements such as
#           bench/notify_versions.sh, or to look into a failure
#
# Steps, each a result line "PASS|FAIL<TAB>step<TAB>seconds" appended to
# RESULTS (scripts/test.sh records them as layers "pgVERSION step"):
#
#   root               make the root with debootstrap, or reuse the cached one
#   build ...          scripts/test.sh inside the root, as root, with that
#                      version's pg_config: its build and the layers
#                      regress+isolation, pgtap, suite:15-notifier and
#                      suite:16-notifier-xids (the notifier's xid horizon,
#                      where 17 renamed ShmemVariableCache); the servers run
#                      as the root's postgres user
#   pg_upgrade 15->17  (17) test/versions/cross-version.sh upgrade
#   dump 15->18        (18) test/versions/cross-version.sh dump
#   pg_upgrade 15->19  (19) test/versions/cross-version.sh upgrade
#
# Roots are cached in A2_ROOTS_DIR (default /var/cache/a2-roots), one per
# version, and rebuilt when the stamp (suite, mirror, package list, recipe)
# changes; a fresh machine builds them (about 2.5 minutes each).  The
# packages come from the machine's own apt mirror: the first URI in its apt
# sources that serves its own release (A2_APT_MIRROR overrides).  The
# registry may serve a dated snapshot, whose unstable Release file reads as
# expired, so apt in the roots runs with Acquire::Check-Valid-Until=false.
# A root that cannot be built is a failure, never a skip.
#
# Experimental: PostgreSQL 19 is, until Debian ships its final release, a
# release candidate in Debian's experimental suite.  Its root is a sid root
# whose apt sources add "experimental main", with apt preferences that let
# only the packages built from the source package postgresql-19 come from
# there (Package: src:postgresql-19): the server, client and headers, and
# libpq5 and libpq-dev, which postgresql-server-dev-19 needs at 19 (>= 19~~).
# Every other package, postgresql-common included, is sid's, as in the pg18
# root; the root's build fails if anything else was installed from
# experimental.  Once 19 is in sid, sid's packages win (the pin gives both
# suites the same priority, and apt takes the higher version).
# Experimental has no postgresql-19-pgtap yet.  pgTAP is SQL only
# (Architecture: all, no shared library), so that root takes the extension
# files of sid's postgresql-18-pgtap (apt-get download, dpkg-deb -x) into
# 19's extension directory, without installing the package (which would
# bring postgresql-18).
#
# The cross-version checks need PostgreSQL 15 inside the root, where the
# newer pg_upgrade and pg_dump run: the host's 15 (PG_CONFIG's installation,
# a2 installed by the host build) is copied to /opt/a2-pg15 in the root,
# with the few shared libraries of the host that the root lacks (ICU 72,
# LDAP 2.5, ...) in /opt/a2-pg15/hostlib.  PostgreSQL finds its share
# directory relative to its binaries, so the copy runs where it lands.
#
# Needs root (debootstrap, chroot, mount); as another user it goes through
# sudo.  /proc and /dev/shm are mounted in the root while it is used and
# always unmounted, and processes left in the root are ended, on exit.
# One run per root at a time (flock); another run waits for it.
#
# Environment: A2_ROOTS_DIR, A2_APT_MIRROR, A2_LAYER_TIMEOUT (per layer
# inside), A2_MATRIX_PGPORT (first of four ports the servers in the root
# use; default A2_PGPORT + 4, or 54333), CI.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '6,18s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

[[ $# -ge 1 ]] || usage
version=$1
run_cmd=
if [[ ${2:-} == --run ]]; then
	[[ $# -ge 3 && $# -le 4 && -n $3 ]] || usage
	run_cmd=$3
	run_out=$(realpath -m -- "${4:-matrix-run-pg$version}")
	results=/dev/null
else
	[[ $# -le 2 ]] || usage
	results=${2:-/dev/null}
fi
# The source package whose binaries may come from experimental; empty: the
# root has no experimental source.
experimental=
# The major whose postgresql-NN-pgtap the root uses (see the header).
pgtap_from=$version

case $version in
17)
	suite=trixie
	cross=(upgrade "pg_upgrade 15->17")
	;;
18)
	suite=sid
	cross=(dump "dump 15->18")
	;;
19)
	suite=sid
	experimental=postgresql-19
	pgtap_from=18
	cross=(upgrade "pg_upgrade 15->19")
	;;
*) usage ;;
esac

if [[ $EUID -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || a2_die "matrix: needs root (debootstrap, chroot, mount) or sudo"
	exec sudo --preserve-env=A2_ROOTS_DIR,A2_APT_MIRROR,A2_LAYER_TIMEOUT,A2_MATRIX_PGPORT,A2_PGPORT,PG_CONFIG,CI \
		bash "${BASH_SOURCE[0]}" "$@"
fi

# Bump when the way a root is made changes: every cached root is rebuilt.
recipe=1
packages=(
	"postgresql-$version"
	"postgresql-server-dev-$version"
	libtap-parser-sourcehandler-pgtap-perl
	python3-psycopg
	make
	gcc
	gdb
)

if [[ $pgtap_from == "$version" ]]; then
	packages+=("postgresql-$version-pgtap")
fi

roots=$(realpath -m -- "${A2_ROOTS_DIR:-/var/cache/a2-roots}")
name=pg$version-$suite
[[ -z $experimental ]] || name=$name-experimental
root=$roots/$name
port=${A2_MATRIX_PGPORT:-$((${A2_PGPORT:-54329} + 4))}
[[ $port =~ ^[0-9]+$ ]] || a2_die "A2_MATRIX_PGPORT must be a port number, not '$port'"

result() { # result PASS|FAIL STEP SECONDS
	printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$results"
	printf '\n=== pg%s %s: %s (%ss) ===\n\n' "$version" "$2" "$1" "$3"
}

# --- the mirror ---------------------------------------------------------------

# The first "deb" URI in the machine's apt sources (one-line *.list and
# deb822 *.sources) whose suites include the machine's own codename: the
# Debian archive itself, not -security or a third-party repository.
apt_mirror() {
	local codename file
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ -n $codename ]] || return 1
	# Candidates in apt's order; sed reads them all (no SIGPIPE) and keeps
	# the first.
	{
		for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
			[[ -f $file ]] || continue
			awk -v c="$codename" '
				{ sub(/#.*/, "") }
				$1 == "deb" {
					i = 2
					if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
					if ($(i + 1) == c) print $i
				}' "$file"
		done
		for file in /etc/apt/sources.list.d/*.sources; do
			[[ -f $file ]] || continue
			# deb822: paragraphs separated by blank lines
			awk -v c="$codename" '
				function flush() {
					if (types ~ /(^| )deb( |$)/ && (" " suites " ") ~ (" " c " ") && uris != "" && enabled != "no") {
						split(uris, u, " ")
						print u[1]
					}
					types = ""; uris = ""; suites = ""; enabled = ""
				}
				/^[ \t]*#/ { next }
				/^[ \t]*$/ { flush(); next }
				{
					line = $0; key = tolower(line); sub(/:.*/, "", key); sub(/^[^:]*:[ \t]*/, "", line)
					if (key == "types") types = line
					else if (key == "uris") uris = line
					else if (key == "suites") suites = line
					else if (key == "enabled") enabled = tolower(line)
				}
				END { flush() }' "$file"
		done
	} | sed -n 1p | grep .
}

# --- mounts and processes in the root -----------------------------------------

mounted=()
active_root=

mount_root() {
	local dir=$1
	active_root=$dir
	mount -t proc proc "$dir/proc"
	mounted+=("$dir/proc")
	# PostgreSQL's dynamic shared memory (posix) lives in /dev/shm.
	mkdir -p "$dir/dev/shm"
	mount -t tmpfs -o mode=1777,size=1g,nosuid,nodev a2shm "$dir/dev/shm"
	mounted+=("$dir/dev/shm")
}

# End the processes whose root directory is DIR: servers a failed or
# interrupted run left behind in the root.  Only ever processes in our root.
kill_in_root() {
	local dir=$1 sig pid p left
	for sig in TERM KILL; do
		left=0
		for p in /proc/[0-9]*; do
			pid=${p#/proc/}
			[[ $pid == "$$" ]] && continue
			if [[ $(readlink "$p/root" 2>/dev/null) == "$dir" ]]; then
				kill "-$sig" "$pid" 2>/dev/null && left=1
			fi
		done
		[[ $left -eq 0 ]] && return 0
		sleep 2
	done
}

# Unmount whatever a run that was killed outright left mounted under DIR.
unmount_stale() {
	local dir=$1 m
	awk -v d="$dir/" 'index($2 "/", d) == 1 { print $2 }' /proc/mounts | sort -r |
		while read -r m; do
			umount -l "$m" || a2_warn "matrix: could not unmount $m"
		done
}

unmount_root() {
	local i m
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		m=${mounted[i]}
		if mountpoint -q "$m"; then
			umount "$m" 2>/dev/null || umount -l "$m" ||
				a2_warn "matrix: could not unmount $m"
		fi
	done
	mounted=()
	active_root=
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $active_root ]]; then
		kill_in_root "$active_root"
		unmount_root
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# in_root DIR COMMAND...: run COMMAND in the root with a clean environment.
# Without the lock's descriptor: a server left running in the root must not
# hold the next run's lock.
in_root() {
	local dir=$1
	shift
	chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive "$@" 9>&-
}

# --- the root -----------------------------------------------------------------

stamp() {
	printf 'recipe %s\nsuite %s\nmirror %s\npackages %s\n' \
		"$recipe" "$suite" "$mirror" "$(printf '%s\n' "${packages[@]}" | LC_ALL=C sort | tr '\n' ' ')"
	# Only in an experimental root's stamp, so the others' stay as they were.
	if [[ -n $experimental ]]; then
		printf 'experimental src:%s\n' "$experimental"
	fi
	if [[ $pgtap_from != "$version" ]]; then
		printf 'pgtap from postgresql-%s-pgtap\n' "$pgtap_from"
	fi
}

# pgTAP's extension files from postgresql-PGTAP_FROM-pgtap (see the header).
borrow_pgtap() {
	local dir=$1 tmp=/tmp/a2-pgtap pkg=postgresql-$pgtap_from-pgtap
	local ext=/usr/share/postgresql/$version/extension
	rm -rf --one-file-system -- "$dir$tmp"
	mkdir -p -- "$dir$tmp"
	# shellcheck disable=SC2016 # for the inner sh
	in_root "$dir" sh -c 'cd "$1" && apt-get -q -o APT::Sandbox::User=root download "$2" && dpkg-deb -x "$2"_*.deb x' \
		sh "$tmp" "$pkg" || return 1
	cp -- "$dir$tmp/x/usr/share/postgresql/$pgtap_from/extension/"pgtap* "$dir$ext/" || return 1
	rm -rf --one-file-system -- "$dir$tmp"
	[[ -f $dir$ext/pgtap.control ]]
}

# The experimental source and its pin (see the header).
add_experimental() {
	local dir=$1
	echo "deb $mirror experimental main" >"$dir/etc/apt/sources.list.d/a2-experimental.list"
	cat >"$dir/etc/apt/preferences.d/a2-experimental" <<EOF
# scripts/matrix.sh: only the binaries of $experimental come from
# experimental; everything else stays sid's.
Package: src:$experimental
Pin: release a=experimental
Pin-Priority: 500

Package: *
Pin: release a=experimental
Pin-Priority: 1
EOF
}

# The installed packages that came from experimental but not from the
# source package pinned: none may.
stray_experimental() {
	local dir=$1 pkg
	in_root "$dir" apt list --installed 2>/dev/null |
		awk -F'[/ ]' '(","  $2 ",") ~ /,experimental,/ { print $1 }' |
		while read -r pkg; do
			# shellcheck disable=SC2016 # dpkg-query's format
			[[ $(in_root "$dir" dpkg-query -W -f '${source:Package}' "$pkg") == "$experimental" ]] ||
				echo "$pkg"
		done
}

build_root() {
	local new=$roots/.$name.new log=$roots/$name.log
	command -v debootstrap >/dev/null 2>&1 ||
		A2_EXTRA_PACKAGES=debootstrap bash "$A2_ROOT/scripts/deps.sh" </dev/null ||
		return 1
	command -v debootstrap >/dev/null 2>&1 || {
		a2_warn "matrix: debootstrap is not installed"
		return 1
	}
	kill_in_root "$new"
	unmount_stale "$new"
	rm -rf --one-file-system -- "$new"
	a2_log "matrix: debootstrap $suite from $mirror into $new (log $log)"
	if ! debootstrap --variant=minbase --components=main "$suite" "$new" "$mirror" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		a2_warn "matrix: debootstrap of $suite failed"
		return 1
	fi
	# Nothing installed in the root may start a service (it would run in
	# the host's network namespace), and postgresql-common must not make a
	# 'main' cluster we never use.
	printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
	chmod 0755 "$new/usr/sbin/policy-rc.d"
	mkdir -p "$new/etc/postgresql-common/createcluster.d"
	echo 'create_main_cluster = false' >"$new/etc/postgresql-common/createcluster.d/a2.conf"
	cat >"$new/etc/apt/apt.conf.d/90a2" <<'EOF'
// scripts/matrix.sh: the registry serves a dated snapshot, whose unstable
// Release file reads as expired.
Acquire::Check-Valid-Until "false";
Acquire::Retries "3";
APT::Install-Recommends "false";
EOF
	[[ -z $experimental ]] || add_experimental "$new"
	mount_root "$new"
	local ok=0
	a2_log "matrix: apt-get install ${packages[*]}"
	{
		in_root "$new" apt-get -q update &&
			in_root "$new" apt-get -q -y -o Dpkg::Options::=--force-confdef \
				-o Dpkg::Options::=--force-confold install "${packages[@]}" &&
			in_root "$new" apt-get clean
	} >>"$log" 2>&1 || ok=1
	if [[ $ok -eq 0 && $pgtap_from != "$version" ]]; then
		a2_log "matrix: pgTAP from postgresql-$pgtap_from-pgtap"
		borrow_pgtap "$new" >>"$log" 2>&1 || ok=1
	fi
	kill_in_root "$new"
	unmount_root
	if [[ $ok -ne 0 ]]; then
		tail -n 30 "$log" >&2
		a2_warn "matrix: installing ${packages[*]} in the $suite root failed"
		return 1
	fi
	in_root "$new" test -x "/usr/lib/postgresql/$version/bin/pg_config" || {
		a2_warn "matrix: the $suite root has no /usr/lib/postgresql/$version/bin/pg_config"
		return 1
	}
	if [[ -n $experimental ]]; then
		local stray
		stray=$(stray_experimental "$new" | tr '\n' ' ')
		if [[ -n $stray ]]; then
			a2_warn "matrix: installed from experimental, outside the pin: $stray"
			return 1
		fi
		# shellcheck disable=SC2016 # dpkg-query's format, not the shell's
		a2_log "matrix: from experimental: $(in_root "$new" apt list --installed 2>/dev/null | awk -F'[/ ]' '(","  $2 ",") ~ /,experimental,/ { printf "%s %s, ", $1, $3 }')"
	fi
	stamp >"$new/.a2-root-stamp"
	rm -rf --one-file-system -- "$root"
	mv -- "$new" "$root"
}

# --- the run ------------------------------------------------------------------

a2_find_pg_config # the host's PostgreSQL 15, copied into the root below
[[ $A2_PG_MAJOR == 15 ]] ||
	a2_die "matrix: PG_CONFIG must be the host's PostgreSQL 15 (the old version of the cross-version checks), not $A2_PG_MAJOR"

mkdir -p -- "$roots"
exec 9>"$roots/$name.lock"
if ! flock -w 1800 9; then
	result FAIL root 0
	a2_die "matrix: another run has held $roots/$name.lock for 30 minutes"
fi

# A run killed outright (SIGKILL) may have left servers and mounts behind.
[[ -d $root ]] && kill_in_root "$root"
unmount_stale "$root"

t0=$SECONDS
mirror=${A2_APT_MIRROR:-$(apt_mirror || true)}
if [[ -z $mirror ]]; then
	result FAIL root 0
	a2_die "matrix: no Debian mirror found in the apt sources (set A2_APT_MIRROR)"
fi
if [[ -f $root/.a2-root-stamp && $(cat "$root/.a2-root-stamp") == "$(stamp)" ]]; then
	a2_log "matrix: reusing the cached root $root"
	result PASS "root (cached)" $((SECONDS - t0))
else
	if ! build_root; then
		result FAIL "root ($suite)" $((SECONDS - t0))
		exit 1
	fi
	result PASS "root (built)" $((SECONDS - t0))
fi

# What the previous run left: its work tree, clusters and the 15 copy.
rm -rf --one-file-system -- "$root/a2" "$root/opt/a2-pg15" "$root"/tmp/a2-* "$root"/tmp/tmp.*
mount_root "$root"

# The work tree: tracked and untracked files that git does not ignore, so a
# developer's uncommitted change is what gets tested.
mkdir -p -- "$root/a2"
if git -C "$A2_ROOT" rev-parse --git-dir >/dev/null 2>&1; then
	git -C "$A2_ROOT" ls-files -z --cached --others --exclude-standard |
		tar -C "$A2_ROOT" --null -T - --ignore-failed-read -cf - 2>/dev/null |
		tar -C "$root/a2" -xf -
else
	tar -C "$A2_ROOT" --exclude=.git -cf - . | tar -C "$root/a2" -xf -
fi

# PostgreSQL 15 for the cross-version checks (see the header).
old_lib=$(dirname "$("$PG_CONFIG" --bindir)")
old_share=$("$PG_CONFIG" --sharedir)
mkdir -p "$root/opt/a2-pg15/lib/postgresql" "$root/opt/a2-pg15/share/postgresql" "$root/opt/a2-pg15/hostlib"
cp -a "$old_lib" "$root/opt/a2-pg15/lib/postgresql/15"
cp -a "$old_share" "$root/opt/a2-pg15/share/postgresql/15"
# llvmjit needs the host's whole LLVM; without it the server just runs without JIT.
rm -f "$root"/opt/a2-pg15/lib/postgresql/15/lib/llvmjit*.so
for _ in 1 2 3 4 5; do
	mapfile -t missing < <(
		find "$root/opt/a2-pg15/lib/postgresql/15" -type f \( -path '*/bin/*' -o -name '*.so' \) -printf '/%P\n' |
			sed "s|^|/opt/a2-pg15/lib/postgresql/15|" |
			in_root "$root" env LD_LIBRARY_PATH=/opt/a2-pg15/hostlib xargs ldd 2>/dev/null |
			awk '$2 == "=>" && $3 == "not" { print $1 }' | sort -u
	)
	[[ ${#missing[@]} -eq 0 ]] && break
	for so in "${missing[@]}"; do
		# awk reads all of its input: an early exit would kill ldconfig
		# with SIGPIPE, and pipefail would make that this script's end.
		lib=$(ldconfig -p | awk -v s="$so" '
			$1 == s && /x86-64|64bit/ && wide == "" { wide = $NF }
			$1 == s && any == "" { any = $NF }
			END { print (wide != "" ? wide : any) }')
		[[ -n $lib ]] || a2_die "matrix: the host has no $so for PostgreSQL 15"
		cp -L -- "$lib" "$root/opt/a2-pg15/hostlib/$so"
	done
done

if [[ -n $run_cmd ]]; then
	rc=0
	# shellcheck disable=SC2016 # $1 is for the inner bash
	in_root "$root" CI="${CI:-}" PG_CONFIG="/usr/lib/postgresql/$version/bin/pg_config" \
		PGBIN="/usr/lib/postgresql/$version/bin" A2_PGDATA=/tmp/a2-run/data A2_PGPORT="$port" \
		bash -c 'cd /a2 && bash scripts/build.sh && bash -c "$1"' run "$run_cmd" || rc=$?
	mkdir -p -- "$run_out"
	if [[ -d $root/tmp/a2-run/results ]]; then
		cp -a -- "$root/tmp/a2-run/results/." "$run_out/"
	fi
	kill_in_root "$root"
	rm -rf --one-file-system -- "$root"/tmp/a2-*
	exit "$rc"
fi

steps_file=$root/a2/.matrix-results
: >"$steps_file"
env_args=(
	CI="${CI:-}"
	PG_CONFIG="/usr/lib/postgresql/$version/bin/pg_config"
	A2_PGDATA=/tmp/a2-pg/data
	A2_PGPORT="$port"
	A2_NOTIFIER_PGPORT=$((port + 1))
	A2_LAYER_TIMEOUT="${A2_LAYER_TIMEOUT:-1800}"
)
in_root "$root" "${env_args[@]}" bash /a2/scripts/test.sh --no-deps \
	--layers "regress+isolation pgtap suite:15-notifier suite:16-notifier-xids" --results /a2/.matrix-results || true
# The inner run's lines; an empty file means it died before recording any.
if [[ -s $steps_file ]]; then
	cat "$steps_file" >>"$results"
else
	result FAIL "scripts/test.sh in the root" 0
fi

t0=$SECONDS
if grep -q "^FAIL	build	" "$steps_file" || [[ ! -s $steps_file ]]; then
	result FAIL "${cross[1]} (not run: a2 did not build)" 0
elif in_root "$root" "${env_args[@]}" A2_ROOT=/a2 \
	LD_LIBRARY_PATH=/opt/a2-pg15/hostlib A2_OLD_BINDIR=/opt/a2-pg15/lib/postgresql/15/bin \
	A2_OLD_PGPORT=$((port + 2)) A2_NEW_PGPORT=$((port + 3)) \
	bash /a2/test/versions/cross-version.sh "${cross[0]}"; then
	result PASS "${cross[1]}" $((SECONDS - t0))
else
	result FAIL "${cross[1]}" $((SECONDS - t0))
fi

# The clusters' data (over a gigabyte after pgtap's cost tests) need not
# stay in the cache; the servers are stopped by now, and the EXIT trap ends
# any that are not.
kill_in_root "$root"
rm -rf --one-file-system -- "$root"/tmp/a2-*
