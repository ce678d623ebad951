# shellcheck shell=bash
#
# Helpers shared by the scripts in scripts/.  Source it, do not run it:
#
#   # shellcheck source=scripts/lib.sh
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# After sourcing: A2_ROOT is the repository root (absolute).  After
# a2_find_pg_config: PG_CONFIG is the pg_config of the PostgreSQL to build
# and test against (15 on the host unless PG_CONFIG names another supported
# major; exported, so make and child scripts use the same one), A2_PG_MAJOR
# its major version, and PGBIN its bindir, which is put first on PATH so
# psql, createdb, pg_ctl, ... are that version's binaries rather than
# Debian's pg_wrapper.

A2_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
export A2_ROOT

# Directories we create must be traversable by the postgres user.
umask 022

# One locale everywhere, whatever the caller's (CI often has none, or names
# one that is not installed): psql's client encoding, perl's (pg_prove)
# start-up and tool messages then do not depend on the machine.
if locale -a 2>/dev/null | grep -qiE '^c\.utf-?8$'; then
	export LC_ALL=C.UTF-8
else
	export LC_ALL=C
fi
unset LANGUAGE

a2_log() {
	printf '==> %s\n' "$*" >&2
}

a2_warn() {
	printf 'WARNING: %s\n' "$*" >&2
}

a2_die() {
	printf 'ERROR: %s\n' "$*" >&2
	exit 1
}

# Run a command as root: directly when we are root, else through sudo.
a2_as_root() {
	if [[ $EUID -eq 0 ]]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo -- "$@"
	else
		a2_die "this step needs root and sudo is not installed: $*"
	fi
}

# Run a command as the postgres OS user (PostgreSQL and pgbouncer refuse to
# run as root), from a directory it can read.
as_postgres() {
	if [[ $EUID -eq 0 ]]; then
		(cd / && runuser -u postgres -- "$@")
	elif [[ $(id -un) == postgres ]]; then
		(cd / && "$@")
	elif command -v sudo >/dev/null 2>&1; then
		(cd / && sudo -u postgres -- "$@")
	else
		a2_die "need root, the postgres user, or sudo to run: $*"
	fi
}

# The PostgreSQL majors a2 supports (README "Supported PostgreSQL versions";
# the Makefile and src/pg_compat.h refuse the others).
A2_PG_MAJORS="15 16 17 18 19"

# Locate pg_config.  Honours $PG_CONFIG (any supported major); otherwise
# prefers PostgreSQL 15's version-specific binary, because Debian's
# /usr/bin/pg_config follows whichever server-dev package is newest.  Sets
# PG_CONFIG, A2_PG_MAJOR and PGBIN.
a2_find_pg_config() {
	if [[ -z ${PG_CONFIG:-} ]]; then
		if [[ -x /usr/lib/postgresql/15/bin/pg_config ]]; then
			PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
		elif command -v pg_config >/dev/null 2>&1; then
			PG_CONFIG=$(command -v pg_config)
		else
			a2_die "pg_config not found; run scripts/deps.sh first"
		fi
	fi
	local version major
	version=$("$PG_CONFIG" --version) ||
		a2_die "$PG_CONFIG --version failed"
	major=$(sed -n 's/^PostgreSQL \([0-9][0-9]*\).*/\1/p' <<<"$version")
	case " $A2_PG_MAJORS " in
	*" ${major:-none} "*) ;;
	*) a2_die "$PG_CONFIG is '$version'; a2 supports PostgreSQL ${A2_PG_MAJORS// /, } (set PG_CONFIG)" ;;
	esac
	A2_PG_MAJOR=$major
	PGBIN=$("$PG_CONFIG" --bindir)
	export PG_CONFIG PGBIN A2_PG_MAJOR
	case $PATH in
	"$PGBIN:"*) ;;
	*) PATH="$PGBIN:$PATH" ;;
	esac
	export PATH
}
