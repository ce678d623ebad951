#!/usr/bin/env bash
#
# The README's second command: the whole test suite.
#
#   scripts/test.sh [--layers "LAYER ..."] [--no-deps] [--results FILE]
#
#   deps -> build (-Werror) -> throwaway cluster -> layers -> summary
#
# Layers, each run even when an earlier one failed:
#   version-check      make version-check (a2.control, META.json, the clients,
#                      src/sql/)
#   regress+isolation  make installcheck: pg_regress, then the isolation specs
#   pgtap              pg_prove test/pgtap/*.sql in database a2_tap, and each
#                      test/pgtap/fresh/*.sql in its own new database
#   suite:NAME         test/suites/NAME.sh, for every NAME that
#                      test/suites/SUITES lists, in its order
#   static             scripts/static.sh (cppcheck, clang-tidy)
#   pg17, pg18, pg19   the CI matrix (scripts/matrix.sh): a Debian root with
#                      that PostgreSQL (19: the release candidate, from
#                      experimental), where this script runs the build,
#                      regress+isolation, pgtap, suite:15-notifier and
#                      suite:16-notifier-xids, then
#                      the cross-version check (pg_upgrade 15->17, dump
#                      15->18, pg_upgrade 15->19); each of its steps is a
#                      layer "pgNN STEP"
# Every layer is named after the server major it ran against ("pg15
# regress+isolation") and reports its time.  The summary at the end gives
# the passed layers a few to a line, then, for each failed layer, the lines
# of its output that name an error and its last lines, then one line per
# failed layer; its last line is "N passed, M failed", and the exit status
# is 1 when M > 0.  (A CI log is often read from its tail: whatever failed
# is readable there.)  A layer with nothing to run is reported as skipped,
# not counted.
#
# Options: --layers runs only the layers named (space- or comma-separated;
# deps and build always run); --no-deps skips scripts/deps.sh (the matrix
# roots install their packages themselves); --results appends one line
# "PASS|FAIL<TAB>layer<TAB>seconds" per layer to FILE.
#
# A suite runs from the repository root with stdin from /dev/null and gets
# A2_ROOT (the root), PGHOST/PGPORT/PGUSER/PGDATABASE (the cluster),
# A2_PGDATA/A2_PGPORT/A2_PGLOG (for scripts/cluster.sh, e.g. to kill and
# restart it), PG_CONFIG, and PATH with the server's bindir first.  A
# second cluster: A2_PGDATA=/tmp/other/data A2_PGPORT=54330 scripts/cluster.sh.
# It passes by exiting 0.  Suites run with bash, whatever their mode bits.
# When any suite is to run, test/suites/SUITES and test/suites/*.sh must
# agree (test/lib/suites.sh): a file there that the list leaves out, or a
# name with no file, fails the layer "suite list", and so does a suite
# that --layers names but the list does not.  Helpers that suites source
# live in test/lib/.  test/README.md describes every kind of test.
#
# Environment:
#   A2_LAYER_TIMEOUT  seconds one layer may take (default 1800; 0 = none)
#   A2_KEEP_CLUSTER   1 = leave the cluster running at the end
#   A2_PGDATA, A2_PGPORT  see scripts/cluster.sh
#   A2_ROOTS_DIR, A2_APT_MIRROR, A2_MATRIX_PGPORT  see scripts/matrix.sh

set -euo pipefail

# shellcheck source=scripts/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=test/lib/suites.sh
. "$A2_ROOT/test/lib/suites.sh"

