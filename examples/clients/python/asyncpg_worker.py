#!/usr/bin/python3
"""examples/clients/python/asyncpg_worker.py: the cookbook's worker on asyncpg.

    A2_URL=...  A2_LISTEN_URL=...  A2_PGBOUNCER=0|1  A2_RESTART='...'  python3 asyncpg_worker.py

Same transcript as psycopg_worker.py (../expected.txt).  Debian 12:
python3-asyncpg (0.27).  Run by test/suites/86-cookbook.sh direct and
through pgbouncer; docs/clients.md quotes the parts between [name] and
[/name] markers.
"""

import asyncio
import json
import os
import sys

import asyncpg


# [pool]
# asyncpg sends jsonb as text and returns it as str unless told otherwise:
# a codec on every connection the pool opens turns Python values into JSON
# and back.  Through pgbouncer in transaction mode: statement_cache_size=0
# (else "prepared statement "__asyncpg_stmt_N__" does not exist", 26000).
async def init_connection(conn):
    await conn.set_type_codec("jsonb", schema="pg_catalog",
                              encoder=json.dumps, decoder=json.loads)


async def create_pool(url, behind_pgbouncer):
    return await asyncpg.create_pool(url, min_size=1, max_size=8, init=init_connection,
                                     statement_cache_size=0 if behind_pgbouncer else 100)
# [/pool]


# [json]
# With the codec, pass Python lists and dicts for jsonb; results are
# Python values too.
async def append(pool, session_id, events):
    return await pool.fetchval("SELECT a2_append($1, $2)", session_id, events)


async def read(conn, session_id, after_index=0):
    return await conn.fetchval("SELECT a2_read($1, $2)", session_id, after_index)
# [/json]


# [transaction]
# The handler's writes and a2_complete on one connection, in one
# transaction: conn.transaction() commits at the end of the block and
# rolls back when an exception leaves it.
async def ship(conn, session_id, ev, children):
    for item in ev["payload"]["items"]:
        await conn.execute("INSERT INTO shipments (order_id, sku, qty) VALUES ($1, $2, $3)",
                           session_id, item["sku"], item["qty"])
    return await conn.fetchval("SELECT a2_complete($1, $2, $3, $4)",
                               session_id, ev["index"], ev["attemptCount"], children)


async def ship_in_transaction(pool, session_id, ev, children):
    async with pool.acquire() as conn, conn.transaction():
        return await ship(conn, session_id, ev, children)
# [/transaction]


# [retry]
# asyncpg's pool replaces a connection it knows is closed; a statement that
# was on one when the server went away fails with a connection error.
# a2 calls are safe to repeat.
CONNECTION_ERRORS = (OSError, asyncpg.ConnectionDoesNotExistError,
                     asyncpg.CannotConnectNowError, asyncpg.AdminShutdownError,
                     asyncpg.InterfaceError)


async def retrying(call, tries=120, delay=0.25):
    for i in range(1, tries + 1):
        try:
            return await call()
        except CONNECTION_ERRORS as err:
            if i == tries:
                raise
            print(f"retrying after: {err!r}", file=sys.stderr)
            await asyncio.sleep(delay)
# [/retry]


# [follow]
# LISTEN on a direct connection of its own (through pgbouncer in
# transaction mode the LISTEN stays on a server connection other clients
# then use).  asyncpg does not reconnect it: a termination listener does,
# and after every (re)connect the follower LISTENs, then reads what it
# missed.
class Follower:
    def __init__(self, listen_url, session_ids):
        self.url = listen_url
        self.last_seen = {s: 0 for s in session_ids}
        self.listens = 0
        self.changed = asyncio.Condition()
        self.lock = asyncio.Lock()         # one catch-up read at a time
        self.conn = None
        self.task = asyncio.create_task(self._connect())

    async def _catch_up(self, session_id):
        async with self.lock:
            events = await read(self.conn, session_id, self.last_seen[session_id])
            if events:
                self.last_seen[session_id] = events[-1]["index"]
        async with self.changed:
            self.changed.notify_all()

    def _notified(self, conn, pid, channel, payload):
        p = json.loads(payload)                # {"sessionId", "index"}
        if p["index"] > self.last_seen.get(p["sessionId"], float("inf")):
            asyncio.create_task(self._catch_up(p["sessionId"]))

    def _lost(self, conn):
        self.task = asyncio.create_task(self._connect())

    async def _connect(self):
        delay = 0.1
        while True:
            try:
                self.conn = await asyncpg.connect(self.url)
                await init_connection(self.conn)
                await self.conn.add_listener("a2_events", self._notified)
                for session_id in self.last_seen:
                    await self._catch_up(session_id)
                self.conn.add_termination_listener(self._lost)
                async with self.changed:
                    self.listens += 1
                    self.changed.notify_all()
                return
            except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError):
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
# [/follow]

    async def wait(self, predicate, timeout=15):
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(predicate), timeout)

    async def close(self):
        if self.conn is not None:
            self.conn.remove_termination_listener(self._lost)
            await self.conn.close()


def check(ok, what):
    if not ok:
        raise SystemExit(f"check failed: {what}")


class HandlerFailed(Exception):
    pass


