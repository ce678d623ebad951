#!/usr/bin/python3
"""examples/clients/python/psycopg_worker.py: the cookbook's worker on psycopg 3.

    A2_URL=...  A2_LISTEN_URL=...  A2_PGBOUNCER=0|1  A2_RESTART='...'  python3 psycopg_worker.py

A2_URL is where the app's queries go (the server, or pgbouncer in
transaction mode), A2_LISTEN_URL a direct connection for LISTEN, A2_RESTART
a shell command that restarts the server (the test's stand-in for one).
Prints the transcript in ../expected.txt.  Debian 12: python3-psycopg
(3.1) and python3-psycopg-pool.  Run by test/suites/86-cookbook.sh direct
and through pgbouncer; docs/clients.md quotes the parts between [name] and
[/name] markers.
"""

import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import psycopg
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool

# [pool]
# Through pgbouncer in transaction mode: prepare_threshold=None (psycopg
# otherwise prepares a statement it ran 5 times on a connection, under a
# name the next server connection does not know).
behind_pgbouncer = os.environ.get("A2_PGBOUNCER") == "1"
pool = ConnectionPool(os.environ["A2_URL"], min_size=1, max_size=8, kwargs={
    "autocommit": True,
    "prepare_threshold": None if behind_pgbouncer else 5,
})
# [/pool]


# [json]
# jsonb arguments: wrap them in Jsonb (a Python list would be sent as a
# PostgreSQL array).  jsonb results arrive as dicts and lists.
def append(session_id, events):
    with pool.connection() as conn:
        return conn.execute("SELECT a2_append(%s, %s)",
                            [session_id, Jsonb(events)]).fetchone()[0]


def read(session_id, after_index=0):
    with pool.connection() as conn:
        return conn.execute("SELECT a2_read(%s, %s)",
                            [session_id, after_index]).fetchone()[0]
# [/json]


# [transaction]
# The handler's writes and a2_complete on one connection, in one
# transaction: both commit or neither does.
def ship(conn, session_id, ev, children):
    for item in ev["payload"]["items"]:
        conn.execute("INSERT INTO shipments (order_id, sku, qty) VALUES (%s, %s, %s)",
                     [session_id, item["sku"], item["qty"]])
    return conn.execute("SELECT a2_complete(%s, %s, %s, %s)",
                        [session_id, ev["index"], ev["attemptCount"],
                         Jsonb(children)]).fetchone()[0]


def ship_in_transaction(session_id, ev, children):
    # conn.transaction() commits at the end of the block, and rolls back
    # when an exception leaves it
    with pool.connection() as conn, conn.transaction():
        return ship(conn, session_id, ev, children)
# [/transaction]


# [retry]
# After a restart, the pool's idle connections are dead: the first
# statement on one fails with OperationalError.  pool.check() drops them;
# then repeat the call (a2 calls are safe to repeat: an append with ids
# replays, a completion of the same attempt returns the stored children).
def retrying(call, tries=120, delay=0.25):
    for i in range(1, tries + 1):
        try:
            return call()
        except psycopg.OperationalError as err:
            if i == tries:
                raise
            print(f"retrying after: {err}".strip(), file=sys.stderr)
            pool.check()
            time.sleep(delay)
# [/retry]


# [follow]
# LISTEN on a direct connection of its own, in a thread: through pgbouncer
# in transaction mode the LISTEN would stay on a server connection other
# clients then use.  After every (re)connect: LISTEN, then read what was
# missed.  Reads go through the pool: a query on the listening connection
# would hand notifications arriving meanwhile to add_notify_handler
# callbacks instead of to notifies().
class Follower:
    def __init__(self, listen_url, session_ids):
        self.last_seen = {s: 0 for s in session_ids}
        self.listens = 0
        self.cond = threading.Condition()
        threading.Thread(target=self._run, args=(listen_url,), daemon=True).start()

    def _catch_up(self, session_id):
        events = read(session_id, self.last_seen[session_id])
        with self.cond:
            if events:
                self.last_seen[session_id] = events[-1]["index"]
            self.cond.notify_all()

    def _run(self, listen_url):
        delay = 0.1
        while True:
            try:
                with psycopg.connect(listen_url, autocommit=True) as conn:
                    conn.execute("LISTEN a2_events")
                    for session_id in self.last_seen:
                        self._catch_up(session_id)
                    with self.cond:
                        self.listens += 1
                        self.cond.notify_all()
                    delay = 0.1
                    for n in conn.notifies():          # blocks; ends with an error
                        p = json.loads(n.payload)      # {"sessionId", "index"}
                        if p["index"] > self.last_seen.get(p["sessionId"], float("inf")):
                            self._catch_up(p["sessionId"])
            except psycopg.OperationalError:
                time.sleep(delay)
                delay = min(delay * 2, 2.0)
# [/follow]

    def wait(self, predicate, timeout=15):
        with self.cond:
            if not self.cond.wait_for(predicate, timeout):
                raise SystemExit("check failed: the follower did not get there")


def check(ok, what):
    if not ok:
        raise SystemExit(f"check failed: {what}")


