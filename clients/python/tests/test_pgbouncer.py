"""Through pgbouncer in transaction mode (scripts/pgbouncer.sh, which
test/suites/85-python-client.sh starts): every call works with the store's
defaults, an injected clock never reaches another client through a shared
server connection, transaction() keeps its one server connection, and the
stream works there by polling (``listen=False``) or with its LISTEN on a
direct connection (``listen_conninfo``) (the port of pgbouncer.test.ts).

Needs A2_PGBOUNCER_URL; without it the file is skipped, unless
A2_PY_REQUIRE_PGBOUNCER=1 (the suite sets it) makes that a failure.
"""

from __future__ import annotations

import os
import unittest
from datetime import datetime, timezone
from typing import List

from . import helpers as h
from a2_client import (
    A2Store,
    Busy,
    Claimed,
    ClaimRef,
    NewEvent,
    NotFoundError,
    PartialDuplicateBatchError,
    RenewResult,
    ReturnedEvent,
    Snapshot,
    SnapshotWrite,
)

DB = "a2_py_bouncer"
REQUIRED = os.environ.get("A2_PY_REQUIRE_PGBOUNCER") == "1"


class RequiredTest(unittest.TestCase):
    def test_pgbouncer_url_is_set_when_required(self) -> None:
        if REQUIRED:
            self.assertIsNotNone(h.BOUNCER_URL, "A2_PY_REQUIRE_PGBOUNCER=1 but A2_PGBOUNCER_URL is not set")


