"""AsyncA2Store: the same behaviour as the sync store, awaited.

The calls are built by the same code as the sync store's (``_calls``), so
these tests check what the asyncio side adds: the method set and
signatures match the sync side, results and errors come back the same,
transaction() commits or rolls back as one, and the stream (catch-up,
live, the LISTEN race, reconnect, polling, paging, close, distributed
mode) behaves as the sync one does.
"""

from __future__ import annotations

import asyncio
import inspect
import itertools
import unittest
from typing import Any, List

import psycopg

from . import helpers as h
from a2_client import (
    A2Store,
    AsyncA2Store,
    AsyncOperations,
    AsyncStream,
    AsyncTransaction,
    Busy,
    Cause,
    Claimed,
    InvalidPayloadError,
    NewEvent,
    NotFoundError,
    Operations,
    Redriven,
    ReturnedEvent,
    Settled,
    Snapshot,
    SnapshotWrite,
    StoredEvent,
    StoreUnavailableError,
    SupersededError,
    Transaction,
)
from a2_client._astore import AsyncA2Store as _AsyncStore

DB = "a2_py_async"
W1 = "a2_py_async_w1"
NO_POLL = 60.0
_n = itertools.count(1)


def session() -> str:
    return f"as-{next(_n)}"


def astore(db: str = DB, **options: Any) -> AsyncA2Store:
    options.setdefault("listen_conninfo", h.direct(db))
    return AsyncA2Store(h.target(db), **options)


async def take(stream: AsyncStream, n: int, seconds: float, what: str) -> List[StoredEvent]:
    async def run() -> List[StoredEvent]:
        out: List[StoredEvent] = []
        async for e in stream:
            out.append(e)
            if len(out) == n:
                break
        return out

    try:
        return await asyncio.wait_for(run(), seconds)
    except asyncio.TimeoutError:
        raise AssertionError(f"timed out after {seconds} s: {what}") from None


async def until(cond: Any, seconds: float, what: str) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + seconds
    while not cond():
        if loop.time() > end:
            raise AssertionError(f"timed out after {seconds} s: {what}")
        await asyncio.sleep(0.01)


def setUpModule() -> None:
    h.fresh_database(DB)
    h.drop_database(W1)
    with h.admin() as c:
        c.execute(f"CREATE DATABASE {W1}")
    with h.admin(DB) as c:
        c.execute("CREATE TABLE shipments (session_id text, item text)")
        c.execute("CREATE SCHEMA fake")
        c.execute("""CREATE FUNCTION fake.a2_read(text, bigint, bigint, integer) RETURNS jsonb
                       LANGUAGE sql AS 'SELECT public.a2_read($1, $2, $3, $4)'""")
        c.execute("CREATE FUNCTION fake.a2_is_distributed() RETURNS boolean LANGUAGE sql AS 'SELECT true'")
        c.execute("""CREATE FUNCTION fake.a2_notify_nodes() RETURNS TABLE (node_name text, node_port integer)
                       LANGUAGE sql AS $$ VALUES ('coord', 1), ('w1', 2) $$""")


def tearDownModule() -> None:
    h.drop_database(DB)
    h.drop_database(W1)


class ParityTest(unittest.TestCase):
    def test_the_async_side_has_every_call_with_the_same_signature(self) -> None:
        def calls(cls: type) -> dict[str, inspect.Signature]:
            return {n: inspect.signature(f) for n, f in vars(cls).items()
                    if callable(f) and not n.startswith("_")}

        sync, aio = calls(Operations), calls(AsyncOperations)
        self.assertEqual(sorted(sync), sorted(aio))
        self.assertEqual(len(sync), 28)  # 21, 0.4.0's cancel and its six dispatch-control calls
        for name in sync:
            self.assertEqual(str(sync[name]), str(aio[name]), name)
            self.assertTrue(inspect.iscoroutinefunction(vars(AsyncOperations)[name]), name)
        for extra in ("stream", "transaction", "using", "close"):
            self.assertEqual(list(inspect.signature(getattr(A2Store, extra)).parameters),
                             list(inspect.signature(getattr(_AsyncStore, extra)).parameters), extra)
        self.assertEqual(list(inspect.signature(A2Store).parameters),
                         list(inspect.signature(_AsyncStore).parameters))
        for extra in ("execute", "savepoint"):
            self.assertTrue(hasattr(Transaction, extra) and hasattr(AsyncTransaction, extra), extra)


class AsyncStoreTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.clock = h.ManualClock()
        self.store = astore(clock=self.clock)

    async def asyncTearDown(self) -> None:
        await self.store.close()

    async def test_the_work_cycle(self) -> None:
        st, s = self.store, session()
        a = await st.append(s, [NewEvent(type="job", payload={"q": [1]}), NewEvent(type="job2", lane="l")])
        self.assertEqual([(e.index, e.payload, e.created_at) for e in a.events],
                         [(1, {"q": [1]}, self.clock()), (2, None, self.clock())])
        c = await st.claim(s, "w", 30_000)
        assert isinstance(c, Claimed)
        self.assertEqual([e.attempt_count for e in c.events], [1, 1])
        self.assertEqual(await st.claim(s, "w", 1), Busy(retry_at=h.ms(self.clock(), 30_000)))
        done = await st.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-c", type="c", settled=True)])
        self.assertEqual([(e.index, e.cause) for e in done.events], [(3, Cause(1, 1))])
        f = await st.fail(s, 2, 1, "boom", 1)
        self.assertEqual((f.outcome, f.failure_count), ("dead_lettered", 1))
        self.assertEqual(await st.claim(s, "w", 1), Settled())
        r = await st.redrive(s, 2)
        self.assertIsInstance(r, Redriven)
        nxt = await st.claim_next("fleet", 1000, 10_000)
        self.assertIn(s, [x.session_id for x in nxt.claims])
        self.assertEqual([x.index for x in await st.read(s, after_index=1)], [2, 3])
        await st.put_snapshots(s, "r", [SnapshotWrite(3, {"n": 3})])
        self.assertEqual((await st.read_state(s, "r")).snapshot, Snapshot(3, {"n": 3}))
        self.assertEqual(len(await st.read_states([s, "none"], "r")), 2)
        await st.presence_set(s, "p", {"f": 1}, at=self.clock(), seen=1, ttl_ms=1000)
        self.assertEqual([(x.field, x.value) for x in await st.presence_read(s)], [("f", 1)])
        self.assertEqual([x.session_id for x in (await st.list_sessions(s)).sessions], [s])
        self.assertEqual([x.index for x in await st.list_snapshots(s)], [3])
        self.assertEqual((await st.metrics()).measured_at, self.clock())
        self.assertIsInstance((await st.notify_status()).mode, str)

    async def test_stale_is_one_error(self) -> None:
        st, s = self.store, session()
        await st.append(s, [NewEvent(type="job")])
        await st.claim(s, "w", 1000)
        self.clock.advance(1000)
        await st.claim(s, "w2", 1000)
        for call in (st.complete(s, 1, 1), st.fail(s, 1, 1, "x", 3),
                     st.append(s, [NewEvent(type="p", cause=Cause(1, 1))])):
            with self.assertRaises(SupersededError) as cm:
                await call
            self.assertEqual((cm.exception.sqlstate, cm.exception.index, cm.exception.attempt), ("Z2002", 1, 1))

    async def test_errors(self) -> None:
        with self.assertRaises(InvalidPayloadError):
            await self.store.append(session(), [{"type": 5}])
        with self.assertRaises(InvalidPayloadError):
            await self.store.read("s", after_index=1.5)  # type: ignore[arg-type]
        with self.assertRaises(NotFoundError):
            await self.store.complete(session(), 1, 1)
        async with AsyncA2Store(h.direct("a2_py_no_such_database")) as missing:
            with self.assertRaises(StoreUnavailableError):
                await missing.read("s")

    async def test_the_clock_rides_in_the_statement(self) -> None:
        async with await psycopg.AsyncConnection.connect(h.target(DB), autocommit=True) as conn:
            st = AsyncA2Store(connection=conn, clock=h.ManualClock("2030-05-05T05:05:05.005+00:00"))
            r = await st.append(session(), [NewEvent(type="t")])
            self.assertEqual(r.events[0].created_at, h.utc("2030-05-05T05:05:05.005+00:00"))
            cur = await conn.execute("SELECT coalesce(current_setting('a2.now', true), '')")
            self.assertEqual(await cur.fetchone(), ("",))

    async def test_transaction(self) -> None:
        st, s = self.store, session()

        async def shipments() -> int:
            with h.admin(DB) as c:
                row = c.execute("SELECT count(*) FROM shipments WHERE session_id = %s", [s]).fetchone()
            return int(row[0]) if row else -1

        await st.append(s, [NewEvent(type="job")])
        await st.claim(s, "w", 30_000)
        with self.assertRaisesRegex(RuntimeError, "boom"):
            async with st.transaction() as tx:
                await tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
                await tx.complete(s, 1, 1)
                raise RuntimeError("boom")
        self.assertEqual(await shipments(), 0)
        with self.assertRaises(SupersededError):
            async with st.transaction() as tx:
                await tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
                try:
                    await tx.complete(s, 1, 2)
                except SupersededError:
                    pass  # swallowed: leaving the block raises it again
        self.assertEqual(await shipments(), 0)
        async with st.transaction() as tx:
            await tx.execute("INSERT INTO shipments VALUES (%s, 'kept')", [s])
            try:
                async with tx.savepoint():
                    await tx.execute("INSERT INTO shipments VALUES (%s, 'dropped')", [s])
                    await tx.append(s, [NewEvent(type="x", cause=Cause(1, 9))])
            except SupersededError:
                pass
            await tx.complete(s, 1, 1)
        self.assertEqual(await shipments(), 1)
        self.assertIsNotNone((await st.read(s))[0].processed_at)


class AsyncStreamTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        self.writer = astore()

    async def asyncTearDown(self) -> None:
        await self.writer.close()

    async def append_n(self, s: str, count: int, start: int = 0) -> None:
        for i in range(count):
            await self.writer.append(s, [NewEvent(type="t", payload=start + i)])

    async def test_catch_up_then_live(self) -> None:
        async with astore(poll_interval=NO_POLL) as store:
            s = session()
            await self.append_n(s, 3)
            it = store.stream(s, start_after=1)
            self.assertEqual([e.index for e in await take(it, 2, 5, "catch-up")], [2, 3])
            live = asyncio.ensure_future(take(it, 2, 5, "live"))
            await asyncio.sleep(0.05)
            await self.append_n(s, 2, 3)
            self.assertEqual([(e.index, e.payload) for e in await live], [(4, 3), (5, 4)])
            self.assertEqual(store.listener.listens, 1)
            it.close()
            with self.assertRaises(StopAsyncIteration):
                await it.__anext__()

    async def test_misses_nothing_while_appends_race_the_listen(self) -> None:
        listened_first = 0
        for rnd in range(60):
            async with astore(poll_interval=NO_POLL, max_size=2) as store:
                s = session()

                async def appends(s: str = s, rnd: int = rnd) -> None:
                    await asyncio.sleep((rnd % 15) / 1000)
                    for i in range(3):
                        await self.writer.append(s, [NewEvent(type="t", payload=i)])

                writing = asyncio.ensure_future(appends())
                got = await take(store.stream(s), 3, 10, f"round {rnd}")
                await writing
                self.assertEqual([e.index for e in got], [1, 2, 3], f"round {rnd}")
                listened_first += store.listener.listens == 1
        self.assertEqual(listened_first, 60)

    async def test_reconnects_after_terminate(self) -> None:
        async with astore(poll_interval=NO_POLL) as store:
            s = session()
            await self.append_n(s, 1)
            it = store.stream(s)
            self.assertEqual([e.index for e in await take(it, 1, 5, "first")], [1])
            pid = store.listener.backend_pid
            self.assertIsNotNone(pid)
            waiting = asyncio.ensure_future(take(it, 1, 10, "appended while down"))
            with h.admin() as c:
                self.assertEqual(c.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone(), (True,))
            await self.append_n(s, 1, 1)
            self.assertEqual([(e.index, e.payload) for e in await waiting], [(2, 1)])
            await until(lambda: store.listener.listens >= 2, 10, "a second LISTEN")
            self.assertNotEqual(store.listener.backend_pid, pid)
            live = asyncio.ensure_future(take(it, 2, 10, "live after reconnect"))
            await asyncio.sleep(0.05)
            await self.append_n(s, 2, 2)
            self.assertEqual([e.index for e in await live], [3, 4])

    async def test_polling(self) -> None:
        async with astore(listen=False, poll_interval=0.1) as store:
            s = session()
            it = store.stream(s)
            got = asyncio.ensure_future(take(it, 2, 5, "polled"))
            await self.append_n(s, 2)
            self.assertEqual([e.index for e in await got], [1, 2])
            self.assertEqual(store.listener.listens, 0)
        async with await psycopg.AsyncConnection.connect(h.direct(DB), autocommit=True) as quiet_conn:
            await quiet_conn.execute("SET a2.notify = 'off'")
            quiet = AsyncA2Store(connection=quiet_conn)
            async with astore(poll_interval=0.2) as store:
                s = session()
                got = asyncio.ensure_future(take(store.stream(s), 2, 2, "polled, nothing announced"))
                await asyncio.sleep(0.1)
                await quiet.append(s, [NewEvent(type="t"), NewEvent(type="t")])
                self.assertEqual([e.index for e in await got], [1, 2])
                self.assertEqual(store.listener.listens, 1)

    async def test_one_listener_paging_and_close(self) -> None:
        store = astore(poll_interval=NO_POLL, page_size=7)
        a, b = session(), session()
        await self.writer.append(a, [NewEvent(type="t", payload=i) for i in range(30)])
        self.assertEqual([e.index for e in await take(store.stream(a, start_after=3), 27, 5, "backlog")],
                         list(range(4, 31)))
        streams = [store.stream(b) for _ in range(3)]
        got = [asyncio.ensure_future(take(it, 1, 5, "one each")) for it in streams]
        await asyncio.sleep(0.05)
        await self.append_n(b, 1)
        for g in got:
            self.assertEqual([e.index for e in await g], [1])
        self.assertEqual(store.listener.listens, 1)
        self.assertEqual(h.count_backends(DB, "query = 'LISTEN a2_events' AND state = 'idle'"), 1)
        waiting = asyncio.ensure_future(streams[0].__anext__())
        await asyncio.sleep(0.05)
        await asyncio.wait_for(store.close(), 3)
        with self.assertRaises(StopAsyncIteration):
            await asyncio.wait_for(waiting, 2)
        self.assertEqual(store.pool_size, 0)
        await until(lambda: h.count_backends(DB, "query LIKE '%%LISTEN a2_events'") == 0, 3, "listener gone")

    async def test_close_right_after_stream(self) -> None:
        for _ in range(5):
            store = astore(poll_interval=NO_POLL, max_size=2)
            pending = asyncio.ensure_future(store.stream(session()).__anext__())
            await asyncio.sleep(0)
            await asyncio.wait_for(store.close(), 3)
            with self.assertRaises(StopAsyncIteration):
                await asyncio.wait_for(pending, 2)

    async def test_bad_input_ends_the_stream(self) -> None:
        async with astore(listen=False) as store:
            it = store.stream("x" * 2000)
            with self.assertRaises(InvalidPayloadError):
                await it.__anext__()
            with self.assertRaises(StopAsyncIteration):
                await it.__anext__()

    async def test_distributed_listens_on_every_node(self) -> None:
        dbs = {"coord": DB, "w1": W1}
        async with astore(schema="fake", poll_interval=NO_POLL,
                          node_connection=lambda node: h.direct(dbs[node.host])) as store:
            s = session()
            it = store.stream(s)
            listener = store.listener
            await until(lambda: len(listener.nodes) == 2 and all(x.listening for x in listener.nodes), 5,
                        "two LISTENs")
            self.assertIs(listener.distributed, True)
            got = asyncio.ensure_future(take(it, 1, 5, "announced on w1 only"))
            await asyncio.sleep(0.05)
            async with await psycopg.AsyncConnection.connect(h.direct(DB), autocommit=True) as q:
                await q.execute("SET a2.notify = 'off'")
                await q.execute("""SELECT public.a2_append(%s, '[{"type": "q"}]')""", [s])
            with h.admin(W1) as c:
                c.execute("SELECT pg_notify('a2_events', json_build_object('sessionId', %s::text, "
                          "'index', 1)::text)", [s])
            self.assertEqual([e.index for e in await got], [1])
            self.assertEqual([x.notifications for x in listener.nodes], [0, 1])
            before = listener.nodes[1].backend_pid
            with h.admin() as c:
                c.execute("SELECT pg_terminate_backend(%s)", [before])
            await until(lambda: listener.nodes[1].listens == 2 and listener.nodes[1].listening, 10, "w1 again")
            self.assertEqual(listener.nodes[0].listens, 1)
        await until(lambda: h.count_backends(W1) == 0, 3, "node connection closed")


if __name__ == "__main__":
    unittest.main()
