#!/usr/bin/python3
"""test/pooler/worker.py: a2 worker loop through a transaction-mode pooler.

    /usr/bin/python3 test/pooler/worker.py POOLED_URL DIRECT_URL [SECONDS] [CLIENTS]

CLIENTS threads, each with its own psycopg 3 connection to POOLED_URL
(pgbouncer, pool_mode=transaction, a pool smaller than CLIENTS), share four
sessions for SECONDS: they append events, claim, and complete what they
claimed with one child each, one transaction per call, the way
docs/operations.md tells a pooled client to work:

  - jsonb arguments go as psycopg's Jsonb (never a Python list or dict);
  - prepare_threshold=None: pgbouncer 1.18 cannot keep named prepared
    statements apart across clients (42P05 / 26000);
  - the clock is set per transaction, set_config('a2.now', t, true) or
    SET LOCAL, never with a session SET.

Half the appends set a transaction-local a2.now of their own (a time in
2001 unique to the append) and must come back with exactly that createdAt;
the others set nothing and must come back with a wall-clock createdAt, so a
clock that leaked from another client's transaction through a shared server
connection is caught.  Then one client drains the sessions, and the store
is checked over DIRECT_URL: every append and completion a client saw
commit is stored as it saw it, every session's indexes are 1..max with no
gap or duplicate, and nothing is left unfinished.  Exit status 0 = pass.

Finally, as a control, one client does a session-level SET a2.now through
the pooler and the others count how many of their plain appends picked it
up: that figure is printed, not asserted (it depends on which server
connection each transaction gets), and shows why docs/operations.md forbids it.
"""

import datetime
import random
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

SESSIONS = ["pool-%d" % i for i in range(4)]
FAKE_BASE = datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)