@unittest.skipIf(h.BOUNCER_URL is None, "A2_PGBOUNCER_URL not set")
class PgbouncerTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock("2030-01-01T00:00:00+00:00")
        cls.store = A2Store(h.through_bouncer(DB), max_size=6, clock=cls.clock, listen=False)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def test_it_is_a_transaction_pooler(self) -> None:
        assert h.BOUNCER_URL is not None
        from psycopg.conninfo import make_conninfo
        import psycopg
        with psycopg.connect(make_conninfo(h.BOUNCER_URL, dbname="pgbouncer"), autocommit=True) as c:
            config = {r[0]: r[1] for r in c.execute("SHOW CONFIG", prepare=False).fetchall()}
        self.assertEqual(config["pool_mode"], "transaction")
        self.assertEqual(config["default_pool_size"], "2")

    def test_every_call_but_the_stream(self) -> None:
        st = self.store
        s = "b-1"
        a = st.append(s, [NewEvent(id="b1", type="job", payload=[]), NewEvent(type="job2", lane="l")])
        self.assertEqual([(e.index, e.payload) for e in a.events], [(1, []), (2, None)])
        self.assertEqual(a.events[0].created_at, self.clock())
        self.assertEqual(len(st.read(s, after_index=1)), 1)
        c = st.claim(s, "w", 10_000)
        assert isinstance(c, Claimed)
        self.assertEqual([e.index for e in c.events], [1, 2])
        self.clock.advance(1000)
        self.assertEqual(st.claim(s, "w", 1), Busy(retry_at=h.utc("2030-01-01T00:00:10+00:00")))
        self.assertEqual(st.renew(s, "w", [ClaimRef(1, 1)], 20_000), RenewResult(renewed=[1], superseded=[]))
        self.assertEqual(st.complete(s, 1, 1, [ReturnedEvent(id="b1-done", type="done")]).outcome, "completed")
        f = st.fail(s, 2, 1, "x", 3)
        self.assertEqual((f.outcome, f.failure_count), ("failed", 1))
        st.put_snapshots(s, "r", [SnapshotWrite(1, {"n": 1})])
        r = st.read_state(s, "r")
        self.assertEqual((r.head_index, r.snapshot, [e.index for e in r.events]), (1, Snapshot(1, {"n": 1}), [2, 3]))
        self.assertEqual(len(st.read_states([s, "none"], "r")), 2)
        st.presence_set(s, "p", {"f": []}, at=self.clock(), seen=1, ttl_ms=1000)
        self.assertEqual([(x.field, x.value) for x in st.presence_read(s)], [("f", [])])
        self.assertEqual([x.session_id for x in st.list_sessions("b-1").sessions], ["b-1"])
        self.assertIsInstance(st.claim_next("w", 1000, 5).claims, list)
        self.assertIsInstance(st.metrics().eligible_events, int)
        with self.assertRaises(PartialDuplicateBatchError):
            st.append(s, [NewEvent(id="b1", type="other")])
        with self.assertRaises(NotFoundError):
            st.complete(s, 99, 1)
        # Many calls on few connections: nothing was prepared by name.
        for _ in range(20):
            st.read(s)

    def test_the_clock_of_one_client_never_reaches_another(self) -> None:
        with A2Store(h.through_bouncer(DB), max_size=6, listen=False) as wall:
            wrong: List[str] = []

            def one(i: int) -> None:
                if i % 2 == 0:
                    r = self.store.append(f"clock-{i}", [NewEvent(type="t")])
                    if r.events[0].created_at != self.clock():
                        wrong.append(f"clocked {i}")
                else:
                    r = wall.append(f"clock-{i}", [NewEvent(type="t")])
                    if abs((r.events[0].created_at - datetime.now(timezone.utc)).total_seconds()) > 60:
                        wrong.append(f"wall {i}")

            for f in [h.background(lambda i=i: one(i)) for i in range(40)]:  # type: ignore[misc]
                f.result(30)
            self.assertEqual(wrong, [])

    def test_transaction_keeps_one_server_connection(self) -> None:
        with h.admin(DB) as c:
            c.execute("CREATE TABLE IF NOT EXISTS notes (s text)")
        s = "b-tx"
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 60_000)
        with self.assertRaisesRegex(RuntimeError, "rollback"):
            with self.store.transaction() as tx:
                tx.execute("INSERT INTO notes VALUES (%s)", [s])
                tx.complete(s, 1, 1)
                raise RuntimeError("rollback")
        with h.admin(DB) as c:
            self.assertEqual(c.execute("SELECT count(*) FROM notes").fetchone(), (0,))
        self.assertIsNone(self.store.read(s)[0].processed_at)
        with self.store.transaction() as tx:
            tx.execute("INSERT INTO notes VALUES (%s)", [s])
            pid1 = tx.execute("SELECT pg_backend_pid()").fetchone()
            tx.complete(s, 1, 1)
            pid2 = tx.execute("SELECT pg_backend_pid()").fetchone()
        self.assertEqual(pid1, pid2)
        with h.admin(DB) as c:
            self.assertEqual(c.execute("SELECT count(*) FROM notes").fetchone(), (1,))
        self.assertIsNotNone(self.store.read(s)[0].processed_at)

    def test_stream_by_polling(self) -> None:
        with A2Store(h.through_bouncer(DB), listen=False, poll_interval=0.1) as poller:
            it = poller.stream("b-stream")
            got = h.take_async(it, 2)
            self.store.append("b-stream", [NewEvent(type="a"), NewEvent(type="b")])
            self.assertEqual([e.index for e in h.within(got, 5, "polled through the pooler", it)], [1, 2])
            self.assertEqual(poller.listener.listens, 0)

    def test_stream_with_a_direct_listen_connection(self) -> None:
        with A2Store(h.through_bouncer(DB), listen_conninfo=h.direct(DB), poll_interval=60) as store:
            it = store.stream("b-listen")
            got = h.take_async(it, 1)
            h.wait_until(lambda: store.listener.listening, 5, "LISTEN on the direct connection")
            self.store.append("b-listen", [NewEvent(type="a")])
            self.assertEqual([e.index for e in h.within(got, 5, "announced, read through the pooler", it)], [1])


if __name__ == "__main__":
    unittest.main()
