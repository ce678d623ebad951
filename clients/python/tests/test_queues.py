"""a2 0.4.0 dispatch control through the client (docs/functions.md, "Queues
and limits"): ``queue``, ``priority`` and ``concurrency_key`` on new and
returned events, ``queues`` on ``claim`` and ``claim_next``, pause and
resume, concurrency and rate limits, ``list_queues`` and ``list_limits``.
Time is the injected clock; nothing sleeps.
"""

from __future__ import annotations

import itertools
import unittest

from . import helpers as h
from a2_client import A2Store, AsyncA2Store, Busy, Claimed, NewEvent, QueueGauges, ReturnedEvent, Settled

DB = "a2_py_queues"

_n = itertools.count(1)


def session() -> str:
    return f"q-{next(_n)}"


class QueuesTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock("2026-08-01T00:00:00.000+00:00")
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def sessions(self, r: object) -> list[str]:
        return [c.session_id for c in r.claims]  # type: ignore[attr-defined]

    def test_fields_are_stored_and_shown_only_when_set(self) -> None:
        s = session()
        r = self.store.append(s, [NewEvent(type="plain"),
                                  NewEvent(type="mail", queue="email", priority=5, concurrency_key="smtp"),
                                  NewEvent(type="dflt", queue="default", priority=0)])
        for events in (r.events, self.store.read(s)):
            self.assertEqual([(e.queue, e.priority, e.concurrency_key) for e in events],
                             [(None, None, None), ("email", 5, "smtp"), (None, None, None)])

    def test_returned_events_take_them(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="parent")])
        self.assertIsInstance(self.store.claim(s, "w", 60_000), Claimed)
        self.store.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-child", type="child", queue="billing", priority=-3)])
        child = self.store.read(s)[1]
        self.assertEqual((child.queue, child.priority), ("billing", -3))

    def test_queues_and_priorities(self) -> None:
        low, high, other = session(), session(), session()
        self.store.append(low, [NewEvent(type="t", queue="jobs", priority=1)])
        self.clock.advance(1000)
        self.store.append(high, [NewEvent(type="t", queue="jobs", priority=9)])
        self.store.append(other, [NewEvent(type="t", queue="reports", priority=100)])
        self.clock.advance(1000)
        self.assertEqual(self.sessions(self.store.claim_next("w", 60_000, queues=["jobs"])), [high])
        self.assertEqual(self.sessions(self.store.claim_next("w", 60_000, 10, queues=["jobs"])), [low])
        self.assertEqual(self.store.claim(other, "w", 60_000, queues=["jobs"]), Settled())

    def test_pause_and_resume(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="t", queue="pausable")])
        self.assertTrue(self.store.pause_queue("pausable"))
        self.assertFalse(self.store.pause_queue("pausable"))
        row = [q for q in self.store.list_queues() if q.queue == "pausable"][0]
        self.assertEqual((row.paused, row.available), (True, 1))
        self.assertEqual(self.sessions(self.store.claim_next("w", 60_000, queues=["pausable"])), [])
        self.assertTrue(self.store.resume_queue("pausable"))
        self.assertEqual(self.sessions(self.store.claim_next("w", 60_000, queues=["pausable"])), [s])

    def test_concurrency_limit(self) -> None:
        self.store.set_concurrency_limit("acct", 1)
        a, b = session(), session()
        self.store.append(a, [NewEvent(type="t", queue="limited", concurrency_key="acct")])
        self.store.append(b, [NewEvent(type="t", queue="limited", concurrency_key="acct")])
        r = self.store.claim_next("w", 60_000, 10, queues=["limited"])
        self.assertEqual(len(r.claims), 1)
        self.assertIsInstance(self.store.claim(b, "w", 60_000, queues=["limited"]), Busy)
        lim = [x for x in self.store.list_limits() if x.key == "acct"][0]
        self.assertEqual((lim.max_leased, lim.leased, lim.at_limit), (1, 1, True))
        self.store.set_concurrency_limit("acct", None)
        self.assertEqual([x.key for x in self.store.list_limits()], [])

    def test_rate_limit(self) -> None:
        self.store.set_rate_limit("api", 1, 1000)
        a, b = session(), session()
        self.store.append(a, [NewEvent(type="t", queue="rated", concurrency_key="api")])
        self.store.append(b, [NewEvent(type="t", queue="rated", concurrency_key="api")])
        start = self.clock()
        self.assertEqual(len(self.store.claim_next("w", 600_000, 10, queues=["rated"]).claims), 1)
        r = self.store.claim_next("w", 600_000, 10, queues=["rated"])
        self.assertEqual((len(r.claims), r.retry_at), (0, h.ms(start, 1000)))
        self.clock.advance(1000)
        self.assertEqual(len(self.store.claim_next("w", 600_000, 10, queues=["rated"]).claims), 1)
        self.store.set_rate_limit("api", None, None)

    def test_metrics_and_sessions_by_queue(self) -> None:
        # a2_metrics(): a queue's unprocessed events, the paused queues, the keys at a limit
        s, plain = session(), session()
        self.store.append(s, [NewEvent(type="t", queue="py-metrics"), NewEvent(type="t"),
                              NewEvent(type="k", queue="py-metrics-k", concurrency_key="py-mk")])
        self.store.append(plain, [NewEvent(type="t")])
        self.store.set_concurrency_limit("py-mk", 1)
        self.assertEqual(len(self.store.claim_next("w", 60_000, 10, queues=["py-metrics-k"]).claims), 1)
        self.store.pause_queue("py-metrics")
        try:
            m = self.store.metrics()
            assert m.queues is not None and m.paused_queues is not None and m.keys_at_limit is not None
            self.assertEqual(m.queues["py-metrics"], QueueGauges(eligible=1, leased=0, scheduled=0,
                                                                 lane_waiting=0, dead_letters=0))
            self.assertEqual((m.queues["py-metrics-k"].leased, m.queues["py-metrics-k"].eligible), (1, 0))
            self.assertEqual(sum(q.eligible for q in m.queues.values()), m.eligible_events)
            self.assertEqual(sum(q.leased for q in m.queues.values()), m.leased_events)
            self.assertIn("py-metrics", m.paused_queues)
            self.assertIn("py-mk", m.keys_at_limit)
            self.assertNotIn("queues", m.extra)
            # a2_list_sessions: pending events per queue, only for a session using a named queue
            by_id = {x.session_id: x for x in self.store.list_sessions("q-", limit=1000).sessions}
            by_queue = by_id[s].pending_by_queue
            self.assertEqual(by_queue, {"py-metrics": 1, "default": 1, "py-metrics-k": 1})
            assert by_queue is not None
            self.assertEqual(sum(by_queue.values()), by_id[s].pending_count)
            self.assertIsNone(by_id[plain].pending_by_queue)
        finally:
            self.store.resume_queue("py-metrics")
            self.store.set_concurrency_limit("py-mk", None)

    def test_bad_limit_is_refused(self) -> None:
        with self.assertRaises(Exception) as cm:
            self.store.set_concurrency_limit("k", 0)
        self.assertEqual(getattr(cm.exception, "sqlstate", None), "22023")

    def test_async_store_has_them(self) -> None:
        import asyncio

        async def go() -> list[str]:
            st = AsyncA2Store(conninfo=h.target(DB), clock=self.clock)
            try:
                await st.pause_queue("async-q")
                names = [q.queue for q in await st.list_queues()]
                await st.resume_queue("async-q")
                return names
            finally:
                await st.close()

        self.assertIn("async-q", asyncio.run(go()))


if __name__ == "__main__":
    unittest.main()
