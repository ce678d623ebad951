"""a2 0.4.0 cancel through the client (docs/functions.md, "a2_cancel"): ``store.cancel(session_id,
indexes=None, reason=None)``, ``StoredEvent.cancelled_at``/``cancel_reason``, a cancelled event's
live attempt superseded, lanes moving on, and bad input.  Time is the injected clock; nothing
sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import unittest

from . import helpers as h
from a2_client import (
    AsyncA2Store,
    Claimed,
    InvalidPayloadError,
    NewEvent,
    NotFoundError,
    ReturnedEvent,
    SupersededError,
)
from a2_client import A2Store

DB = "a2_py_cancel"
_n = itertools.count(1)


def session() -> str:
    return f"cancel-{next(_n)}"


class CancelTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock("2026-06-01T00:00:00.000+00:00")
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def claimed(self, s: str) -> object:
        r = self.store.claim(s, "w", 60_000)
        return [e.index for e in r.events] if isinstance(r, Claimed) else type(r).__name__

    def test_cancel_pending_with_reason_at_the_store_clock_and_idempotent(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job"), NewEvent(type="job"), NewEvent(type="job")])
        self.clock.advance(5_000)
        [e] = self.store.cancel(s, [2], "not needed")
        self.assertEqual((e.index, e.cancelled_at, e.processed_at, e.processed_by_attempt, e.cancel_reason),
                         (2, self.clock(), self.clock(), None, "not needed"))
        self.assertTrue(e.cancelled and e.finished)
        read = self.store.read(s)
        self.assertEqual(read[1], e)
        self.assertEqual((read[0].cancelled_at, read[0].cancel_reason, read[0].cancelled), (None, None, False))
        self.assertEqual(self.store.cancel(s, [2], "again"), [])
        self.assertEqual(self.store.read(s)[1].cancel_reason, "not needed")
        # None: every unfinished event; no reason: None
        self.assertEqual([(x.index, x.cancel_reason) for x in self.store.cancel(s)], [(1, None), (3, None)])
        self.assertEqual(self.claimed(s), "Settled")

    def test_live_attempt_superseded_and_lane_moves_on(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job", lane="L"), NewEvent(type="job", lane="L")])
        self.assertEqual(self.claimed(s), [1])
        self.assertEqual([e.index for e in self.store.cancel(s, (1,), "stop")], [1])
        with self.assertRaises(SupersededError):
            self.store.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-child", type="child")])
        with self.assertRaises(SupersededError):
            self.store.fail(s, 1, 1, "late", 3)
        self.assertEqual(self.store.renew(s, "w", [(1, 1)], 1000).superseded, [1])
        self.assertEqual(self.claimed(s), [2])
        self.assertEqual(len(self.store.read(s)), 2)

    def test_rolled_back_transaction_cancels_nothing(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        with self.assertRaises(RuntimeError):
            with self.store.transaction() as tx:
                self.assertEqual(len(tx.cancel(s, [1])), 1)
                raise RuntimeError("handler failed")
        self.assertIsNone(self.store.read(s)[0].cancelled_at)

    def test_bad_input_writes_nothing(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        for indexes, reason in (([0], None), ([1, 1], None), ([1], "x" * 1025)):
            with self.assertRaises(InvalidPayloadError):
                self.store.cancel(s, indexes, reason)
        with self.assertRaises(InvalidPayloadError):
            self.store.cancel(s, "12")  # type: ignore[arg-type]  # a string is not a list of indexes
        with self.assertRaises(NotFoundError):
            self.store.cancel(s, [1, 2])
        self.assertIsNone(self.store.read(s)[0].cancelled_at)
        self.assertEqual(self.store.cancel(s, []), [])

    def test_async_store(self) -> None:
        async def run() -> None:
            s = session()
            st = AsyncA2Store(h.target(DB), clock=self.clock)
            try:
                await st.append(s, [NewEvent(type="job")])
                self.assertEqual([e.index for e in await st.cancel(s, reason="async")], [1])
                self.assertEqual((await st.read(s))[0].cancel_reason, "async")
            finally:
                await st.close()
        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
