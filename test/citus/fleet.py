#!/usr/bin/python3
"""
test/citus/fleet.py: work discovery across shards in distributed mode
(SPEC 7.6), on the cluster test/citus/run.sh started.

    fleet.py COORD_PORT W1_PORT W2_PORT

Checks, each printed as "ok   ..." or "FAIL ..."; exits 1 on any failure:

  disjoint   two transactions calling a2_claim_next on one worker get
             disjoint sessions, and the second never waits for the first
             (lock_timeout 2 s: a wait would raise 55P03); a session whose
             lock a third transaction holds (an append in progress) is
             skipped even though it is the oldest available
  served     fleet workers on both workers (and one on the coordinator)
             claim with max_sessions = 1 and complete until nothing is
             left: every event is claimed exactly once, every shard that
             had work was served, and on each worker the sessions came
             out oldest available first (the node's shards merged in one
             order, so none waits behind another shard's newer work)
  local      a claim_next on a worker involves no other node: with
             citus.log_remote_commands on it sends nothing
  flat       the buffers one claim_next reads on a worker do not grow with
             finished events (0 vs 3,000 on the node)
  list       a2_list_sessions pages (7 at a time) across shards give every
             session once, in session-id order, with the right counts
  drop       a2_drop_finished_sessions on the coordinator drops exactly the
             finished idle sessions, skips one another transaction holds,
             and an append after the drop continues after the high-water mark
"""
import json
import sys
import time

import psycopg

coord, w1, w2 = (int(p) for p in sys.argv[1:4])
failed = 0


def report(ok, what):
    global failed
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failed += 1


def connect(port, autocommit=True):
    return psycopg.connect(host="127.0.0.1", port=port, dbname="postgres",
                           user="postgres", autocommit=autocommit)


def one(conn, sql, *args):
    return conn.execute(sql, args).fetchone()[0]


def claim_next(conn, holder, n, ttl=60000):
    return one(conn, "SELECT a2_claim_next(%s, %s, %s)", holder, ttl, n)


c = connect(coord)
node_of = {}
# session names unique to this run, so that a rerun on a kept cluster
# (A2_CITUS_KEEP=1) does not meet its own earlier sessions
tag = "%x" % int(time.time() * 1000)


def port_of(session):
    if session not in node_of:
        node_of[session] = one(c, "SELECT citus_test_port(%s)", session)
    return node_of[session]


def shard_of(session):
    return one(c, "SELECT get_shard_id_for_distribution_column('a2_events', %s::text)",
               session)


def clear():
    """Nothing claimable left from earlier checks: settle every event."""
    c.execute("UPDATE a2_events SET processed_at = 0"
              " WHERE processed_at IS NULL")


def append(prefix, count, events_each=1):
    names = []
    for i in range(count):
        s = "%s%s-%03d" % (prefix, tag, i)
        batch = [{"id": "%s-e%d" % (s, k), "type": "t"} for k in range(events_each)]
        one(c, "SELECT a2_append(%s, %s)", s, json.dumps(batch))
        names.append(s)
    return names


# --- disjoint -----------------------------------------------------------------
clear()
sessions = append("fd", 40)
on_w1 = [s for s in sessions if port_of(s) == w1]
a = connect(w1, autocommit=False)
b = connect(w1, autocommit=False)
h = connect(w1, autocommit=False)
b.execute("SET lock_timeout = '2s'")
# h holds the oldest w1 session's lock, as an append in progress does
one(h, "SELECT a2_append(%s, %s)", on_w1[0], json.dumps([{"type": "held"}]))
got_a = {x["sessionId"] for x in claim_next(a, "a", 5)["claims"]}
try:
    got_b = {x["sessionId"] for x in claim_next(b, "b", 5)["claims"]}
    waited = None
except psycopg.Error as e:
    got_b, waited = set(), e.sqlstate
report(waited is None and len(got_a) == 5 and len(got_b) == 5 and not (got_a & got_b)
       and on_w1[0] not in got_a | got_b
       and all(port_of(s) == w1 for s in got_a | got_b),
       "disjoint: two open transactions on one worker claimed %d and %d sessions,"
       " disjoint, without waiting (error %s); the held oldest session was skipped"
       % (len(got_a), len(got_b), waited))
for conn in (a, b, h):
    conn.rollback()
    conn.close()

# --- served -------------------------------------------------------------------
clear()
sessions = append("fs", 64)
shards_with_work = {shard_of(s) for s in sessions}
claimed = {}           # session -> times claimed
order = {w1: [], w2: [], coord: []}
conns = {p: connect(p) for p in (w1, w2, coord)}
idle = set()
while len(idle) < 3:
    for p, conn in conns.items():
        if p in idle:
            continue
        got = claim_next(conn, "fleet-%d" % p, 1)["claims"]
        if not got:
            idle.add(p)
            continue
        s = got[0]["sessionId"]
        ev = got[0]["events"][0]
        claimed[s] = claimed.get(s, 0) + 1
        order[p].append((ev["createdAt"], s))
        one(conn, "SELECT a2_complete(%s, %s, %s, '[]')", s, ev["index"],
            ev["attemptCount"])
