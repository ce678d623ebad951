#!/usr/bin/python3
"""test/reentry/driver.py: a2 calls that re-enter a2 through triggers, under
concurrent maintenance.

    /usr/bin/python3 test/reentry/driver.py CONNINFO SECONDS WORKERS SLEEP_MS

CONNINFO names a database prepared with CREATE EXTENSION a2 and
test/reentry/setup.sql (triggers on every a2 table that call a2 again and
write to app.audit through its bare name).  For SECONDS:

  - WORKERS worker threads, each on its own three sessions and presence
    namespace, loop over the whole protocol: append (with lanes), claim,
    put_snapshots pinning the claimed events (so a head moves to history),
    complete (with a child) or fail, redrive, read_state, presence_set and
    presence_read, claim_next (completing whatever it got, mirrors
    included) and now and then a2_drop_session.  One transaction per call,
    search_path = app, public.  Every row an a2 statement writes fires the
    triggers; each a2_events insert sleeps SLEEP_MS in its trigger before
    its nested a2_append, the window in which ANALYZE invalidates the plan
    the outer call is still running.  Workers with an even number are
    "audit" workers (reentry.audit = on: the bare-name INSERT INTO audit
    runs); odd ones set reentry.audit = off, so that a failing audit insert
    cannot hide a crash of the nested calls.
  - one thread runs ANALYZE on a2_events (every fifth time another a2
    table) back to back;
  - one thread cycles VACUUM, ALTER TABLE ... ADD COLUMN, ALTER TABLE ...
    DROP COLUMN and REINDEX TABLE CONCURRENTLY over the a2 tables,
    a2_events every other time.

Every worker call must succeed: any SQLSTATE is unexpected (READ COMMITTED,
no contract error is possible on these paths, and docs/semantics.md,
"Isolation and re-entrancy", rules out 40P01) -- with one exception: a
completion of an event that a2_claim_next handed out from another worker's
session may find that session dropped by its owner in between (its
a2_drop_session with force), and Z2003 is then the contract's answer.
Maintenance runs with lock_timeout = 2s and may only time out on a lock
(55P03) or lose a deadlock (40P01: ANALYZE and REINDEX CONCURRENTLY wait
for each other); everything else is unexpected.  The invalid indexes a
REINDEX CONCURRENTLY that lost leaves behind are dropped.  A lost connection
(a crashed backend) is counted and the thread reconnects once the server is
back.

Prints one JSON object (counts per operation and outcome, maintenance
counts, unexpected errors, lost connections) and exits 0 when nothing
unexpected happened and no connection was lost, 1 otherwise.
"""

import collections
import json
import random
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

MAINT_EXPECTED = {"55P03", "40P01"}
REDUCER = "r"


class Run:
    def __init__(self, conninfo, seconds):
        self.conninfo = conninfo
        self.deadline = time.monotonic() + seconds
        self.lock = threading.Lock()
        self.outcomes = collections.Counter()   # (op, outcome)
        self.maint = collections.Counter()      # (action, table-kind, outcome)
        self.unexpected = []
        self.lost = 0
        self.cycles = collections.Counter()     # worker -> cycles

    def over(self):
        return time.monotonic() >= self.deadline

    def count(self, op, outcome):
        with self.lock:
            self.outcomes[(op, outcome)] += 1

    def bad(self, who, what, err):
        with self.lock:
            if len(self.unexpected) < 20:
                self.unexpected.append("%s: %s: %s %s" % (
                    who, what, getattr(err, "sqlstate", None), str(err).strip().splitlines()[0]))
            else:
                self.unexpected.append(None)

    def lost_connection(self, who, err):
        with self.lock:
            self.lost += 1
            if len(self.unexpected) < 20:
                self.unexpected.append("%s: connection lost: %s" % (who, str(err).strip().splitlines()[0]))


def connect(run, options):
    """Connects, waiting up to 60 s for a server that is restarting."""
    end = time.monotonic() + 60
    while True:
        try:
            return psycopg.connect(run.conninfo, autocommit=True, options=options,
                                   prepare_threshold=None)
        except psycopg.OperationalError:
            if time.monotonic() > end:
                raise
            time.sleep(0.5)


