#!/usr/bin/env bash
#
# The Debian packages of a2: postgresql-NN-a2, one per PostgreSQL major,
# built from debian/ the way Debian builds its PostgreSQL extensions
# (pg_buildext, debian/pgversions, dh --with pgxs_loop).
#
#   scripts/package.sh [build] [--out DIR] [MAJOR ...]
#   scripts/package.sh test [--out DIR] [MAJOR ...]
#   scripts/package.sh root MAJOR
#   scripts/package.sh versions
#
#   MAJOR 15: Debian 12 (bookworm), built on this machine
#         17: Debian 13 (trixie), built in a debootstrap root
#         18: Debian unstable (sid), built in a debootstrap root
#   Without MAJOR: 15 17 18.  (16: no suite of Debian's mirror has
#   postgresql-16, see README "Supported PostgreSQL versions".)
#
# build     `make dist` makes the PGXN zip, dist/a2-X.Y.Z.zip; its contents
#           become the upstream tarball a2_X.Y.Z.orig.tar.xz, debian/ is
#           added from the work tree, and dpkg-buildpackage -us -uc builds
#           the source and binary packages with PG_SUPPORTED_VERSIONS=MAJOR,
#           so that pg_buildext builds postgresql-MAJOR-a2 alone.  The
#           version is a2.control's: when debian/changelog's latest entry
#           is for an older one, the build gets an entry X.Y.Z-1 of its own
#           (the work tree's debian/changelog is left as it is).  Results in
#           DIR/pgMAJOR/ (DIR: default dist/debian): the .deb and its
#           -dbgsym .deb, .dsc, .orig.tar.xz, .debian.tar.xz, .buildinfo,
#           .changes, and build.log.
# test      For each MAJOR, in a throwaway overlay on its clean root (below):
#           apt-get install ./postgresql-MAJOR-a2_*.deb; debian/tests/installed
#           (the package's autopkgtest: a pg_virtualenv cluster with a2 in
#           shared_preload_libraries, CREATE EXTENSION a2, the protocol
#           smoke test debian/tests/smoke.sql); the files dpkg installed go
#           to DIR/pgMAJOR/installed.txt; apt-get purge; then nothing of a2
#           may be left, and postgresql-MAJOR must still be installed.
# root      Make (or reuse) MAJOR's clean root; print its path.
# versions  (make version-check) The versions the packages carry agree with
#           a2.control: debian/changelog is not newer; debian/pgversions
#           lists the majors a2 supports (scripts/lib.sh A2_PG_MAJORS); each
#           client package's range of a2 versions it serves holds
#           a2.control's version: clients/node/package.json's
#           "a2": {"extension": RANGE}, and the Python client's A2_VERSIONS
#           (clients/python/src/a2_client/_versions.py) where it exists.
#           RANGE is comparators separated by blanks (or commas), each one
#           of >=, >, <=, <, = and a version: ">=0.2.0 <0.5.0".
#
# Roots, cached in A2_ROOTS_DIR (default /var/cache/a2-roots, beside
# scripts/matrix.sh's, under names of their own) and rebuilt when their
# stamp (recipe, suite, mirror, packages) changes:
#   pkgNN-SUITE        minbase and postgresql-NN, nothing else: the clean
#                      root that `test` installs the package into
#   pkgNN-SUITE-build  a copy of it plus the build dependencies (17, 18)
# Made with debootstrap from the machine's own apt mirror (A2_APT_MIRROR
# overrides), as scripts/matrix.sh makes its roots, and with the suite's
# -updates and -security (from the machine's security archive,
# A2_APT_SECURITY; none for sid), as a user's system has: apt runs with
# Check-Valid-Until off (the mirror may be a dated snapshot), nothing
# installed may start a service, and postgresql-common makes no cluster.
# A fresh machine makes them in 2.5 to 10 minutes each (debootstrap and
# apt; the longer on a busy shared machine); afterwards a build is the
# compile (33 to 71 seconds here), and a test 26 to 43.  One run per root at a time
# (flock).  Needs root (debootstrap, chroot, mount); as another user it
# goes through sudo.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
	sed -n '6,10s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
	exit 2
}

