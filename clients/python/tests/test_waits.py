"""a2 0.4.0 durable waits through the client (docs/semantics.md, "Waits"): ``wait_for``
on new and returned events, ``wait_result`` on StoredEvent, and what is
sent when they are not used.  Time is the injected clock; nothing sleeps.
"""

from __future__ import annotations

import itertools
import json
import unittest
from typing import Any, List, Tuple

import psycopg

from . import helpers as h
from a2_client import (
    A2Store,
    Busy,
    Claimed,
    Completed,
    InvalidPayloadError,
    NewEvent,
    ReturnedEvent,
    WaitFor,
    WaitResult,
)

DB = "a2_py_waits"

_n = itertools.count(1)


def session() -> str:
    return f"wait-{next(_n)}"


class RecordingCursor(psycopg.Cursor[Any]):
    log: List[Tuple[Any, Any]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> "RecordingCursor":
        RecordingCursor.log.append((query, params))
        super().execute(query, params, **kwargs)
        return self


class WaitsTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock("2026-07-01T00:00:00.000+00:00")
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def claimed(self, s: str) -> Any:
        r = self.store.claim(s, "w", 60_000)
        if isinstance(r, Claimed):
            return [(e.index, e.wait_result) for e in r.events]
        if isinstance(r, Busy):
            return ("busy", r.retry_at)
        return r

    def test_sent_only_when_given_and_shown_only_when_set(self) -> None:
        s = session()
        conn = psycopg.connect(h.target(DB), autocommit=True, cursor_factory=RecordingCursor)
        try:
            st = A2Store(connection=conn, clock=self.clock)
            RecordingCursor.log.clear()
            r = st.append(s, [
                NewEvent(type="plain"),
                NewEvent(type="order", wait_for=WaitFor(types=["paid"], timeout_ms=3_600_000)),
                NewEvent(type="order", wait_for=WaitFor(types=["paid", "cancelled"])),
            ])
            body = json.loads(RecordingCursor.log[0][1][1])
        finally:
            conn.close()
        self.assertEqual([e.get("waitFor") for e in body],
                         [None, {"types": ["paid"], "timeoutMs": 3_600_000}, {"types": ["paid", "cancelled"]}])
        self.assertEqual(["waitFor" in e for e in body], [False, True, True])
        for events in (r.events, self.store.read(s)):
            self.assertEqual([(e.wait_for, e.wait_result, e.not_before) for e in events], [
                (None, None, None),
                (WaitFor(types=["paid"], timeout_ms=3_600_000), None, None),
                (WaitFor(types=["paid", "cancelled"]), None, None),
            ])

    def test_ends_by_event(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="order", wait_for=WaitFor(types=["paid"], timeout_ms=60_000)),
                              NewEvent(type="other")])
        self.assertEqual(self.claimed(s), [(2, None)])
        self.store.complete(s, 2, 1)
        self.assertEqual(self.claimed(s), ("busy", h.ms(self.clock(), 60_000)))
        self.store.append(s, [NewEvent(type="paid")])
        self.assertEqual(self.claimed(s), [(1, WaitResult(index=3, type="paid")), (3, None)])

    def test_ends_by_timeout(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="reminder", wait_for=WaitFor(types=["reply"], timeout_ms=60_000))])
        self.clock.advance(59_999)
        self.assertIsInstance(self.store.claim(s, "w", 60_000), Busy)
        self.clock.advance(1)
        self.assertEqual(self.claimed(s), [(1, WaitResult(timed_out=True))])
        self.store.append(s, [NewEvent(type="reply")])
        self.assertEqual([e.wait_result for e in self.store.read(s)], [WaitResult(timed_out=True), None])

    def test_a_returned_event_waits(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="start")])
        self.assertEqual(self.claimed(s), [(1, None)])
        done = self.store.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-cont", type="continue",
                                                           wait_for=WaitFor(types=["approved"]))])
        assert isinstance(done, Completed)
        self.assertEqual([e.wait_for for e in done.events], [WaitFor(types=["approved"])])
        self.assertIsInstance(self.store.claim(s, "w", 60_000), Busy)
        self.store.append(s, [NewEvent(type="approved")])
        self.assertEqual(self.claimed(s), [(2, WaitResult(index=3, type="approved")), (3, None)])

    def test_bad_waits_write_nothing(self) -> None:
        s = session()
        for w in (WaitFor(types=[]), WaitFor(types=[""]), WaitFor(types=["x"], timeout_ms=-1)):
            with self.assertRaises(InvalidPayloadError):
                self.store.append(s, [NewEvent(type="x", wait_for=w)])
        self.assertEqual(self.store.read(s), [])


if __name__ == "__main__":
    unittest.main()
