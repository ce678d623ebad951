"""The store on psycopg_pool: its own pool is a psycopg_pool pool with the
settings the store needs, and a psycopg_pool pool you bring is used as it
is and left open.
"""

from __future__ import annotations

import itertools
import unittest

import psycopg
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from . import helpers as h
from a2_client import A2Store, AsyncA2Store, Claimed, NewEvent, StoreUnavailableError

DB = "a2_py_pool"
_n = itertools.count(1)


def session() -> str:
    return f"pool-{next(_n)}"


def setUpModule() -> None:
    h.fresh_database(DB)
    with h.admin(DB) as c:
        c.execute("CREATE TABLE shipments (session_id text, item text)")


def tearDownModule() -> None:
    h.drop_database(DB)


def shipments(s: str) -> int:
    with h.admin(DB) as c:
        row = c.execute("SELECT count(*) FROM shipments WHERE session_id = %s", [s]).fetchone()
        assert row is not None
        return int(row[0])


class OwnPoolTest(unittest.TestCase):
    def test_the_own_pool_is_a_psycopg_pool_with_the_stores_settings(self) -> None:
        st = A2Store(h.target(DB), max_size=3, listen=False)
        pool = st.pool
        self.assertIsInstance(pool, ConnectionPool)
        self.assertTrue(pool.closed)  # not opened: creating a store does no I/O
        self.assertEqual((pool.min_size, pool.max_size), (0, 3))
        self.assertEqual(pool.kwargs, {"autocommit": True, "prepare_threshold": None})
        s = session()
        st.append(s, [NewEvent(type="t")])
        self.assertFalse(pool.closed)
        with st.transaction() as tx:
            self.assertIsNone(tx.connection.prepare_threshold)
            self.assertTrue(tx.connection.autocommit)  # the block is an explicit BEGIN
            tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
        self.assertEqual(shipments(s), 1)
        stats = pool.get_stats()
        self.assertEqual(stats["requests_num"], 2)
        self.assertEqual(stats["pool_size"], st.pool_size)
        st.close()
        self.assertTrue(pool.closed)
        with self.assertRaises(StoreUnavailableError):
            st.read(s)

    def test_a_terminated_connection_is_given_back_and_replaced(self) -> None:
        if h.VIA_BOUNCER:
            self.skipTest("pgbouncer replaces its own server connections")
        with A2Store(h.target(DB), max_size=1, listen=False) as st:
            s = session()
            st.append(s, [NewEvent(type="t")])
            with st.transaction() as tx:
                row = tx.execute("SELECT pg_backend_pid()").fetchone()
                assert row is not None
                pid = row[0]
            with h.admin() as c:
                c.execute("SELECT pg_terminate_backend(%s, 5000)", [pid])
            self.assertEqual(len(st.read(s)), 1)  # no error: a new connection
            stats = st.pool.get_stats()
            self.assertEqual(stats.get("returns_bad", 0), 1)
            self.assertEqual(stats.get("connections_num", 0), 2)
            self.assertEqual(st.pool_size, 1)


    def test_an_unreachable_database_raises_why_after_the_wait(self) -> None:
        with A2Store(h.direct("a2_py_no_such_database"), listen=False) as st:
            st.pool.timeout = 0.5  # psycopg_pool's wait for a connection (the store's: 10 s)
            with self.assertRaises(StoreUnavailableError) as cm:
                st.read("s")
            # The connection error itself, not psycopg_pool's "couldn't get a connection".
            self.assertIn('database "a2_py_no_such_database" does not exist', cm.exception.message)
            self.assertTrue(cm.exception.retryable)
            cause = cm.exception.__cause__
            self.assertIsInstance(cause, psycopg.OperationalError)
            self.assertNotIsInstance(cause, PoolTimeout)
            self.assertIsInstance(cause and cause.__cause__, PoolTimeout)

    def test_a_busy_pool_raises_its_timeout(self) -> None:
        with A2Store(h.target(DB), max_size=1, listen=False) as st:
            st.pool.timeout = 0.5
            s = session()
            with st.transaction() as tx:  # holds the only connection
                tx.append(s, [NewEvent(type="t")])
                with self.assertRaises(StoreUnavailableError) as cm:
                    st.read(s)
                self.assertIsInstance(cm.exception.__cause__, PoolTimeout)
                self.assertTrue(cm.exception.retryable)
            self.assertEqual(len(st.read(s)), 1)