def count(pattern):
    with pool.connection() as conn:
        return conn.execute("SELECT count(*) FROM shipments WHERE order_id LIKE %s",
                            [pattern]).fetchone()[0]


def claim(session_id, holder, ttl_ms):
    with pool.connection() as conn:
        return conn.execute("SELECT a2_claim(%s, %s, %s)",
                            [session_id, holder, ttl_ms]).fetchone()[0]


def complete(session_id, index, attempt):
    with pool.connection() as conn:
        return conn.execute("SELECT a2_complete(%s, %s, %s)",
                            [session_id, index, attempt]).fetchone()[0]


pool.wait()

# 1. JSON in and out.
order = {"id": "order-1/placed", "type": "order.placed", "lane": "payments",
         "payload": {"items": [{"sku": "tea", "qty": 2}, {"sku": "cups", "qty": 6}],
                     "note": "thé ☕ — 東京"}}
appended = append("order-1", [order])
print(f"append: order-1 index {appended['events'][0]['index']}, "
      f"hasPending {str(appended['hasPending']).lower()}")
stored = read("order-1")[0]
check(stored["payload"] == order["payload"], "payload round trip")
print(f"read: payload round trip, note \"{stored['payload']['note']}\", "
      f"{len(stored['payload']['items'])} items")

# 2. Errors carry their SQLSTATE.
# [errors]
try:
    append("order-1", {"not": "an array"})
except psycopg.Error as err:
    print(f"error: {err.sqlstate} {err.diag.message_primary}")
# [/errors]

# 3. Claim, then complete inside the app's transaction.
c = claim("order-1", "worker-1", 30000)
ev = c["events"][0]
print(f"claim: {c['outcome']} [{','.join(str(e['index']) for e in c['events'])}] "
      f"attempt {ev['attemptCount']}")
paid = [{"id": "order-1/paid", "type": "payment.captured", "payload": {"amount": 7.5}}]


class HandlerFailed(Exception):
    pass


try:
    with pool.connection() as conn, conn.transaction():
        ship(conn, "order-1", ev, paid)
        raise HandlerFailed()              # all of it rolls back
except HandlerFailed:
    pass
unprocessed = read("order-1")[0]["processedAt"] is None
print(f"rollback: shipments {count('order-1')}, "
      f"event 1 {'unprocessed' if unprocessed else 'processed'}")

done = ship_in_transaction("order-1", ev, paid)
print(f"complete: {done['outcome']}, child index {done['events'][0]['index']}, "
      f"shipments {count('order-1')}")

# 4. Stale work, both ways.
claim("order-1", "worker-1", 0)
check(claim("order-1", "worker-2", 30000)["events"][0]["attemptCount"] == 2, "second attempt")
# [stale]
late = complete("order-1", 2, 1)          # {"outcome": "superseded"}
fenced = ""
try:
    append("order-1", [{"type": "refund.requested", "cause": {"index": 2, "attempt": 1}}])
except psycopg.Error as err:
    if err.sqlstate != "Z2002":
        raise
    fenced = err.sqlstate                  # the attempt no longer owns the event
# [/stale]
print(f"stale: complete {late['outcome']}, caused append {fenced}")
check(complete("order-1", 2, 2)["outcome"] == "completed", "complete attempt 2")

# 5. LISTEN and catch up.
follower = Follower(os.environ["A2_LISTEN_URL"], ["order-1"])
follower.wait(lambda: follower.last_seen["order-1"] >= 2)
append("order-1", [{"id": "order-1/packed", "type": "order.packed", "settled": True}])
follower.wait(lambda: follower.last_seen["order-1"] >= 3)
print(f"listen: caught up to 2, heard {follower.last_seen['order-1']}")

# 6. A server restart.
subprocess.run(["sh", "-c", os.environ["A2_RESTART"]], check=True)
shipped = retrying(lambda: append("order-1", [{"id": "order-1/shipped", "type": "order.shipped",
                                               "settled": True}]))
follower.wait(lambda: follower.last_seen["order-1"] >= 4)
print(f"restart: appended {shipped['events'][0]['index']}, "
      f"listener caught up to {follower.last_seen['order-1']}")
follower.wait(lambda: follower.listens >= 2)
retrying(lambda: append("order-1", [{"id": "order-1/delivered", "type": "order.delivered",
                                     "settled": True}]))
follower.wait(lambda: follower.last_seen["order-1"] >= 5)
print(f"restart: listener heard {follower.last_seen['order-1']}")


# 7. A burst: 8 worker threads at once, 5 orders each.
def worker(w):
    for i in range(5):
        session_id = f"burst-{w}-{i}"
        append(session_id, [{"id": f"{session_id}/placed", "type": "order.placed",
                             "payload": {"items": [{"sku": "tea", "qty": 1}]}}])
        c = claim(session_id, f"worker-{w}", 30000)
        check(ship_in_transaction(session_id, c["events"][0], [])["outcome"] == "completed", session_id)


with ThreadPoolExecutor(8) as ex:
    list(ex.map(worker, range(8)))
print(f"burst: {count('burst-%')} orders shipped by 8 workers")

pool.close()
print("done")
