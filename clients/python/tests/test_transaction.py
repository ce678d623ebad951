"""store.transaction(): a handler's own SQL and the completion (or appends,
or a failure) commit together, or not at all (the port of
transaction.test.ts), and a stale attempt never commits.
"""

from __future__ import annotations

import itertools
import unittest
from contextlib import contextmanager
from typing import Any, Iterator

import psycopg

from . import helpers as h
from a2_client import (
    A2Store,
    Cause,
    Claimed,
    InvalidPayloadError,
    NewEvent,
    ReturnedEvent,
    SupersededError,
)

DB = "a2_py_tx"
_n = itertools.count(1)


def session() -> str:
    return f"tx-{next(_n)}"


class TransactionTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock()
        cls.store = h.store_on(DB, clock=cls.clock)
        with h.admin(DB) as c:
            c.execute("CREATE TABLE shipments (session_id text, item text)")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def claim_one(self, s: str) -> int:
        self.store.append(s, [NewEvent(type="order.placed")])
        c = self.store.claim(s, "w", 30_000)
        assert isinstance(c, Claimed)
        return c.events[0].attempt_count

    def shipments(self, s: str) -> int:
        with h.admin(DB) as c:
            row = c.execute("SELECT count(*) FROM shipments WHERE session_id = %s", [s]).fetchone()
            assert row is not None
            return int(row[0])

    def test_commit_keeps_both(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        with self.store.transaction() as tx:
            tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
            result = tx.complete(s, 1, attempt, [ReturnedEvent(id=f"{s}-shipped", type="shipped")])
        self.assertEqual(result.outcome, "completed")
        self.assertEqual(self.shipments(s), 1)
        log = self.store.read(s)
        self.assertIsNotNone(log[0].processed_at)
        self.assertEqual([e.type for e in log], ["order.placed", "shipped"])

    def test_a_raise_keeps_neither_and_the_event_stays_claimable(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        boom = RuntimeError("handler crashed after completing")
        with self.assertRaises(RuntimeError) as cm:
            with self.store.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                r = tx.complete(s, 1, attempt, [ReturnedEvent(id=f"{s}-shipped", type="shipped")])
                self.assertEqual(r.outcome, "completed")
                self.assertIsNotNone(tx.read(s)[0].processed_at)  # visible inside
                raise boom
        self.assertIs(cm.exception, boom)
        self.assertEqual(self.shipments(s), 0)
        log = self.store.read(s)
        self.assertEqual((len(log), log[0].processed_at), (1, None))
        # Held by that attempt until the lease ends; then claimable again.
        self.clock.advance(30_000)
        again = self.store.claim(s, "w2", 1000)
        assert isinstance(again, Claimed)
        self.assertEqual(again.events[0].attempt_count, attempt + 1)

    def test_appends_failures_presence_roll_back_too(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        with self.assertRaisesRegex(RuntimeError, "abort"):
            with self.store.transaction() as tx:
                tx.append(s, [NewEvent(type="progress", cause=Cause(1, attempt))])
                tx.fail(s, 1, attempt, "nope", 1)
                tx.presence_set(s, "w", {"busy": True}, at=self.clock(), seen=1, ttl_ms=60_000)
                raise RuntimeError("abort")
        log = self.store.read(s)
        self.assertEqual((len(log), log[0].failure_count, log[0].failed_at), (1, 0, None))
        self.assertEqual(self.store.presence_read(s), [])

    def test_a2_error_inside_rolls_back_and_reaches_the_caller_mapped(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        with self.assertRaises(SupersededError):
            with self.store.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                tx.append(s, [NewEvent(type="progress", cause=Cause(1, attempt + 1))])
        self.assertEqual(self.shipments(s), 0)

    def test_a_superseded_completion_rolls_back_the_handler_write(self) -> None:
        # The point of one way to say stale: the server answers "superseded"
        # without an error, and the handler's write must not commit with it.
        s = session()
        attempt = self.claim_one(s)
        self.clock.advance(30_000)
        self.store.claim(s, "other", 30_000)  # the lease ended; another worker took it
        with self.assertRaises(SupersededError) as cm:
            with self.store.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                tx.complete(s, 1, attempt)
        self.assertEqual((cm.exception.index, cm.exception.attempt), (1, attempt))
        self.assertEqual(self.shipments(s), 0)
        self.assertIsNone(self.store.read(s)[0].processed_at)

    def test_a_swallowed_stale_error_still_does_not_commit(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        self.clock.advance(30_000)
        self.store.claim(s, "other", 30_000)
        with self.assertRaises(SupersededError):
            with self.store.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                try:
                    tx.complete(s, 1, attempt)
                except SupersededError:
                    pass  # a handler that ignores it: leaving the block raises it again
        self.assertEqual(self.shipments(s), 0)

    def test_savepoint_scopes_an_error(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        with self.store.transaction() as tx:
            tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "kept"])
            try:
                with tx.savepoint():
                    tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "dropped"])
                    tx.append(s, [NewEvent(type="x", cause=Cause(1, attempt + 5))])
            except SupersededError:
                pass
            try:
                with tx.savepoint():
                    tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "dropped too"])
                    try:
                        tx.complete(s, 1, attempt + 1)  # swallowed inside: the savepoint still rolls back
                    except SupersededError:
                        pass
            except SupersededError:
                pass
            tx.complete(s, 1, attempt)
        with h.admin(DB) as c:
            rows = c.execute("SELECT item FROM shipments WHERE session_id = %s", [s]).fetchall()
        self.assertEqual(rows, [("kept",)])
        self.assertIsNotNone(self.store.read(s)[0].processed_at)

    def test_client_side_bad_input_does_not_doom_the_transaction(self) -> None:
        s = session()
        attempt = self.claim_one(s)
        with self.store.transaction() as tx:
            with self.assertRaises(InvalidPayloadError):
                tx.complete(s, 1, 1.5)  # type: ignore[arg-type]  # refused before any I/O
            tx.complete(s, 1, attempt)
        self.assertIsNotNone(self.store.read(s)[0].processed_at)

    def test_the_return_value_and_a_used_up_transaction(self) -> None:
        with self.store.transaction() as tx:
            row = tx.execute("SELECT 41 + 1").fetchone()
        self.assertEqual(row, (42,))
        with self.assertRaises(RuntimeError):
            tx.read("x")

    def test_using_runs_in_your_own_transaction(self) -> None:
        s = session()
        with psycopg.connect(h.target(DB)) as conn:  # not autocommit: psycopg opens the transaction
            ops = self.store.using(conn)
            ops.append(s, [NewEvent(type="a")])
            conn.rollback()
            self.assertEqual(self.store.read(s), [])
            with conn.transaction():
                ops.append(s, [NewEvent(type="b")])
                conn.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
            self.assertEqual([e.type for e in self.store.read(s)], ["b"])
        self.assertEqual(self.shipments(s), 1)

    def test_a_pool_you_bring(self) -> None:
        # The shape of psycopg_pool.ConnectionPool: connection() hands out a
        # connection (not autocommit) and commits, or rolls back on an error.
        class Pool:
            def __init__(self) -> None:
                self.conn = psycopg.connect(h.target(DB))
                self.conninfo = h.direct(DB)

            @contextmanager
            def connection(self) -> Iterator["psycopg.Connection[Any]"]:
                try:
                    yield self.conn
                except BaseException:
                    self.conn.rollback()
                    raise
                else:
                    self.conn.commit()

        pool = Pool()
        try:
            st = A2Store(pool=pool, clock=self.clock)
            s = session()
            st.append(s, [NewEvent(type="order.placed")])
            c = st.claim(s, "w", 30_000)
            assert isinstance(c, Claimed)
            with self.assertRaises(RuntimeError):
                with st.transaction() as tx:
                    tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                    tx.complete(s, 1, 1)
                    raise RuntimeError("x")
            self.assertEqual((self.shipments(s), self.store.read(s)[0].processed_at), (0, None))
            with st.transaction() as tx:
                tx.execute("INSERT INTO shipments VALUES (%s, %s)", [s, "tea"])
                tx.complete(s, 1, 1)
            self.assertEqual(self.shipments(s), 1)
            self.assertIsNotNone(self.store.read(s)[0].processed_at)
            it = st.stream(s)
            self.assertEqual([e.index for e in h.take(it, 1, 5, "stream over a pool you bring")], [1])
            st.close()
            self.assertFalse(pool.conn.closed)  # yours to close
        finally:
            pool.conn.close()

    def test_connections_go_back_clean(self) -> None:
        for _ in range(10):
            with self.store.transaction() as tx:
                tx.execute("SELECT 1")
            try:
                with self.store.transaction():
                    raise ValueError("x")
            except ValueError:
                pass
        self.assertEqual(h.count_backends(DB, "state LIKE 'idle in transaction%%'"), 0)


if __name__ == "__main__":
    unittest.main()