class Caller:
    """One connection; call() runs one statement in its own transaction."""

    def __init__(self, run, name, options, record=True):
        self.run = run
        self.name = name
        self.options = options
        self.record = record
        self.conn = connect(run, options)

    def call(self, op, sql, params=()):
        """The first column of the first row (None for a utility statement), or raises Failed."""
        try:
            cur = self.conn.execute(sql, params)
            row = cur.fetchone() if cur.description is not None else None
        except psycopg.Error as err:
            if self.conn.broken or self.conn.closed or err.sqlstate is None or \
                    err.sqlstate.startswith("08") or err.sqlstate in ("57P01", "57P02", "57P03"):
                self.run.lost_connection(self.name, err)
                try:
                    self.conn.close()
                except psycopg.Error:
                    pass
                self.conn = connect(self.run, self.options)
                raise Failed(op, "lost") from err
            if self.record:
                self.run.count(op, err.sqlstate)
            raise Failed(op, err.sqlstate) from err
        if self.record:
            self.run.count(op, "ok")
        return row[0] if row else None


class Failed(Exception):
    def __init__(self, op, sqlstate):
        super().__init__("%s: %s" % (op, sqlstate))
        self.op = op
        self.sqlstate = sqlstate


def worker(run, k, sleep_ms):
    kind = "a" if k % 2 == 0 else "p"
    name = "%s%d" % (kind, k)
    options = "-c search_path=app,public -c reentry.sleep_ms=%d -c reentry.audit=%s " \
              "-c statement_timeout=60s" % (sleep_ms, "on" if kind == "a" else "off")
    c = Caller(run, name, options)
    sessions = ["%s-s%d" % (name, j) for j in range(3)]
    ns = "%s-room" % name
    n = 0
    while not run.over():
        n += 1
        s = sessions[n % len(sessions)]
        try:
            cycle(c, name, s, ns, n)
        except Failed as f:
            if f.sqlstate != "lost":
                run.bad(name, f.op, f.__cause__)
        run.cycles[name] += 1
    c.conn.close()


def cycle(c, holder, s, ns, n):
    events = [{"id": "%s-e%d-1" % (s, n), "type": "t", "payload": {"n": n}},
              {"id": "%s-e%d-2" % (s, n), "type": "t", "payload": {"n": n}}]
    if n % 3 == 0:
        events[1]["lane"] = "l"
    c.call("append", "SELECT a2_append(%s, %s)", (s, Jsonb(events)))

    claim = c.call("claim", "SELECT a2_claim(%s, %s, 60000)", (s, holder))
    claimed = claim["events"] if claim["outcome"] == "claimed" else []

    head = c.call("read", "SELECT a2_read(%s)", (s,))
    last = head[-1]["index"] if head else 0
    if last >= 2:
        # The older checkpoint is pinned by the claimed events: when the
        # newer one becomes the head, it moves to history.
        c.call("put_snapshots", "SELECT a2_put_snapshots(%s, %s, %s)", (s, REDUCER, Jsonb([
            {"index": last - 1, "state": {"n": n}, "pinEventIndexes": [e["index"] for e in claimed]},
            {"index": last, "state": {"n": n}}])))

    for i, e in enumerate(claimed):
        if n % 5 == 0 and i == 0:
            c.call("fail", "SELECT a2_fail(%s, %s, %s, 'boom', 2)", (s, e["index"], e["attemptCount"]))
        else:
            children = [{"id": "%s-c%d" % (e["id"], e["attemptCount"]), "type": "child"}] \
                if e["type"] == "t" and i == 0 else []
            c.call("complete", "SELECT a2_complete(%s, %s, %s, %s)",
                   (s, e["index"], e["attemptCount"], Jsonb(children)))

    c.call("read_state", "SELECT a2_read_state(%s, %s)", (s, REDUCER))
    c.call("presence_set", "SELECT a2_presence_set(%s, %s, %s, now(), %s, 5000)",
           (ns, "u%d" % (n % 3), Jsonb({"cursor": n, "typing": None if n % 2 else True}), n))
    c.call("presence_read", "SELECT a2_presence_read(%s)", (ns,))

    if n % 6 == 0:
        c.call("redrive", "SELECT a2_redrive(%s)", (s,))
    if n % 4 == 0:
        got = c.call("claim_next", "SELECT a2_claim_next(%s, 60000, 2)", (holder,))
        for cl in got["claims"]:
            for e in cl["events"]:
                try:
                    c.call("complete", "SELECT a2_complete(%s, %s, %s)",
                           (cl["sessionId"], e["index"], e["attemptCount"]))
                except Failed as f:
                    # another worker's session, dropped by its owner since
                    # the claim (counted as "complete Z2003" in outcomes)
                    if f.sqlstate == "Z2003" and not cl["sessionId"].startswith(holder + "-"):
                        continue
                    raise
    if n % 7 == 0:
        c.call("drop_session", "SELECT a2_drop_session(%s, true)", (s,))


