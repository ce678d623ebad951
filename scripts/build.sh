#!/usr/bin/env bash
#
# Clean build of the extension with warnings as errors, then install it into
# the PostgreSQL that pg_config names (15 to 19: scripts/lib.sh's
# a2_find_pg_config; 15 unless PG_CONFIG says otherwise).  PGXS adds COPT to
# CFLAGS, so
#
#   COPT='-DUSE_ASSERT_CHECKING' scripts/build.sh
#
# gives an assert-enabled build (still with -Werror).  The clean step makes
# sure every object is recompiled, so a warning in an untouched file cannot
# hide behind an object built earlier without -Werror.

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

a2_find_pg_config
cd "$A2_ROOT"

copt="${COPT:+$COPT }-Werror"
jobs=$(nproc 2>/dev/null || echo 2)

a2_log "build: make clean"
make --no-print-directory PG_CONFIG="$PG_CONFIG" clean >/dev/null

a2_log "build: make COPT='$copt' (-j$jobs)"
make --no-print-directory -j"$jobs" PG_CONFIG="$PG_CONFIG" COPT="$copt"

a2_log "build: make install"
a2_as_root make --no-print-directory PG_CONFIG="$PG_CONFIG" COPT="$copt" install

a2_log "build: installed into $("$PG_CONFIG" --pkglibdir) and $("$PG_CONFIG" --sharedir)/extension"