# --- arguments ---------------------------------------------------------------

cmd=build
case ${1:-} in
build | test | root | versions) cmd=$1; shift ;;
-h | --help) usage ;;
esac
out=$A2_ROOT/dist/debian
majors=()
while [[ $# -gt 0 ]]; do
	case $1 in
	--out) [[ $# -ge 2 ]] || usage; out=$2; shift 2 ;;
	--out=*) out=${1#*=}; shift ;;
	[0-9]*) majors+=("$1"); shift ;;
	*) usage ;;
	esac
done
[[ ${#majors[@]} -gt 0 ]] || majors=(15 17 18)
out=$(realpath -m -- "$out")

version=$(sed -n "s/^default_version = '\(.*\)'/\1/p" "$A2_ROOT/a2.control")
[[ -n $version ]] || a2_die "package: no default_version in a2.control"

# The Debian suite whose postgresql-NN a package for major NN is built
# against and tested on.
suite_of() {
	case $1 in
	15) echo bookworm ;;
	17) echo trixie ;;
	18) echo sid ;;
	16) a2_die "package: no suite of Debian's mirror has postgresql-16 (README, Supported PostgreSQL versions)" ;;
	19) a2_die "package: postgresql-19 is a release candidate, in Debian's experimental suite only: no postgresql-19-a2 is built until Debian ships 19 (README, Supported PostgreSQL versions)" ;;
	*) a2_die "package: a2 supports PostgreSQL ${A2_PG_MAJORS// /, }; no package for '$1'" ;;
	esac
}

# --- versions ----------------------------------------------------------------

# satisfies VERSION RANGE: VERSION meets every comparator of RANGE.
satisfies() {
	local v=$1 c op want
	[[ -n $2 ]] || return 1
	for c in $2; do
		case $c in
		'>='*) op=ge want=${c#>=} ;;
		'<='*) op=le want=${c#<=} ;;
		'>'*) op=gt want=${c#>} ;;
		'<'*) op=lt want=${c#<} ;;
		'='*) op=eq want=${c#=} ;;
		*) return 2 ;;
		esac
		[[ $want =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || return 2
		dpkg --compare-versions "$v" "$op" "$want" || return 1
	done
}

check_versions() {
	local bad=0 changelog upstream majors_listed range rc
	changelog=$(cd "$A2_ROOT" && dpkg-parsechangelog -S Version) ||
		a2_die "versions: cannot read debian/changelog"
	upstream=${changelog%-*}
	if dpkg --compare-versions "$upstream" gt "$version"; then
		echo "debian/changelog's latest entry ($changelog) is newer than a2.control ($version)"
		bad=1
	elif [[ $upstream != "$version" ]]; then
		a2_log "versions: debian/changelog's latest entry is $changelog; scripts/package.sh builds $version-1 with an entry of its own (add one with dch before a release)"
	fi

	majors_listed=$(grep -E '^[0-9]+$' "$A2_ROOT/debian/pgversions" | sort -n | tr '\n' ' ')
	if [[ $majors_listed != "$(tr ' ' '\n' <<<"$A2_PG_MAJORS" | sort -n | tr '\n' ' ')" ]]; then
		echo "debian/pgversions lists ${majors_listed% }, but a2 supports $A2_PG_MAJORS (scripts/lib.sh A2_PG_MAJORS)"
		bad=1
	fi

	range=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1])).get("a2", {}).get("extension", ""))' \
		"$A2_ROOT/clients/node/package.json")
	serves clients/node/package.json '"a2": {"extension": ...}' "$range" || bad=1
	local py=$A2_ROOT/clients/python/src/a2_client/_versions.py
	if [[ -f $py ]]; then
		range=$(sed -n 's/^A2_VERSIONS = "\(.*\)"$/\1/p' "$py")
		serves "${py#"$A2_ROOT"/}" A2_VERSIONS "${range//,/ }" || bad=1
	fi
	return "$bad"
}

