#!/usr/bin/env bash
#
# test/suites/26-schedules.sh: recurring schedules fire every tick exactly
# once (docs/time.md, "Exactly once"), fired by each database's background
# scheduler on the wall clock and by sessions calling a2_fire_schedules()
# at the same time: while running; across a clean restart; across a kill -9
# of the postmaster in the middle of concurrent fire passes; and when one
# pass holds a due schedule while another runs (SKIP LOCKED, then the
# moved next tick).
#
# The invariants, checked after every phase: no event id twice; each
# schedule's events are exactly its fired_count; a backfill schedule's ticks
# have no gap and no repeat from its first to its last; a schedule's ticks
# rise with the session's index.
#
# A private cluster with a2 preloaded (restarted and killed by the test) on
# port A2_SCHED_PGPORT (default A2_PGPORT + 11) under a temporary
# directory, removed at the end.  About 30 s.

set -euo pipefail

root=${A2_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd -P)}
# shellcheck source=scripts/lib.sh
. "$root/scripts/lib.sh"
a2_find_pg_config

tmp=$(mktemp -d "${TMPDIR:-/tmp}/a2-sched.XXXXXX")
chmod 0755 "$tmp"
export A2_PGDATA=$tmp/pg/data
export A2_PGPORT=${A2_SCHED_PGPORT:-$((${A2_PGPORT:-54329} + 11))}
export A2_PRELOAD=1
cluster() { bash "$root/scripts/cluster.sh" "$@"; }
bg_pids=()
cleanup() {
	touch "$tmp/stop" 2>/dev/null || true
	for pid in "${bg_pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	cluster destroy >/dev/null 2>&1 || true
	rm -rf -- "$tmp"
}
trap cleanup EXIT

fail() {
	echo "schedules: FAILED: $*" >&2
	exit 1
}
q() { psql -X -At -v ON_ERROR_STOP=1 -d a2_sched "$@"; }

cluster start
eval "$(cluster env)"
psql -X -q -d postgres -c 'CREATE DATABASE a2_sched'
q -q -c 'CREATE EXTENSION a2'

# A schedule's ticks, from its events' ids ("schedule:NAME@ISO-TICK").
q -q <<'SQL'
CREATE VIEW sched_ticks AS
  SELECT s.name, s.missed, e.idx, e.event_id,
         substring(e.event_id FROM '@(.*)$')::timestamptz AS tick
    FROM a2_schedules s JOIN a2_events e ON e.session_id = s.session_id;
SQL