class PoolYouBringTest(unittest.TestCase):
    def test_a_psycopg_pool_you_bring_is_used_and_left_open(self) -> None:
        with ConnectionPool(h.target(DB), min_size=1, max_size=2, kwargs={"autocommit": True}) as pool:
            st = A2Store(pool=pool, listen_conninfo=h.direct(DB), poll_interval=0.2)
            self.assertIs(st.pool, pool)
            self.assertIsNone(st.pool_size)
            s = session()
            st.append(s, [NewEvent(type="order.placed")])
            c = st.claim(s, "w", 30_000)
            assert isinstance(c, Claimed)
            with self.assertRaises(RuntimeError):
                with st.transaction() as tx:
                    tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
                    tx.complete(s, 1, 1)
                    raise RuntimeError("x")
            self.assertEqual((shipments(s), st.read(s)[0].processed_at), (0, None))
            with st.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
                tx.complete(s, 1, 1)
            self.assertEqual(shipments(s), 1)
            self.assertEqual([e.index for e in h.take(st.stream(s), 1, 5, "stream over a psycopg_pool")], [1])
            st.close()
            self.assertFalse(pool.closed)
            with pool.connection() as conn:
                self.assertEqual(conn.execute("SELECT 1").fetchone(), (1,))
            self.assertGreaterEqual(pool.get_stats()["requests_num"], 6)

    def test_one_connection_has_no_pool(self) -> None:
        with psycopg.connect(h.target(DB), autocommit=True) as conn:
            st = A2Store(connection=conn, listen=False)
            self.assertIsNone(st.pool)
            self.assertIsNone(st.pool_size)
            st.close()


class AsyncPoolTest(unittest.IsolatedAsyncioTestCase):
    async def test_the_own_pool_is_an_async_psycopg_pool(self) -> None:
        st = AsyncA2Store(h.target(DB), max_size=2, listen=False)
        pool = st.pool
        self.assertIsInstance(pool, AsyncConnectionPool)
        self.assertTrue(pool.closed)
        self.assertEqual((pool.min_size, pool.max_size), (0, 2))
        self.assertEqual(pool.kwargs, {"autocommit": True, "prepare_threshold": None})
        s = session()
        await st.append(s, [NewEvent(type="t")])
        self.assertEqual([e.index for e in await st.read(s)], [1])
        self.assertEqual(pool.get_stats()["requests_num"], 2)
        self.assertEqual(st.pool_size, 1)
        await st.close()
        self.assertTrue(pool.closed)
        self.assertEqual(st.pool_size, 0)

    async def test_an_unreachable_database_raises_why_after_the_wait(self) -> None:
        async with AsyncA2Store(h.direct("a2_py_no_such_database"), listen=False) as st:
            st.pool.timeout = 0.5
            with self.assertRaises(StoreUnavailableError) as cm:
                await st.read("s")
            self.assertIn('database "a2_py_no_such_database" does not exist', cm.exception.message)
            self.assertNotIsInstance(cm.exception.__cause__, PoolTimeout)

    async def test_an_async_psycopg_pool_you_bring(self) -> None:
        async with AsyncConnectionPool(h.target(DB), min_size=1, max_size=2, kwargs={"autocommit": True},
                                       open=False) as pool:
            st = AsyncA2Store(pool=pool, listen=False)
            self.assertIs(st.pool, pool)
            s = session()
            await st.append(s, [NewEvent(type="order.placed")])
            c = await st.claim(s, "w", 30_000)
            assert isinstance(c, Claimed)
            async with st.transaction() as tx:
                await tx.execute("INSERT INTO shipments VALUES (%s, 'tea')", [s])
                await tx.complete(s, 1, 1)
            self.assertEqual(shipments(s), 1)
            self.assertIsNotNone((await st.read(s))[0].processed_at)
            await st.close()
            self.assertFalse(pool.closed)


if __name__ == "__main__":
    unittest.main()