# serves FILE WHAT RANGE: RANGE (from WHAT in FILE) holds a2.control's version.
serves() {
	local rc=0
	satisfies "$version" "$3" || rc=$?
	case $rc in
	0) a2_log "versions: $1 serves a2 $3, which holds $version" ;;
	2) echo "$1: $2 is '$3', not a range like '>=0.2.0 <0.5.0'" ;;
	*) echo "$1: $2 is '${3:-(missing)}', which does not hold a2.control's $version" ;;
	esac
	return "$rc"
}

if [[ $cmd == versions ]]; then
	check_versions
	exit
fi

# --- roots -------------------------------------------------------------------

if [[ $EUID -ne 0 ]]; then
	command -v sudo >/dev/null 2>&1 || a2_die "package: needs root (debootstrap, chroot, mount) or sudo"
	exec sudo --preserve-env=A2_ROOTS_DIR,A2_APT_MIRROR,A2_APT_SECURITY,PG_CONFIG,CI \
		bash "${BASH_SOURCE[0]}" "$cmd" --out "$out" "${majors[@]}"
fi

# Bump when the way a root is made changes: every cached root is rebuilt.
recipe=1
roots=$(realpath -m -- "${A2_ROOTS_DIR:-/var/cache/a2-roots}")

# The first archive URI in apt's sources that serves this machine's own
# release (the Debian mirror, not -security or a third-party repository).
apt_mirror() {
	local codename
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ -n $codename ]] || return 1
	# shellcheck disable=SC2016 # apt's own $(...) fields
	apt-get indextargets --format '$(SITE) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
		awk -v c="$codename" '$2 == c && !seen { print $1; seen = 1 }' | grep .
}
mirror=
security=

# The security archive's URI, from the same sources (RELEASE CODENAME-security).
apt_security() {
	local codename
	codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
	[[ -n $codename ]] || return 1
	# shellcheck disable=SC2016 # apt's own $(...) fields
	apt-get indextargets --format '$(SITE) $(RELEASE)' 'Created-By: Packages' 2>/dev/null |
		awk -v c="$codename-security" '$2 == c && !seen { print $1; seen = 1 }' | grep .
}

mounted=()
active=()

mount_root() { # mount_root DIR: /proc and /dev/shm (PostgreSQL's shared memory)
	local dir=$1
	active+=("$dir")
	mount -t proc proc "$dir/proc"
	mounted+=("$dir/proc")
	mkdir -p "$dir/dev/shm"
	mount -t tmpfs -o mode=1777,size=1g,nosuid,nodev a2shm "$dir/dev/shm"
	mounted+=("$dir/dev/shm")
}