check() {
	local label=$1 v
	v=$(q -c "SELECT count(*) - count(DISTINCT event_id) FROM a2_events WHERE event_id LIKE 'schedule:%'")
	[[ $v == 0 ]] || fail "$label: $v event ids appear twice"
	v=$(q -c "SELECT string_agg(s.name || ' fired ' || s.fired_count || ' has ' || n, ', ')
	            FROM a2_schedules s, LATERAL (SELECT count(*) n FROM a2_events e WHERE e.session_id = s.session_id) c
	           WHERE s.fired_count <> c.n")
	[[ -z $v ]] || fail "$label: fired_count disagrees with the events: $v"
	v=$(q -c "SELECT string_agg(name || ': ' || n || ' ticks over ' || span || ' s', ', ')
	            FROM (SELECT name, count(*) n, extract(epoch FROM max(tick) - min(tick))::bigint + 1 span
	                    FROM sched_ticks WHERE missed = 'backfill' GROUP BY name) x
	           WHERE n <> span")
	[[ -z $v ]] || fail "$label: a backfill schedule has a gap or a repeat: $v"
	v=$(q -c "SELECT count(*) FROM (SELECT tick <= lag(tick) OVER (PARTITION BY name ORDER BY idx) AS back
	                                  FROM sched_ticks) x WHERE back")
	[[ $v == 0 ]] || fail "$label: $v ticks do not rise with the index"
	a2_log "schedules: $label: $(q -c "SELECT count(*) FROM sched_ticks") ticks fired, each once"
}

# 20 schedules every second that backfill what they miss, one that fires
# the latest missed tick only.
q -q <<'SQL'
SELECT a2_schedule('bf-' || i, 'every 1 second', 'bf-' || i, '{"type": "tick"}',
                   '{"missed": "backfill", "backfillLimit": 1000}')
  FROM generate_series(1, 20) i;
SELECT a2_schedule('lt', 'every 1 second', 'lt', '{"type": "tick"}');
SQL

# 1. The background scheduler alone, on the wall clock.
sleep 3
check "scheduler running"
n=$(q -c "SELECT min(fired_count) FROM a2_schedules")
((n >= 2)) || fail "the background scheduler fired only $n ticks of a schedule in 3 s"

# 2. A clean restart, 3 s down: the backfill schedules fill the gap, 'lt' fires once.
before=$(q -c "SELECT fired_count FROM a2_schedules WHERE name = 'lt'")
cluster stop
sleep 3
cluster start
sleep 2
check "after a clean restart"
n=$(q -c "SELECT max(n) FROM (SELECT count(*) n FROM sched_ticks WHERE missed = 'backfill' GROUP BY name) x")
((n >= 7)) || fail "after the restart a backfill schedule has only $n ticks (the down time not backfilled)"
after=$(q -c "SELECT fired_count FROM a2_schedules WHERE name = 'lt'")
gap=$(q -c "SELECT max(extract(epoch FROM d))::int FROM (SELECT tick - lag(tick) OVER (ORDER BY idx) d FROM sched_ticks WHERE name = 'lt') x")
((gap >= 3)) || fail "'lt' (latest) has no gap over the down time (largest step ${gap}s): it backfilled"
a2_log "schedules: 'lt' fired $((after - before)) ticks around the restart, largest step ${gap}s"

# 3. Two sessions firing in tight loops beside the background scheduler,
#    then a kill -9 of the postmaster in the middle of it.  Their store
#    clock runs 0 to 400 ms ahead of the wall clock, so they take ticks
#    before, and together with, the scheduler.
loop() {
	while [[ ! -e $tmp/stop ]]; do
		psql -X -At -d a2_sched >>"$tmp/loop-$1.out" 2>&1 <<'SQL' || sleep 0.2
SELECT set_config('a2.now', (clock_timestamp() + random() * interval '400 ms')::text, false) IS NULL;
SELECT count(*) FROM a2_fire_schedules();
SQL
	done
}
loop 1 &
bg_pids+=($!)
loop 2 &
bg_pids+=($!)
sleep 3
check "two sessions and the scheduler racing"
fired_by_loops=$(cat "$tmp"/loop-*.out | awk '$1 ~ /^[0-9]+$/ { s += $1 } END { print s + 0 }')
a2_log "schedules: the two sessions fired $fired_by_loops ticks between them"
((fired_by_loops > 0)) || fail "the two sessions fired nothing: no race took place"
pid=$(head -n 1 "$A2_PGDATA/postmaster.pid")
a2_log "schedules: kill -9 postmaster $pid"
kill -9 "$pid"
sleep 1
cluster start
sleep 3
touch "$tmp/stop"
for pid in "${bg_pids[@]}"; do
	wait "$pid" 2>/dev/null || true
done
bg_pids=()
grep -q 'database system was interrupted' "$A2_PGLOG" || fail "the server log shows no crash recovery"
check "after kill -9 under racing passes"

# 4. One pass holds a due schedule (its transaction open): another pass at
#    the same store clock skips it, and after the first commits finds it
#    moved on.  In 2035, where the wall clock's scheduler sees nothing due.
q -c "SELECT a2_unschedule(name) FROM a2_schedules" >/dev/null
q -c "SET a2.now = '2035-01-01 00:00:00Z'; SELECT a2_schedule('held', '@hourly', 'held', '{\"type\": \"tick\"}')" >/dev/null
psql -X -At -d a2_sched >"$tmp/held.out" 2>&1 <<'SQL' &
BEGIN;
SET LOCAL a2.now = '2035-01-01 01:00:00Z';
SELECT 'held fired ' || count(*) FROM a2_fire_schedules();
SELECT pg_sleep(4) AS holding_the_schedule;
COMMIT;
SQL
held_pid=$!
for _ in $(seq 100); do
	[[ $(q -c "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%holding_the_schedule%' AND state = 'active' AND pid <> pg_backend_pid()") == 1 ]] && break
	sleep 0.1
done
v=$(q -c "SET a2.now = '2035-01-01 01:00:00Z'" -c "SELECT count(*) FROM a2_fire_schedules()" | tail -n 1)
[[ $v == 0 ]] || fail "a second pass fired $v ticks of a schedule the first pass holds"
wait "$held_pid" || fail "the holding pass failed: $(cat "$tmp/held.out")"
grep -q 'held fired 1' "$tmp/held.out" || fail "the holding pass did not fire its tick: $(cat "$tmp/held.out")"
v=$(q -c "SET a2.now = '2035-01-01 01:00:00Z'" -c "SELECT count(*) FROM a2_fire_schedules()" | tail -n 1)
[[ $v == 0 ]] || fail "a pass after the holder committed fired the tick again ($v)"
v=$(q -c "SELECT count(*) FROM a2_events WHERE session_id = 'held'")
[[ $v == 1 ]] || fail "the held tick appended $v events"
check "a held schedule"

cluster stop
echo "schedules: passed"