only=
no_deps=0
results_file=
while [[ $# -gt 0 ]]; do
	case $1 in
	--layers) [[ $# -ge 2 ]] || a2_die "test: --layers needs a list"; only=$2; shift 2 ;;
	--layers=*) only=${1#*=}; shift ;;
	--no-deps) no_deps=1; shift ;;
	--results) [[ $# -ge 2 ]] || a2_die "test: --results needs a file"; results_file=$2; shift 2 ;;
	--results=*) results_file=${1#*=}; shift ;;
	-h | --help) awk 'NR >= 3 && !/^#/ { exit } NR >= 3 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; exit 0 ;;
	*) a2_die "test: unknown argument '$1' (see --help)" ;;
	esac
done
[[ -z $only ]] || only=" ${only//,/ } "

# Is layer $1 to run?  All of them unless --layers named some.
wanted() {
	[[ -z $only || $only == *" $1 "* ]]
}

cd "$A2_ROOT"

timeout_s=${A2_LAYER_TIMEOUT:-1800}
[[ $timeout_s =~ ^[0-9]+$ ]] ||
	a2_die "A2_LAYER_TIMEOUT must be a number of seconds, not '$timeout_s'"

results=()
# the output of the layer running now, and the excerpts of failed layers
layer_log=$(mktemp)
excerpts=$(mktemp)
passed=0
failed=0
cluster_started=0
cluster_ok=0
child=
# "pgNN " once the server major is known: every layer is named after it
prefix=
layer_t0=$SECONDS
# 1 while recording the matrix's steps, whose banners it printed itself
forwarding=0

duration() { # 75 -> 1m15s
	if (($1 >= 60)); then
		printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
	else
		printf '%ds' "$1"
	fi
}

# record OUTCOME LAYER [SECONDS]: SECONDS defaults to the time since begin.
record() {
	local outcome=$1 layer=$2 secs=${3:-$((SECONDS - layer_t0))}
	results+=("$(printf '%-5s %s (%s)' "$outcome" "$prefix$layer" "$(duration "$secs")")")
	case $outcome in
	PASS) passed=$((passed + 1)) ;;
	FAIL)
		failed=$((failed + 1))
		excerpt "$prefix$layer"
		;;
	esac
	if [[ -n $results_file ]]; then
		printf '%s\t%s\t%s\n' "$outcome" "$layer" "$secs" >>"$results_file"
	fi
	if [[ $forwarding -eq 0 ]]; then
		printf '\n=== %s: %s (%s) ===\n\n' "$outcome" "$prefix$layer" "$(duration "$secs")"
	fi
}

banner() {
	printf '\n=== %s ===\n\n' "$*"
}

# A layer starts: its banner, its clock, and an empty log.
begin() {
	layer_t0=$SECONDS
	: >"$layer_log"
	banner "$prefix$*"
}

# excerpt LAYER: what the summary shows of a failed layer's output (its
# log; for a step of the matrix, the matrix's log up to that step's end):
# the lines that name an error (at most 20), then the last 15 lines.
excerpt() {
	local layer=$1 upto text
	[[ -s $layer_log ]] || return 0
	upto=$(grep -n -F "=== $layer: FAIL" "$layer_log" | tail -n 1 | cut -d: -f1 || true)
	text=$(if [[ -n $upto ]]; then head -n "$upto" "$layer_log"; else cat "$layer_log"; fi)
	{
		printf -- '--- %s, the lines that name an error:\n' "$layer"
		grep -E 'ERROR|FATAL|PANIC|FAIL|not ok|[Ff]ailed|[Ee]rror:|violat|timed out|^make.*\*\*\*|^# +(got|expected)' <<<"$text" |
			grep -v -E '^number of failed transactions: 0 |^=== PASS' | head -n 20 || true
		printf -- '--- %s, its last lines:\n' "$layer"
		tail -n 15 <<<"$text"
	} | cut -c 1-300 >>"$excerpts"
}

