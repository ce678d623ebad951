#!/usr/bin/env bash
#
# Static checks of the C sources: cppcheck and clang-tidy.  Exits non-zero
# when either reports anything.
#
#   scripts/static.sh                 check src/*.c and src/citus/*.c
#   scripts/static.sh FILE.c ...      check the given files instead
#
# Both tools see the server headers of the PostgreSQL that pg_config names
# (15 unless PG_CONFIG says otherwise; any of 15 to 19) and the configuration
# the real build uses (gcc on x86-64 Linux), so they understand ereport(ERROR),
# pg_attribute_noreturn() and friends instead of guessing at unknown macros.
# A finding that is a false positive is silenced where it occurs, with the
# reason beside it:
#   cppcheck:    /* cppcheck-suppress <id> */ on the line above
#   clang-tidy:  /* NOLINT(<check>) */ or /* NOLINTNEXTLINE(<check>) */

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

a2_find_pg_config

# File arguments are relative to the caller's directory; we work from the root.
files=()
for arg in "$@"; do
	files+=("$(realpath -e -- "$arg")") || a2_die "static: no such file: $arg"
done
cd "$A2_ROOT"

for tool in cppcheck clang-tidy; do
	command -v "$tool" >/dev/null 2>&1 ||
		a2_die "static: $tool is not installed; run scripts/deps.sh"
done

if [[ ${#files[@]} -eq 0 ]]; then
	shopt -s nullglob
	files=(src/*.c src/citus/*.c)
	shopt -u nullglob
fi
if [[ ${#files[@]} -eq 0 ]]; then
	a2_log "static: no C sources under src/; nothing to check"
	exit 0
fi

server_inc=$("$PG_CONFIG" --includedir-server)
[[ -f $server_inc/postgres.h ]] ||
	a2_die "static: $server_inc/postgres.h missing; install postgresql-server-dev-15"

failed=0

# cppcheck.  -D__GNUC__ etc. select the one configuration the build uses;
# without them cppcheck tries a dozen #ifdef combinations of the server
# headers (minutes instead of seconds) and, lacking __GNUC__, loses the
# noreturn attributes on elog/ereport and reports dereferences "after" an
# ERROR.  No -j: it would turn off cppcheck's cross-file (CTU) analysis.
# missingIncludeSystem: cppcheck has no compiler's own header directories.
a2_log "static: cppcheck ${files[*]}"
if ! cppcheck --error-exitcode=1 --quiet --inline-suppr \
	--enable=warning,portability,performance \
	--language=c --std=c11 --platform=unix64 \
	-D__GNUC__=12 -D__GNUC_MINOR__=2 -D__x86_64__ -D__linux__ -D_GNU_SOURCE \
	-I src -I "$server_inc" \
	--suppress=missingIncludeSystem \
	"${files[@]}"; then
	a2_warn "static: cppcheck reported problems"
	failed=1
fi

# clang-tidy.  The bugprone checks left out are style opinions that fire
# all over PostgreSQL-style code: identifiers such as _PG_init
# (reserved-identifier), adjacent parameters of one type (easily-swappable-
# parameters), PostgreSQL's own macro idioms (macro-parentheses) and the
# implicit int64 -> int32 conversions of fmgr code (narrowing-conversions).
# DeprecatedOrUnsafeBufferHandling flags every memcpy/memset/snprintf for
# not being C11 Annex K's memcpy_s, which glibc does not even provide;
# insecureAPI.strcpy and the rest of the analyzer stay on.
# Diagnostics in the project's own headers are shown; in the server's not.
checks='-*,clang-analyzer-*,bugprone-*'
checks+=',-bugprone-reserved-identifier'
checks+=',-bugprone-easily-swappable-parameters'
checks+=',-bugprone-macro-parentheses'
checks+=',-bugprone-narrowing-conversions'
checks+=',-clang-analyzer-security.insecureAPI.DeprecatedOrUnsafeBufferHandling'
root_re=$(printf '%s' "$A2_ROOT" | sed 's/[][\.*^$+?(){}|]/\\&/g')
header_filter="^(${root_re}/)?src/([^/]*/)?[^/]*\\.h\$"

a2_log "static: clang-tidy ${files[*]}"
if ! clang-tidy --quiet --checks="$checks" --warnings-as-errors='*' \
	--header-filter="$header_filter" \
	"${files[@]}" \
	-- -std=gnu11 -D_GNU_SOURCE -I src -I "$server_inc" 2>&1 |
	{ grep -v -E '^[0-9]+ warnings? (and [0-9]+ errors? )?generated\.$' || true; }; then
	a2_warn "static: clang-tidy reported problems"
	failed=1
fi

if [[ $failed -ne 0 ]]; then
	a2_log "static: FAILED"
	exit 1
fi
a2_log "static: clean"