served_shards = {shard_of(s) for s in claimed}
oldest_first = all(order[p] == sorted(order[p]) for p in (w1, w2))
report(sorted(claimed) == sorted(sessions) and set(claimed.values()) == {1}
       and served_shards == shards_with_work and oldest_first
       and order[w1] and order[w2]
       and all(port_of(s) == w1 for _, s in order[w1])
       and all(port_of(s) == w2 for _, s in order[w2]),
       "served: %d sessions on %d shards each claimed once (w1 %d, w2 %d,"
       " coordinator %d), every shard served, oldest first on each worker"
       % (len(claimed), len(served_shards), len(order[w1]), len(order[w2]),
          len(order[coord])))
for conn in conns.values():
    conn.close()

# --- local --------------------------------------------------------------------
clear()
append("fl", 8)
n = connect(w1)
n.execute("SET citus.log_remote_commands = on")
notices = []
n.add_notice_handler(lambda d: notices.append(d.message_primary))
n.execute("BEGIN")
got = claim_next(n, "local", 8)["claims"]
n.execute("ROLLBACK")
remote = [m for m in notices if "issuing" in m]
report(got and not remote,
       "local: a claim_next on a worker (%d sessions) sent %d commands to other nodes"
       % (len(got), len(remote)))
n.close()


# --- flat ---------------------------------------------------------------------
def claim_buffers(conn):
    conn.execute("BEGIN")
    plan = one(conn, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON)"
               " SELECT a2_claim_next('flat', 60000, 1)")
    conn.execute("ROLLBACK")
    top = plan[0]["Plan"]
    return top["Shared Hit Blocks"] + top["Shared Read Blocks"]


clear()
append("ff", 16)
n = connect(w1)
claim_buffers(n)                       # plans and caches warmed
before = min(claim_buffers(n) for _ in range(3))
# finished events written directly (3,000 appends would take a while)
c.execute("INSERT INTO a2_events (session_id, idx, event_type, payload, event_id,"
          "                       created_at, lane_ready, processed_at)"
          " SELECT 'ff-done-' || g, 1, 't', '{}', 'ffd-' || g, 0, true, 0"
          "   FROM generate_series(1, 3000) g")
c.execute("VACUUM ANALYZE a2_events")
claim_buffers(n)
after = min(claim_buffers(n) for _ in range(3))
report(after <= before * 1.5 + 8,
       "flat: one claim_next on a worker read %d buffers with 0 finished events"
       " and %d with 3,000 more" % (before, after))
n.close()

# --- list ---------------------------------------------------------------------
expected = [r[0] for r in c.execute(
    "SELECT session_id FROM a2_events WHERE session_id LIKE %s"
    " GROUP BY session_id ORDER BY session_id COLLATE \"C\"", ("fs%s-%%" % tag,)).fetchall()]
pages, cursor, seen, counts_ok = 0, None, [], True
while True:
    page = one(c, "SELECT a2_list_sessions(%s, %s, 7)", "fs%s-" % tag, cursor)
    pages += 1
    for x in page["sessions"]:
        seen.append(x["sessionId"])
        counts_ok &= x["eventCount"] == 1 and x["pendingCount"] == 0 \
            and x["attemptCount"] == 1
    cursor = page["cursor"]
    if cursor is None or pages > 100:
        break
report(seen == expected and counts_ok and pages == 10,
       "list: %d pages of 7 gave %d sessions in order, counts right: %s"
       % (pages, len(seen), seen == expected and counts_ok))

# --- drop ---------------------------------------------------------------------
clear()
c.execute("SELECT a2_drop_finished_sessions(0, 10000)")   # earlier checks' sessions
append("fx", 12)
fx = "fx%s-" % tag
c.execute("UPDATE a2_events SET processed_at = 0"
          " WHERE session_id LIKE %s AND session_id <> %s", (fx + "%", fx + "000"))
holder = connect(coord, autocommit=False)
held = fx + "001"
# an append in progress holds the session lock; its event is not visible yet
one(holder, "SELECT a2_append(%s, '[{\"type\": \"late\"}]') IS NOT NULL", held)
dropped = one(c, "SELECT a2_drop_finished_sessions(0, 1000)")
left = [r[0] for r in c.execute(
    "SELECT DISTINCT session_id FROM a2_events WHERE session_id LIKE %s"
    " ORDER BY 1", (fx + "%",)).fetchall()]
holder.rollback()
holder.close()
nxt = one(c, "SELECT a2_append(%s, '[{\"type\": \"again\"}]') #>> '{events,0,index}'",
          fx + "005")
report(dropped == 10 and left == [fx + "000", held] and nxt == "2",
       "drop: a2_drop_finished_sessions dropped %d of 12 (unfinished and held"
       " ones left: %s), an append after it got index %s" % (dropped, left, nxt))

c.close()
sys.exit(1 if failed else 0)