# End the processes whose root directory is DIR (a server a failed run left
# behind).  Only ever processes in that root.
kill_in_root() {
	local dir=$1 sig p left
	for sig in TERM KILL; do
		left=0
		for p in /proc/[0-9]*; do
			[[ ${p#/proc/} == "$$" ]] && continue
			if [[ $(readlink "$p/root" 2>/dev/null) == "$dir" ]]; then
				kill "-$sig" "${p#/proc/}" 2>/dev/null && left=1
			fi
		done
		[[ $left -eq 0 ]] && return 0
		sleep 2
	done
}

# Unmount everything under DIR: what we mounted, and what a run that was
# killed outright left behind.
unmount_under() {
	local dir=$1 m
	awk -v d="$dir/" 'index($2 "/", d) == 1 || $2 == substr(d, 1, length(d) - 1) { print $2 }' /proc/mounts |
		sort -r | while read -r m; do
		umount "$m" 2>/dev/null || umount -l "$m" || a2_warn "package: could not unmount $m"
	done
}

release_roots() {
	local dir
	for dir in "${active[@]}"; do
		kill_in_root "$dir"
	done
	for dir in "${active[@]}"; do
		unmount_under "$dir"
	done
	active=()
	mounted=()
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	release_roots
	[[ -z ${scratch:-} ]] || rm -rf --one-file-system -- "$scratch"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# in_root DIR COMMAND...: COMMAND in the root, with a clean environment and
# without our lock descriptors.
in_root() {
	local dir=$1
	shift
	chroot "$dir" /usr/bin/env -i HOME=/root LANG=C.UTF-8 \
		PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		DEBIAN_FRONTEND=noninteractive "$@" 8>&- 9>&-
}

apt_in_root() { # apt_in_root DIR ARGS...
	local dir=$1
	shift
	in_root "$dir" apt-get -q -y -o Dpkg::Options::=--force-confdef \
		-o Dpkg::Options::=--force-confold "$@"
}

base_packages() { echo "postgresql-$1"; }
build_packages() { echo "build-essential debhelper dpkg-dev postgresql-server-dev-$1 postgresql-server-dev-all"; }

stamp() { # stamp SUITE PACKAGES...
	local suite=$1
	shift
	printf 'recipe %s\nsuite %s\nmirror %s\nsecurity %s\npackages %s\n' "$recipe" "$suite" "$mirror" "$security" "$*"
}

# fresh_root NEW SUITE PACKAGES...: debootstrap SUITE into NEW and install
# PACKAGES; the log goes to NEW.log.
fresh_root() {
	local new=$1 suite=$2 log=$1.log
	shift 2
	command -v debootstrap >/dev/null 2>&1 ||
		A2_EXTRA_PACKAGES=debootstrap bash "$A2_ROOT/scripts/deps.sh" </dev/null >&2 || return 1
	a2_log "package: debootstrap $suite from $mirror into $new (log $log)"
	if ! debootstrap --variant=minbase --components=main "$suite" "$new" "$mirror" >"$log" 2>&1; then
		tail -n 30 "$log" >&2
		return 1
	fi
	# A Debian system as its users run it: the suite with its updates and
	# security fixes (the server's too: Debian's pg_buildext makes packages
	# depend on the newest minor release, /etc/postgresql-common/minor_versions).
	{
		echo "deb $mirror $suite main"
		if [[ $suite != sid ]]; then
			echo "deb $mirror $suite-updates main"
			[[ -z $security ]] || echo "deb $security $suite-security main"
		fi
	} >"$new/etc/apt/sources.list"
	printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
	chmod 0755 "$new/usr/sbin/policy-rc.d"
	mkdir -p "$new/etc/postgresql-common/createcluster.d"
	echo 'create_main_cluster = false' >"$new/etc/postgresql-common/createcluster.d/a2.conf"
	cat >"$new/etc/apt/apt.conf.d/90a2" <<'EOF'
// scripts/package.sh: the mirror may serve a dated snapshot, whose Release
// file reads as expired.
Acquire::Check-Valid-Until "false";
Acquire::Retries "3";
APT::Install-Recommends "false";
EOF
	add_packages "$new" "$log" "$@"
}

# add_packages DIR LOG PACKAGES...: apt-get install them into the root.
add_packages() {
	local dir=$1 log=$2 ok=0
	shift 2
	a2_log "package: apt-get install $* (in $(basename "$dir"))"
	mount_root "$dir"
	{
		apt_in_root "$dir" update && apt_in_root "$dir" install "$@" && apt_in_root "$dir" clean
	} >>"$log" 2>&1 || ok=1
	release_roots
	if [[ $ok -ne 0 ]]; then
		tail -n 30 "$log" >&2
		return 1
	fi
}

# make_root MAJOR base|build: the cached root's path on stdout, made or
# remade first when its stamp differs.  The caller holds no lock on it
# afterwards; lock_root serializes its users.
make_root() {
	local major=$1 kind=$2 suite name root want new base
	suite=$(suite_of "$major")
	name=pkg$major-$suite
	[[ $kind == build ]] && name+=-build
	root=$roots/$name
	if [[ -z $mirror ]]; then
		mirror=${A2_APT_MIRROR:-$(apt_mirror || true)}
		[[ -n $mirror ]] || a2_die "package: no Debian mirror found in the apt sources (set A2_APT_MIRROR)"
		security=${A2_APT_SECURITY:-$(apt_security || true)}
		[[ -n $security ]] || a2_warn "package: no security archive in the apt sources (A2_APT_SECURITY): the roots get no security updates"
	fi
	if [[ $kind == base ]]; then
		# shellcheck disable=SC2046 # a list of package names
		want=$(stamp "$suite" $(base_packages "$major"))
	else
		base=$(make_root "$major" base) || return 1
		# shellcheck disable=SC2046
		want=$(stamp "$suite" $(base_packages "$major") $(build_packages "$major"))
	fi
	mkdir -p -- "$roots"
	(
		flock -w 1800 8 || a2_die "package: another run has held $root.lock for 30 minutes"
		if [[ -f $root/.a2-root-stamp && $(cat "$root/.a2-root-stamp") == "$want" ]]; then
			exit 0
		fi
		new=$roots/.$name.new
		kill_in_root "$new"
		unmount_under "$new"
		rm -rf --one-file-system -- "$new"
		if [[ $kind == base ]]; then
			# shellcheck disable=SC2046
			fresh_root "$new" "$suite" $(base_packages "$major") || {
				a2_warn "package: making the $suite root failed"
				exit 1
			}
		else
			a2_log "package: copying $base to $new"
			(
				flock -w 1800 7 || exit 1
				cp -a --reflink=auto -- "$base" "$new"
			) 7>"$base.lock" || exit 1
			rm -f -- "$new/.a2-root-stamp"
			# shellcheck disable=SC2046
			add_packages "$new" "$new.log" $(build_packages "$major") || {
				a2_warn "package: installing the build dependencies in the $suite root failed"
				exit 1
			}
		fi
		printf '%s\n' "$want" >"$new/.a2-root-stamp"
		rm -rf --one-file-system -- "$root"
		mv -- "$new" "$root"
		mv -f -- "$new.log" "$root.log" 2>/dev/null || true
	) 8>"$root.lock" >&2 || return 1
	printf '%s\n' "$root"
}

# --- build -------------------------------------------------------------------

scratch=
staged=

# stage: the source package's tree in $scratch/a2-X.Y.Z and its upstream
# tarball beside it, once per run.
stage() {
	[[ -z $staged ]] || return 0
	local zip tree changelog when maint
	a2_find_pg_config
	scratch=$(mktemp -d /tmp/a2-package.XXXXXX)
	chmod 0755 "$scratch"
	a2_log "package: make dist"
	(cd "$A2_ROOT" && make --no-print-directory -s PG_CONFIG="$PG_CONFIG" dist) >&2
	zip=$A2_ROOT/dist/a2-$version.zip
	[[ -f $zip ]] || a2_die "package: make dist made no $zip"
	tree=$scratch/a2-$version
	(cd "$scratch" && unzip -q "$zip")
	[[ -d $tree ]] || a2_die "package: $zip has no top directory a2-$version/"
	# The upstream tarball: the PGXN zip's files, nothing else.
	tar -C "$scratch" --sort=name --owner=0 --group=0 --numeric-owner \
		--mtime="@$(stat -c %Y "$tree/a2.control")" -cJf "$scratch/a2_$version.orig.tar.xz" "a2-$version"
	cp -a -- "$A2_ROOT/debian" "$tree/debian"
	# Build output a developer's own dpkg-buildpackage left in the work tree.
	rm -rf -- "$tree"/debian/.debhelper "$tree"/debian/postgresql-*-a2 "$tree"/debian/postgresql-*-a2-dbgsym \
		"$tree"/debian/files "$tree"/debian/*.substvars "$tree"/debian/debhelper-build-stamp
	changelog=$(cd "$tree" && dpkg-parsechangelog -S Version)
	if [[ ${changelog%-*} != "$version" ]]; then
		a2_log "package: debian/changelog's latest entry is $changelog; adding $version-1 to the build's copy"
		maint=$(sed -n 's/^Maintainer: //p' "$tree/debian/control.in")
		when=$(date -R -d "@$(stat -c %Y "$tree/a2.control")")
		{
			printf 'a2 (%s-1) unstable; urgency=medium\n\n' "$version"
			printf '  * New upstream version %s (entry made by scripts/package.sh).\n\n' "$version"
			printf ' -- %s  %s\n\n' "$maint" "$when"
			cat "$tree/debian/changelog"
		} >"$tree/debian/changelog.new"
		mv -- "$tree/debian/changelog.new" "$tree/debian/changelog"
	fi
	staged=1
}

# dpkg_build DIR MAJOR [ROOT]: dpkg-buildpackage in DIR (a path inside ROOT
# when ROOT is given) for MAJOR alone.
dpkg_build() {
	local dir=$1 major=$2 root=${3:-} jobs
	jobs=$(nproc 2>/dev/null || echo 2)
	# shellcheck disable=SC2016 # expanded by sh -c
	local -a build_cmd=(sh -c 'cd "$1" && pg_buildext updatecontrol && dpkg-buildpackage -us -uc -j"$2"' sh "$dir" "$jobs")
	if [[ -n $root ]]; then
		in_root "$root" env PG_SUPPORTED_VERSIONS="$major" "${build_cmd[@]}"
	else
		env PG_SUPPORTED_VERSIONS="$major" "${build_cmd[@]}" </dev/null
	fi
}

build_one() {
	local major=$1 suite dest work root log t0=$SECONDS
	suite=$(suite_of "$major")
	dest=$out/pg$major
	rm -rf -- "$dest"
	mkdir -p -- "$dest"
	log=$dest/build.log
	stage
	if [[ $major == 15 ]]; then
		[[ $(. /etc/os-release && echo "${VERSION_CODENAME:-}") == bookworm ]] ||
			a2_die "package: 15 is built on the machine itself, which must be Debian 12 (bookworm)"
		for tool in dpkg-buildpackage dh pg_buildext; do
			command -v "$tool" >/dev/null 2>&1 ||
				a2_die "package: $tool is missing (scripts/deps.sh installs it)"
		done
		[[ -x /usr/share/perl5/Debian/Debhelper/Sequence/pgxs_loop.pm || -f /usr/share/perl5/Debian/Debhelper/Sequence/pgxs_loop.pm ]] ||
			a2_die "package: dh's pgxs_loop sequence is missing (postgresql-server-dev-all; scripts/deps.sh installs it)"
		work=$scratch/pg$major
		rm -rf -- "$work"
		mkdir -p -- "$work"
		cp -a -- "$scratch/a2-$version" "$scratch/a2_$version.orig.tar.xz" "$work/"
		a2_log "package: building postgresql-$major-a2 $version on this machine (log $log)"
		if ! dpkg_build "$work/a2-$version" "$major" >"$log" 2>&1; then
			tail -n 40 "$log" >&2
			a2_die "package: dpkg-buildpackage for $major failed (log $log)"
		fi
	else
		root=$(make_root "$major" build) || a2_die "package: no build root for $major ($suite)"
		exec 9>"$root.lock"
		flock -w 1800 9 || a2_die "package: another run has held $root.lock for 30 minutes"
		work=$root/build
		rm -rf --one-file-system -- "$work"
		mkdir -p -- "$work"
		cp -a -- "$scratch/a2-$version" "$scratch/a2_$version.orig.tar.xz" "$work/"
		mount_root "$root"
		a2_log "package: building postgresql-$major-a2 $version in $root (log $log)"
		if ! dpkg_build "/build/a2-$version" "$major" "$root" >"$log" 2>&1; then
			release_roots
			tail -n 40 "$log" >&2
			a2_die "package: dpkg-buildpackage for $major in the $suite root failed (log $log)"
		fi
		release_roots
	fi
	find "$work" -maxdepth 1 -type f \( -name '*.deb' -o -name '*.dsc' -o -name '*.tar.*' \
		-o -name '*.buildinfo' -o -name '*.changes' \) -exec cp -t "$dest" -- {} +
	[[ -z ${root:-} ]] || { rm -rf --one-file-system -- "$work"; exec 9>&-; }
	ls "$dest"/postgresql-"$major"-a2_"$version"-*.deb >/dev/null 2>&1 ||
		a2_die "package: the build for $major made no postgresql-$major-a2_$version-*.deb"
	a2_log "package: postgresql-$major-a2 built in $((SECONDS - t0))s: $(cd "$dest" && echo *.deb)"
}

# --- test --------------------------------------------------------------------

test_one() {
	local major=$1 base deb name ov merged rc=0 t0=$SECONDS left
	base=$(make_root "$major" base) || a2_die "package: no clean root for $major"
	shopt -s nullglob
	local debs=("$out/pg$major/postgresql-$major-a2_"*.deb)
	shopt -u nullglob
	[[ ${#debs[@]} -eq 1 ]] || a2_die "package: expected one postgresql-$major-a2 .deb in $out/pg$major, found ${#debs[@]} (run scripts/package.sh build $major)"
	deb=${debs[0]}
	name=postgresql-$major-a2
	exec 9>"$base.lock"
	flock -s -w 1800 9 || a2_die "package: $base.lock is held"
	[[ -n $scratch ]] || { scratch=$(mktemp -d /tmp/a2-package.XXXXXX); chmod 0755 "$scratch"; }
	ov=$scratch/overlay-$major
	merged=$ov/root
	mkdir -p "$ov/upper" "$ov/work" "$merged"
	if mount -t overlay overlay -o "lowerdir=$base,upperdir=$ov/upper,workdir=$ov/work" "$merged" 2>/dev/null; then
		active+=("$merged")
	else
		a2_log "package: no overlayfs here; copying the clean root instead"
		rmdir "$merged"
		cp -a --reflink=auto -- "$base" "$merged"
	fi
	exec 9>&-
	mount_root "$merged"
	mkdir -p "$merged/tmp/a2-package"
	cp -- "$deb" "$merged/tmp/a2-package/"
	cp -a -- "$A2_ROOT/debian/tests" "$merged/tmp/a2-package/tests"

	a2_log "package: $major: apt-get install ./$(basename "$deb") into a clean $(suite_of "$major") root"
	# The root's package lists may be older than what the package was built
	# against (a newer server minor release): then update them and retry.
	if ! apt_in_root "$merged" install "/tmp/a2-package/$(basename "$deb")"; then
		a2_log "package: $major: apt-get update, and again"
		{ apt_in_root "$merged" update && apt_in_root "$merged" install "/tmp/a2-package/$(basename "$deb")"; } || rc=1
	fi
	if [[ $rc -eq 0 ]]; then
		in_root "$merged" dpkg-query -L "$name" | LC_ALL=C sort >"$out/pg$major/installed.txt"
		a2_log "package: $major: debian/tests/installed (a2 preloaded, CREATE EXTENSION a2, smoke test)"
		in_root "$merged" sh /tmp/a2-package/tests/installed || rc=1
		kill_in_root "$merged"
		a2_log "package: $major: apt-get purge $name"
		apt_in_root "$merged" purge "$name" || rc=1
		left=$(find "$merged/usr/lib/postgresql/$major" "$merged/usr/share/postgresql/$major" \
			\( -name 'a2' -o -name 'a2.*' -o -name 'a2--*' \) -printf '%p\n' 2>/dev/null || true)
		if [[ -n $left ]]; then
			printf 'left after purging %s:\n%s\n' "$name" "$left" >&2
			rc=1
		fi
		# shellcheck disable=SC2016 # dpkg-query's own ${...} fields
		in_root "$merged" dpkg-query -W -f '${db:Status-Status}\n' "postgresql-$major" | grep -qx installed || {
			a2_warn "package: purging $name removed postgresql-$major"
			rc=1
		}
	fi
	release_roots
	rm -rf --one-file-system -- "$ov"
	[[ $rc -eq 0 ]] || a2_die "package: the installed postgresql-$major-a2 failed its test"
	a2_log "package: postgresql-$major-a2 installed, tested and purged in $((SECONDS - t0))s"
}

# --- main --------------------------------------------------------------------

case $cmd in
root) [[ ${#majors[@]} -eq 1 ]] || usage; make_root "${majors[0]}" base ;;
build) for m in "${majors[@]}"; do build_one "$m"; done ;;
test) for m in "${majors[@]}"; do test_one "$m"; done ;;
esac
