# shellcheck shell=bash
#
# test/citus/grants.sh: a role made with a2_grant_worker, in distributed
# mode, through the coordinator.  Sourced by run.sh; uses its q, pass,
# fail, $work, $here, $w1, $w2.
#
#   - CREATE ROLE (Citus creates it on the workers too) and
#     SELECT a2_grant_worker(role), as the README says;
#   - as that role, grants.sql on a session of each worker: append, read,
#     claim, renew, complete, fail, redrive, state, snapshots, presence,
#     delegated and run by the coordinator, and an append to a dropped
#     session; a2_claim_next on the coordinator and on a worker node;
#   - and it is refused (42501) what a worker does not get: a2_drop_session,
#     a2_metrics, a2_notify_status, DELETE and TRUNCATE on a2_events, the
#     grant helpers.
# A permission error is printed with its statement.

grants_role=a2_citus_worker
grants_run() {
	local ok=1 p s c d out stmt state checks=0 refused=()
	q -c "CREATE ROLE $grants_role LOGIN" -c "SELECT a2_grant_worker('$grants_role')" >/dev/null || {
		fail "grants: CREATE ROLE and a2_grant_worker"
		return
	}
	for p in "$w1" "$w2"; do
		s=$(q -c "SELECT citus_test_session_on('gs', $p)")
		c=$(q -c "SELECT citus_test_session_on('gc', $p)")
		d=$(q -c "SELECT citus_test_session_on('gd', $p)")
		q -c "SELECT a2_append('$d', '[{\"type\": \"x\"}]')" -c "SELECT a2_drop_session('$d', true)" >/dev/null
		if out=$(psql -X -U "$grants_role" -v VERBOSITY=verbose -v s="$s" -v c="$c" -v d="$d" \
			-f "$here/grants.sql" 2>&1); then
			checks=$((checks + $(grep -c 'citus_test_ok(' "$here/grants.sql")))
		else
			printf 'as %s on sessions of :%s:\n%s\n' "$grants_role" "$p" "$(grep -v '^$' <<<"$out")"
			ok=0
		fi
	done

	# a2_claim_next through the coordinator, and on a worker node (where a
	# fleet runs it: it reads that node's shard tables and locks rows there)
	for p in "$coord" "$w1"; do
		if ! out=$(psql -X -At -p "$p" -U "$grants_role" -v ON_ERROR_STOP=1 -v VERBOSITY=verbose -c 'BEGIN' \
			-c "SELECT jsonb_typeof(a2_claim_next('gw', 60000, 10) -> 'claims')" -c 'ROLLBACK' 2>&1) ||
			! grep -qx array <<<"$out"; then
			printf 'as %s on :%s: a2_claim_next:\n%s\n' "$grants_role" "$p" "$out"
			ok=0
		else
			checks=$((checks + 1))
		fi
	done

	# refused
	s=$(q -c "SELECT citus_test_session_on('gs', $w1)")
	while IFS= read -r stmt; do
		out=$(psql -X -At -U "$grants_role" -v VERBOSITY=verbose -c "$stmt" 2>&1) || true
		state=$(sed -n 's/^ERROR:  \([0-9A-Z]\{5\}\):.*/\1/p' <<<"$out" | head -1)
		if [[ $state == 42501 ]]; then
			refused+=("$stmt")
		else
			printf 'as %s, expected 42501, got %s: %s\n%s\n' "$grants_role" "${state:-success}" "$stmt" "$out"
			ok=0
		fi
	done <<EOF
SELECT a2_drop_session('$s', true)
SELECT a2_drop_session('$s', true) IS NOT NULL
SELECT * FROM a2_metrics()
SELECT * FROM a2_notify_status()
DELETE FROM a2_events WHERE session_id = '$s'
TRUNCATE a2_events
SELECT a2_grant_worker('$grants_role')
SELECT a2_revoke('$grants_role')
EOF
	if [[ $(q -c "SELECT count(*) FROM a2_events WHERE session_id = '$s'") == 0 ]]; then
		echo "the refused statements removed session $s's events"
		ok=0
	fi
	if [[ $ok -eq 1 ]]; then
		pass "grants: a role made with a2_grant_worker ran the protocol through the coordinator on both workers, delegated and coordinator-run ($checks checks), and was refused (42501) ${#refused[@]} statements (drop_session, metrics, notify_status, DELETE, TRUNCATE, grant helpers)"
	else
		fail "grants"
	fi
}
grants_run