def a2_tables(conninfo):
    with psycopg.connect(conninfo, autocommit=True) as conn:
        return [r[0] for r in conn.execute(
            "SELECT c.relname FROM pg_depend d JOIN pg_class c"
            "    ON c.oid = d.objid AND d.classid = 'pg_class'::regclass"
            " WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'"
            "   AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'a2')"
            "   AND c.relkind IN ('r', 'p') ORDER BY 1")]


def maintain(run, name, actions, finish=()):
    """Runs (action, table, sql, pause) from actions() until the end, then finish."""
    c = Caller(run, name, "-c lock_timeout=2s -c statement_timeout=60s", record=False)
    for action, table, sql, pause in actions():
        if run.over():
            break
        kind = "a2_events" if table == "a2_events" else "other"
        try:
            c.call(action, sql)
            outcome = "ok"
        except Failed as f:
            outcome = f.sqlstate
            if f.sqlstate != "lost" and f.sqlstate not in MAINT_EXPECTED:
                run.bad(name, sql, f.__cause__)
            if action == "REINDEX CONCURRENTLY" and f.sqlstate != "lost":
                drop_invalid_indexes(run, c, name, table)
        with run.lock:
            run.maint[(action, kind, outcome)] += 1
        time.sleep(pause)
    for sql in finish:
        try:
            c.call("finish", "SET lock_timeout = 0")
            c.call("finish", sql)
        except Failed as f:
            run.bad(name, sql, f.__cause__)
    c.conn.close()


def drop_invalid_indexes(run, c, name, table):
    """What a REINDEX CONCURRENTLY that lost a deadlock leaves: drop it, as a DBA would."""
    try:
        invalid = c.conn.execute(
            "SELECT i.indexrelid::regclass::text FROM pg_index i"
            " WHERE i.indrelid = %s::regclass AND NOT i.indisvalid", ("public." + table,)).fetchall()
        for (index,) in invalid:
            c.call("cleanup", "DROP INDEX CONCURRENTLY IF EXISTS %s" % index)
            with run.lock:
                run.maint[("cleanup", "invalid index", "dropped")] += 1
    except (psycopg.Error, Failed) as err:
        run.bad(name, "dropping invalid indexes of %s" % table, err)


def analyze_actions(tables):
    others = [t for t in tables if t != "a2_events"]
    i = 0
    while True:
        i += 1
        t = random.choice(others) if i % 5 == 0 else "a2_events"
        yield "ANALYZE", t, "ANALYZE public.%s" % t, 0.02


def ddl_actions(tables):
    others = [t for t in tables if t != "a2_events"]
    i = 0
    while True:
        i += 1
        t = "a2_events" if i % 2 else others[(i // 2) % len(others)]
        yield "VACUUM", t, "VACUUM public.%s" % t, 0.05
        yield "ADD COLUMN", t, "ALTER TABLE public.%s ADD COLUMN IF NOT EXISTS reentry_extra integer" % t, 0.3
        yield "DROP COLUMN", t, "ALTER TABLE public.%s DROP COLUMN IF EXISTS reentry_extra" % t, 0.3
        yield "REINDEX CONCURRENTLY", t, "REINDEX TABLE CONCURRENTLY public.%s" % t, 0.3


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    conninfo, seconds, workers, sleep_ms = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
    run = Run(conninfo, seconds)
    tables = a2_tables(conninfo)
    threads = [threading.Thread(target=worker, args=(run, k, sleep_ms)) for k in range(workers)]
    threads.append(threading.Thread(target=maintain, args=(run, "analyze", lambda: analyze_actions(tables))))
    # Whatever the DDL thread was doing when time ran out, no column stays.
    undo = ["ALTER TABLE public.%s DROP COLUMN IF EXISTS reentry_extra" % t for t in tables]
    threads.append(threading.Thread(target=maintain, args=(run, "ddl", lambda: ddl_actions(tables), undo)))
    started = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    unexpected = [u for u in run.unexpected if u is not None]
    summary = {
        "seconds": round(time.monotonic() - started, 1),
        "workers": workers,
        "sleep_ms": sleep_ms,
        "a2_tables": tables,
        "cycles": sum(run.cycles.values()),
        "calls": sum(run.outcomes.values()),
        "outcomes": {"%s %s" % k: v for k, v in sorted(run.outcomes.items())},
        "maintenance": {"%s %s %s" % k: v for k, v in sorted(run.maint.items())},
        "lost_connections": run.lost,
        "unexpected_count": len(run.unexpected),
        "unexpected": unexpected,
    }
    print(json.dumps(summary, indent=1))
    sys.exit(0 if not run.unexpected and run.lost == 0 else 1)


if __name__ == "__main__":
    main()