async def main():
    pool = await create_pool(os.environ["A2_URL"], os.environ.get("A2_PGBOUNCER") == "1")
    count = lambda pattern: pool.fetchval(   # noqa: E731
        "SELECT count(*) FROM shipments WHERE order_id LIKE $1", pattern)
    claim = lambda s, holder, ttl: pool.fetchval(   # noqa: E731
        "SELECT a2_claim($1, $2, $3)", s, holder, ttl)
    complete = lambda s, index, attempt: pool.fetchval(   # noqa: E731
        "SELECT a2_complete($1, $2, $3)", s, index, attempt)

    # 1. JSON in and out.
    order = {"id": "order-1/placed", "type": "order.placed", "lane": "payments",
             "payload": {"items": [{"sku": "tea", "qty": 2}, {"sku": "cups", "qty": 6}],
                         "note": "thé ☕ — 東京"}}
    appended = await append(pool, "order-1", [order])
    print(f"append: order-1 index {appended['events'][0]['index']}, "
          f"hasPending {str(appended['hasPending']).lower()}")
    stored = (await read(pool, "order-1"))[0]
    check(stored["payload"] == order["payload"], "payload round trip")
    print(f"read: payload round trip, note \"{stored['payload']['note']}\", "
          f"{len(stored['payload']['items'])} items")

    # 2. Errors carry their SQLSTATE.
    # [errors]
    try:
        await append(pool, "order-1", {"not": "an array"})
    except asyncpg.PostgresError as err:
        print(f"error: {err.sqlstate} {err.message}")
    # [/errors]

    # 3. Claim, then complete inside the app's transaction.
    c = await claim("order-1", "worker-1", 30000)
    ev = c["events"][0]
    print(f"claim: {c['outcome']} [{','.join(str(e['index']) for e in c['events'])}] "
          f"attempt {ev['attemptCount']}")
    paid = [{"id": "order-1/paid", "type": "payment.captured", "payload": {"amount": 7.5}}]
    try:
        async with pool.acquire() as conn, conn.transaction():
            await ship(conn, "order-1", ev, paid)
            raise HandlerFailed()
    except HandlerFailed:
        pass
    unprocessed = (await read(pool, "order-1"))[0]["processedAt"] is None
    print(f"rollback: shipments {await count('order-1')}, "
          f"event 1 {'unprocessed' if unprocessed else 'processed'}")
    done = await ship_in_transaction(pool, "order-1", ev, paid)
    print(f"complete: {done['outcome']}, child index {done['events'][0]['index']}, "
          f"shipments {await count('order-1')}")

    # 4. Stale work, both ways.
    await claim("order-1", "worker-1", 0)
    check((await claim("order-1", "worker-2", 30000))["events"][0]["attemptCount"] == 2,
          "second attempt")
    late = await complete("order-1", 2, 1)
    fenced = ""
    try:
        await append(pool, "order-1",
                     [{"type": "refund.requested", "cause": {"index": 2, "attempt": 1}}])
    except asyncpg.PostgresError as err:
        if err.sqlstate != "Z2002":
            raise
        fenced = err.sqlstate
    print(f"stale: complete {late['outcome']}, caused append {fenced}")
    check((await complete("order-1", 2, 2))["outcome"] == "completed", "complete attempt 2")

    # 5. LISTEN and catch up.
    follower = Follower(os.environ["A2_LISTEN_URL"], ["order-1"])
    await follower.wait(lambda: follower.last_seen["order-1"] >= 2)
    await append(pool, "order-1", [{"id": "order-1/packed", "type": "order.packed",
                                    "settled": True}])
    await follower.wait(lambda: follower.last_seen["order-1"] >= 3)
    print(f"listen: caught up to 2, heard {follower.last_seen['order-1']}")

    # 6. A server restart.
    restart = await asyncio.create_subprocess_exec("sh", "-c", os.environ["A2_RESTART"])
    check(await restart.wait() == 0, "restart")
    shipped = await retrying(lambda: append(pool, "order-1", [
        {"id": "order-1/shipped", "type": "order.shipped", "settled": True}]))
    await follower.wait(lambda: follower.last_seen["order-1"] >= 4)
    print(f"restart: appended {shipped['events'][0]['index']}, "
          f"listener caught up to {follower.last_seen['order-1']}")
    await follower.wait(lambda: follower.listens >= 2)
    await retrying(lambda: append(pool, "order-1", [
        {"id": "order-1/delivered", "type": "order.delivered", "settled": True}]))
    await follower.wait(lambda: follower.last_seen["order-1"] >= 5)
    print(f"restart: listener heard {follower.last_seen['order-1']}")

    # 7. A burst: 8 workers at once, 5 orders each.
    async def worker(w):
        for i in range(5):
            session_id = f"burst-{w}-{i}"
            await append(pool, session_id, [{"id": f"{session_id}/placed", "type": "order.placed",
                                             "payload": {"items": [{"sku": "tea", "qty": 1}]}}])
            c = await claim(session_id, f"worker-{w}", 30000)
            r = await ship_in_transaction(pool, session_id, c["events"][0], [])
            check(r["outcome"] == "completed", session_id)

    await asyncio.gather(*(worker(w) for w in range(8)))
    print(f"burst: {await count('burst-%')} orders shipped by 8 workers")

    await follower.close()
    await pool.close()
    print("done")


asyncio.run(main())
