# shellcheck shell=bash
#
# test/citus/dump.sh: dump and restore of the coordinator.  Sourced by
# checks.sh.
#
# pg_dump of the coordinator writes every row: Citus answers the COPY of a
# distributed table from its shards.  It does not write the distribution
# (Citus's metadata is not dumped), and the a2 tables come back with the
# extension's own definition, the single-node global event-id index
# included.  So a restore goes in three steps, into a Citus cluster:
#   pg_restore --section=pre-data   (extensions, tables, functions)
#   SELECT a2_distribute();         (indexes per session, distribution)
#   pg_restore --section=data; pg_restore --section=post-data
# Here the target is a second database, a2_restored, on the same three
# nodes.

rdb=a2_restored
bad=0
pg_dump -Fc -d postgres -f "$work/coord.dump" 2>"$work/dump.err" || {
	cat "$work/dump.err"
	bad=1
}
for p in "$coord" "$w1" "$w2"; do
	psql -X -q -v ON_ERROR_STOP=1 -p "$p" -d postgres -c "SET client_min_messages = warning" -c "CREATE DATABASE $rdb" &&
		psql -X -q -v ON_ERROR_STOP=1 -p "$p" -d "$rdb" -c 'CREATE EXTENSION citus' || bad=1
done
psql -X -q -v ON_ERROR_STOP=1 -d "$rdb" \
	-c "SELECT citus_set_coordinator_host('127.0.0.1', $coord)" \
	-c "SELECT citus_add_node('127.0.0.1', $w1)" \
	-c "SELECT citus_add_node('127.0.0.1', $w2)" >/dev/null || bad=1
restore() {
	pg_restore --section="$1" -d "$rdb" "$work/coord.dump" >>"$work/restore.out" 2>&1
}
{ restore pre-data &&
	psql -X -q -v ON_ERROR_STOP=1 -d "$rdb" -c 'SELECT a2_distribute()' >/dev/null &&
	restore data && restore post-data; } || bad=1

# Every a2 row came back, and the restored store is distributed and works.
fingerprint="SELECT md5(string_agg(t, E'\\n' ORDER BY t)) FROM (
	SELECT format('%s', e) AS t FROM a2_events e
	UNION ALL SELECT format('%s', s) FROM a2_snapshots s
	UNION ALL SELECT format('%s', h) FROM a2_snapshot_history h
	UNION ALL SELECT format('%s', p) FROM a2_snapshot_pins p
	UNION ALL SELECT format('%s', r) FROM a2_presence r
	UNION ALL SELECT format('%s', t) FROM a2_presence_tombstones t) x"
before=$(q -d postgres -c "$fingerprint")
after=$(q -d "$rdb" -c "$fingerprint" 2>&1) || bad=1
rows=$(q -d "$rdb" -c "SELECT count(*) FROM a2_events" 2>&1) || bad=1
dist=$(q -d "$rdb" -c "SELECT a2_is_distributed() AND (SELECT count(*) FROM pg_dist_shard WHERE logicalrelid = 'a2_events'::regclass) > 0" 2>&1) || bad=1
last=$(q -d "$rdb" -c "SELECT max(idx) FROM a2_events WHERE session_id = '$sa'" 2>&1) || bad=1
next=$(q -d "$rdb" -c "SELECT a2_append('$sa', '[{\"type\": \"after-restore\"}]') #>> '{events,0,index}'" 2>&1) || bad=1
next=$([[ $next == $((last + 1)) ]] && echo t || echo "$next")
if [[ $bad -eq 0 && $before == "$after" && $dist == t && $next == t ]]; then
	pass "dump: pg_dump of the coordinator, restored (pre-data, a2_distribute(), data) into a second Citus database: $rows events, identical rows, distributed, appends continue"
else
	tail -20 "$work/restore.out" 2>/dev/null
	echo "before=$before after=$after dist=$dist next=$next"
	fail "dump/restore"
fi