def iso_ms(dt):
    return dt.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + \
        "%03dZ" % (dt.microsecond // 1000)


class Shared:
    def __init__(self):
        self.lock = threading.Lock()
        self.appended = {}       # event id -> (session, index)
        self.completed = {}      # (session, index) -> attempt
        self.children = {}       # child id -> (session, index)
        self.errors = []
        self.leaks = []
        self.fake_ok = 0
        self.plain_ok = 0
        self.seq = 0

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq


def connect(url):
    return psycopg.connect(url, autocommit=True, prepare_threshold=None)


def append(conn, shared, client, fake):
    sess = random.choice(SESSIONS)
    seq = shared.next_seq()
    eid = "c%d-e%d" % (client, seq)
    events = [{"id": eid, "type": "job", "payload": {"client": client, "seq": seq}}]
    with conn.transaction():
        if fake is not None:
            if seq % 2:
                conn.execute("SELECT set_config('a2.now', %s, true)", [fake.isoformat()])
            else:
                conn.execute("SET LOCAL a2.now = '%s'" % fake.isoformat())
        before = datetime.datetime.now(datetime.timezone.utc)
        res = conn.execute("SELECT a2_append(%s, %s)", [sess, Jsonb(events)]).fetchone()[0]
    ev = res["events"][0]
    created = ev["createdAt"]
    with shared.lock:
        shared.appended[eid] = (sess, ev["index"])
        if fake is not None:
            if created == iso_ms(fake):
                shared.fake_ok += 1
            else:
                shared.errors.append("append with a2.now %s came back with createdAt %s"
                                     % (iso_ms(fake), created))
        elif created.startswith("2001-"):
            shared.leaks.append("plain append %s got createdAt %s" % (eid, created))
        elif created < iso_ms(before - datetime.timedelta(seconds=60)):
            shared.errors.append("plain append %s got createdAt %s" % (eid, created))
        else:
            shared.plain_ok += 1


def work(conn, shared, client, sess):
    res = conn.execute("SELECT a2_claim(%s, %s, %s)", [sess, "w%d" % client, 30000]).fetchone()[0]
    if res["outcome"] != "claimed":
        return 0
    done = 0
    for ev in res["events"]:
        child = "%s/%d/%d/done" % (sess, ev["index"], ev["attemptCount"])
        out = conn.execute("SELECT a2_complete(%s, %s, %s, %s)",
                           [sess, ev["index"], ev["attemptCount"],
                            Jsonb([{"id": child, "type": "done", "settled": True}])]).fetchone()[0]
        if out["outcome"] != "completed":
            with shared.lock:
                shared.errors.append("%s/%d: complete of our own lease: %s" % (sess, ev["index"], out))
            continue
        with shared.lock:
            shared.completed[(sess, ev["index"])] = ev["attemptCount"]
            shared.children[child] = (sess, out["events"][0]["index"])
        done += 1
    return done


def client_loop(url, shared, client, deadline):
    try:
        conn = connect(url)
        while time.time() < deadline:
            r = random.random()
            if r < 0.5:
                fake = None
                if random.random() < 0.5:
                    fake = FAKE_BASE + datetime.timedelta(milliseconds=shared.next_seq())
                append(conn, shared, client, fake)
            else:
                work(conn, shared, client, random.choice(SESSIONS))
        conn.close()
    except Exception as exc:  # any error fails the run
        with shared.lock:
            shared.errors.append("client %d: %s: %s" % (client, type(exc).__name__, exc))


def drain(url, shared):
    conn = connect(url)
    for _ in range(1000):
        if sum(work(conn, shared, 0, s) for s in SESSIONS) == 0:
            left = conn.execute("SELECT count(*) FROM a2_events WHERE processed_at IS NULL").fetchone()[0]
            if left == 0:
                break
            time.sleep(0.05)
    conn.close()


def check(direct, shared):
    problems = []
    with psycopg.connect(direct, autocommit=True) as conn:
        rows = conn.execute("SELECT event_id, session_id, idx, processed_by_attempt, processed_at "
                            "FROM a2_events").fetchall()
        by_id = {r[0]: r for r in rows}
        by_key = {(r[1], r[2]): r for r in rows}
        for eid, (sess, idx) in list(shared.appended.items()) + list(shared.children.items()):
            r = by_id.get(eid)
            if r is None or (r[1], r[2]) != (sess, idx):
                problems.append("%s seen at %s/%s, stored %s" % (eid, sess, idx, r and (r[1], r[2])))
        for (sess, idx), attempt in shared.completed.items():
            r = by_key.get((sess, idx))
            if r is None or r[3] != attempt:
                problems.append("%s/%s completed by attempt %s, stored %s" % (sess, idx, attempt, r and r[3]))
        for sess, n, lo, hi in conn.execute("SELECT session_id, count(*), min(idx), max(idx) "
                                            "FROM a2_events GROUP BY session_id").fetchall():
            if lo != 1 or hi != n:
                problems.append("%s: %d events, indexes %d..%d" % (sess, n, lo, hi))
        unfinished = sum(1 for r in rows if r[4] is None)
        if unfinished:
            problems.append("%d events left unfinished after the drain" % unfinished)
        stored_by_us = len(shared.appended) + len(shared.children)
        if len(rows) != stored_by_us:
            problems.append("%d events stored, clients saw %d commit" % (len(rows), stored_by_us))
    return problems


def control(url, clients):
    """Session-level SET through the pooler: count the plain appends it reaches."""
    bad = connect(url)
    bad.execute("SET a2.now = '1999-01-01 00:00:00+00'")
    leaked = [0]
    total = [0]
    lock = threading.Lock()

    def plain(client):
        conn = connect(url)
        for i in range(20):
            res = conn.execute("SELECT a2_append(%s, %s)",
                               ["pool-control", Jsonb([{"type": "probe", "settled": True}])]).fetchone()[0]
            with lock:
                total[0] += 1
                if res["events"][0]["createdAt"].startswith("1999-"):
                    leaked[0] += 1
        conn.close()

    threads = [threading.Thread(target=plain, args=(c,)) for c in range(clients - 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    bad.execute("RESET a2.now")
    bad.close()
    return leaked[0], total[0]


def main():
    pooled, direct = sys.argv[1], sys.argv[2]
    seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 15
    clients = int(sys.argv[4]) if len(sys.argv) > 4 else 8
    shared = Shared()
    deadline = time.time() + seconds
    threads = [threading.Thread(target=client_loop, args=(pooled, shared, c, deadline))
               for c in range(1, clients + 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    drain(pooled, shared)

    problems = shared.errors + shared.leaks + check(direct, shared)
    print("pooler: %d clients, %.0f s: %d appends (%d with a transaction-local a2.now, all exact; "
          "%d plain, %d got a leaked clock), %d completions"
          % (clients, seconds, len(shared.appended), shared.fake_ok, shared.plain_ok,
             len(shared.leaks), len(shared.completed)))
    leaked, total = control(pooled, clients)
    print("pooler: control, not asserted: a session-level SET a2.now on one client reached "
          "%d of %d plain appends of the others" % (leaked, total))
    for p in problems[:20]:
        print("FAIL: " + p)
    if problems:
        print("pooler: %d problems" % len(problems))
        return 1
    print("pooler: every append, completion and index intact; no clock leaked")
    return 0


if __name__ == "__main__":
    sys.exit(main())
