#!/usr/bin/env bash
#
# Install the Debian 12 packages a2 needs to build and test, but only those
# that are missing: when everything is installed this touches neither the
# network nor apt.  Runs as root; as another user it goes through sudo.
#
# Extra packages can be added with A2_EXTRA_PACKAGES="pkg1 pkg2".

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

packages=(
	postgresql-15
	postgresql-server-dev-15
	postgresql-15-pgtap
	libtap-parser-sourcehandler-pgtap-perl
	cppcheck
	clang-tidy
	make
	gcc
	pgbouncer
	python3-psycopg
	python3-psycopg-pool
	gdb
	debootstrap
	dpkg-dev
	debhelper
	postgresql-server-dev-all
	lintian
	pgxnclient
	unzip
	xz-utils
)
if [[ -n ${A2_EXTRA_PACKAGES:-} ]]; then
	read -r -a extra <<<"$A2_EXTRA_PACKAGES"
	packages+=("${extra[@]}")
fi

command -v dpkg-query >/dev/null 2>&1 ||
	a2_die "dpkg-query not found: scripts/deps.sh supports Debian 12 only"

missing=()
for pkg in "${packages[@]}"; do
	# "install ok installed" (or "hold ok installed") means usable; anything
	# else, including "not installed" and half-configured, gets (re)installed.
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case $status in
	*" ok installed") ;;
	*) missing+=("$pkg") ;;
	esac
done

if [[ ${#missing[@]} -eq 0 ]]; then
	a2_log "deps: all ${#packages[@]} packages already installed"
	exit 0
fi

a2_log "deps: installing ${missing[*]}"

export DEBIAN_FRONTEND=noninteractive
# Wait for a dpkg lock held by e.g. unattended-upgrades instead of failing.
apt_opts=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)

# Retry: a fresh machine's first apt-get update sometimes hits a mirror
# that is mid-sync or a transient network error.
attempt=1
until a2_as_root env DEBIAN_FRONTEND=noninteractive \
	apt-get "${apt_opts[@]}" update; do
	if [[ $attempt -ge 3 ]]; then
		a2_die "deps: apt-get update failed $attempt times"
	fi
	attempt=$((attempt + 1))
	a2_warn "deps: apt-get update failed, retrying in 10s ($attempt/3)"
	sleep 10
done

a2_as_root env DEBIAN_FRONTEND=noninteractive \
	apt-get "${apt_opts[@]}" install -y "${missing[@]}" </dev/null ||
	a2_die "deps: apt-get install failed for: ${missing[*]}"

# Verify: apt-get can succeed yet leave a package unconfigured.
for pkg in "${missing[@]}"; do
	status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
	case $status in
	*" ok installed") ;;
	*) a2_die "deps: $pkg is still not installed (status: ${status:-unknown})" ;;
	esac
done

a2_log "deps: installed ${missing[*]}"