summary() {
	local line row='' outcome
	banner "summary"
	# passed layers a few to a line; failed ones with their excerpts, last
	for line in "${results[@]}"; do
		outcome=${line%% *}
		[[ $outcome == PASS ]] || continue
		line=${line#PASS  }
		if ((${#row} + ${#line} > 100)); then
			printf 'PASS  %s\n' "$row"
			row=
		fi
		row=${row:+$row, }$line
	done
	[[ -z $row ]] || printf 'PASS  %s\n\n' "$row"
	if [[ -s $excerpts ]]; then
		cat -- "$excerpts"
		printf '\n'
	fi
	for line in "${results[@]}"; do
		[[ ${line%% *} == PASS ]] || printf '%s\n' "$line"
	done
	printf '%d passed, %d failed\n' "$passed" "$failed"
}

# Stop the cluster if we started it (unless A2_KEEP_CLUSTER=1).
stop_cluster() {
	[[ $cluster_started -eq 1 ]] || return 0
	cluster_started=0
	if [[ ${A2_KEEP_CLUSTER:-0} == 1 ]]; then
		a2_log "test: leaving the cluster running (A2_KEEP_CLUSTER=1)"
	else
		bash scripts/cluster.sh stop </dev/null || a2_warn "test: could not stop the cluster"
	fi
}

# Normal ends go through finish(), which stops the cluster before printing
# the summary so that "N passed, M failed" really is the last line.  This
# trap covers everything else (a bug in this script, Ctrl-C, kill).
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [[ -n $child ]]; then
		kill -TERM "$child" 2>/dev/null || true
		wait "$child" 2>/dev/null || true
	fi
	stop_cluster
	rm -f -- "$layer_log" "$excerpts"
	exit "$rc"
}
trap cleanup EXIT
trap 'a2_warn "test: interrupted"; exit 130' INT
trap 'a2_warn "test: terminated"; exit 143' TERM

# Run a command with stdin from /dev/null under the layer timeout.  It runs
# in the background and we wait for it, so Ctrl-C reaches our trap at once;
# timeout(1) gives the command its own process group and kills all of it.
#
# Its output goes to the layer's log, which tail(1) prints as it grows
# until the command has ended (so that the summary can quote a failure).
run() {
	local rc=0 follower
	if [[ $timeout_s -eq 0 ]]; then
		"$@" </dev/null >>"$layer_log" 2>&1 &
	else
		timeout --kill-after=30 "$timeout_s" "$@" </dev/null >>"$layer_log" 2>&1 &
	fi
	child=$!
	tail -n +1 -s 0.2 --pid="$child" -f -- "$layer_log" &
	follower=$!
	wait "$child" || rc=$?
	wait "$follower" || true
	child=
	if [[ $timeout_s -ne 0 && $rc -eq 124 ]]; then
		a2_warn "test: timed out after ${timeout_s}s: $*"
		printf 'WARNING: test: timed out after %ss: %s\n' "$timeout_s" "$*" >>"$layer_log"
	fi
	return "$rc"
}

# Print a file (at most 2000 lines of it) under a header, if it exists;
# into the layer's log as well.
show() {
	local file=$1 lines
	[[ -s $file ]] || return 0
	lines=$(wc -l <"$file")
	{
		banner "$file"
		head -n 2000 -- "$file"
		if ((lines > 2000)); then
			printf '... (%d more lines in %s)\n' "$((lines - 2000))" "$file"
		fi
	} | tee -a -- "$layer_log"
}

finish() {
	stop_cluster
	summary
	rm -f -- "$layer_log" "$excerpts"
	if [[ $failed -ne 0 ]]; then
		exit 1
	fi
	exit 0
}

fatal() {
	record FAIL "$1"
	finish
}

# --- setup: failures here leave nothing worth testing ------------------------

if [[ $no_deps -eq 0 ]]; then
	begin "deps"
	run bash scripts/deps.sh || fatal deps
fi
a2_find_pg_config
prefix="pg$A2_PG_MAJOR "

begin "build"
run bash scripts/build.sh || fatal build
record PASS build

# --- layers ------------------------------------------------------------------

if wanted version-check; then
	begin "version-check"
	if run make --no-print-directory PG_CONFIG="$PG_CONFIG" version-check; then
		record PASS version-check
	else
		record FAIL version-check
	fi
fi

# The layers that need a server.
need_cluster=0
for layer in regress+isolation pgtap; do
	wanted "$layer" && need_cluster=1
done
if [[ -z $only || $only == *" suite:"* ]]; then
	need_cluster=1
fi

if [[ $need_cluster -eq 1 ]]; then
	begin "cluster"
	if bash scripts/cluster.sh start </dev/null; then
		cluster_started=1
		cluster_ok=1
		eval "$(bash scripts/cluster.sh env)"
	else
		# Without a server the database layers cannot run; count them as
		# one failure and still run the static checks.
		cluster_started=1 # a half-started server must still be stopped
		record FAIL "cluster start (database layers not run)"
	fi
fi

# Make a fresh database NAME with pgtap and a2 installed.
fresh_db() {
	dropdb --if-exists --force "$1" &&
		createdb "$1" &&
		psql -X -q -v ON_ERROR_STOP=1 -d "$1" \
			-c 'CREATE EXTENSION pgtap' -c 'CREATE EXTENSION a2'
}

layer_installcheck() {
	local ok=0
	rm -f regression.diffs regression.out output_iso/regression.diffs output_iso/regression.out
	# Two invocations so the isolation specs still run when a pg_regress
	# test fails (one `make installcheck` would stop at the first failure).
	run make --no-print-directory PG_CONFIG="$PG_CONFIG" installcheck ISOLATION= || ok=1
	run make --no-print-directory PG_CONFIG="$PG_CONFIG" installcheck REGRESS= || ok=1
	if [[ $ok -ne 0 ]]; then
		show regression.diffs
		show output_iso/regression.diffs
	fi
	return "$ok"
}

layer_pgtap() {
	local ok=0 f
	local -a files fresh
	shopt -s nullglob
	files=(test/pgtap/*.sql)
	fresh=(test/pgtap/fresh/*.sql)
	shopt -u nullglob
	if [[ ${#files[@]} -eq 0 && ${#fresh[@]} -eq 0 ]]; then
		return 2
	fi
	if [[ ${#files[@]} -gt 0 ]]; then
		if fresh_db a2_tap </dev/null; then
			run pg_prove --failures -d a2_tap "${files[@]}" || ok=1
		else
			a2_warn "test: could not create database a2_tap with pgtap and a2"
			ok=1
		fi
	fi
	for f in "${fresh[@]}"; do
		banner "pgtap (fresh database): $f"
		if fresh_db a2_tap_fresh </dev/null; then
			run pg_prove --failures -d a2_tap_fresh "$f" || ok=1
		else
			a2_warn "test: could not create database a2_tap_fresh with pgtap and a2"
			ok=1
		fi
	done
	return "$ok"
}

if [[ $cluster_ok -eq 1 ]]; then
	if wanted regress+isolation; then
		begin "regress+isolation"
		if layer_installcheck; then
			record PASS regress+isolation
		else
			record FAIL regress+isolation
		fi
	fi

	if wanted pgtap; then
		begin "pgtap"
		rc=0
		layer_pgtap || rc=$?
		case $rc in
		0) record PASS pgtap ;;
		2)
			a2_log "test: no pgTAP files in test/pgtap/ yet; skipping"
			results+=("SKIP  ${prefix}pgtap (no test/pgtap/*.sql)")
			;;
		*) record FAIL pgtap ;;
		esac
	fi

	# The suites: the names test/suites/SUITES lists, in its order, each
	# run with bash whatever its mode bits.  The list and the *.sh files
	# must agree, and every suite --layers names must be listed: otherwise
	# a suite could be skipped without a word.
	if [[ -z $only || $only == *" suite:"* ]]; then
		suites=()
		list_ok=1
		listed=$(a2_suites test/suites) || list_ok=0
		[[ -z $listed ]] || mapfile -t suites <<<"$listed"
		read -r -a named <<<"$only"
		for layer in ${named[@]+"${named[@]}"}; do
			[[ $layer == suite:* ]] || continue
			if [[ $'\n'$listed$'\n' != *$'\n'"${layer#suite:}"$'\n'* ]]; then
				a2_warn "test: --layers names $layer, but test/suites/SUITES does not list ${layer#suite:}"
				list_ok=0
			fi
		done
		if [[ $list_ok -eq 0 ]]; then
			layer_t0=$SECONDS
			record FAIL "suite list (test/suites/SUITES)"
		fi
		for name in "${suites[@]}"; do
			wanted "suite:$name" || continue
			begin "suite: $name"
			if run env A2_ROOT="$A2_ROOT" bash "$A2_ROOT/test/suites/$name.sh"; then
				record PASS "suite:$name"
			else
				record FAIL "suite:$name"
			fi
		done
	fi
fi

if wanted static; then
	begin "static"
	if run bash scripts/static.sh; then
		record PASS static
	else
		record FAIL static
	fi
fi

# The CI matrix: each version's steps become layers "pgNN STEP".  Only from
# the host's PostgreSQL 15 run (the matrix copies it into the roots).
for version in 17 18 19; do
	if [[ $A2_PG_MAJOR != 15 ]] || ! wanted "pg$version"; then
		continue
	fi
	begin "pg$version: scripts/matrix.sh $version"
	steps=$(mktemp)
	rc=0
	run bash scripts/matrix.sh "$version" "$steps" || rc=$?
	saved_prefix=$prefix
	prefix="pg$version "
	forwarding=1
	while IFS=$'\t' read -r outcome step secs; do
		[[ -n $step ]] && record "$outcome" "$step" "$secs"
	done <"$steps"
	forwarding=0
	if [[ $rc -ne 0 ]] && ! grep -q '^FAIL' "$steps"; then
		record FAIL "scripts/matrix.sh exited $rc"
	elif [[ ! -s $steps ]]; then
		record FAIL "scripts/matrix.sh recorded nothing"
	fi
	prefix=$saved_prefix
	rm -f -- "$steps"
done

finish
