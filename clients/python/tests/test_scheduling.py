"""a2 0.3.0 scheduling through the client (docs/semantics.md, "Scheduling"): ``not_before`` on new
and returned events, ``fail(..., retry_after_ms=...)``, the ``backoff``
helper, and what is sent when they are not used.

The cluster runs this repository's a2, so these tests require 0.3.0 or later and
check the working behaviour; a database created at VERSION '0.2.0' checks
that a call without the new options still works there (they are sent only
when given).  Time is the injected clock; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import unittest
from datetime import timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List, Tuple

import psycopg

from . import helpers as h
from a2_client import (
    A2Store,
    AsyncA2Store,
    Busy,
    Claimed,
    InvalidPayloadError,
    NewEvent,
    NotConfiguredError,
    ReturnedEvent,
    Settled,
    SupersededError,
    backoff,
)
from a2_client._backoff import fmix32, fnv1a32

DB = "a2_py_scheduling"
DB_020 = "a2_py_scheduling_020"
VECTORS = Path(__file__).resolve().parents[2] / "shared" / "backoff-vectors.json"
OPTION_NAMES = {"baseMs": "base_ms", "maxMs": "max_ms", "factor": "factor", "jitter": "jitter"}

_n = itertools.count(1)


def session() -> str:
    return f"sched-{next(_n)}"


class RecordingCursor(psycopg.Cursor[Any]):
    log: List[Tuple[Any, Any]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> "RecordingCursor":
        RecordingCursor.log.append((query, params))
        super().execute(query, params, **kwargs)
        return self


class SchedulingTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        with h.admin(DB) as c:
            row = c.execute("SELECT extversion FROM pg_extension WHERE extname = 'a2'").fetchone()
            six = c.execute("SELECT count(*) FROM pg_proc WHERE proname = 'a2_fail' AND pronargs = 6").fetchone()
        # No adapting to an older server here: the suite runs this repository's a2.
        assert row is not None and tuple(int(p) for p in row[0].split(".")) >= (0, 3, 0), (
            f"a2 {row and row[0]} installed, these tests need 0.3.0 or later"
        )
        assert six is not None and six[0] == 1, "no six-argument a2_fail"
        cls.clock = h.ManualClock("2026-07-01T00:00:00.000+00:00")
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)
        h.drop_database(DB_020)

    def at(self, ms: int) -> Any:
        return h.ms(self.clock(), ms)

    def claimed(self, s: str) -> Any:
        r = self.store.claim(s, "w", 60_000)
        return [e.index for e in r.events] if isinstance(r, Claimed) else r

    # -- not_before -------------------------------------------------------------

    def test_not_before_sent_only_when_given_and_shown_only_when_set(self) -> None:
        s = session()
        due = self.at(600_000)
        millis = f".{due.microsecond // 1000:03d}"
        # the same time as a literal with another offset, sent as it is
        literal = due.astimezone(timezone(timedelta(hours=2))).strftime("%Y-%m-%d %H:%M:%S") + millis + "+02"
        conn = psycopg.connect(h.target(DB), autocommit=True, cursor_factory=RecordingCursor)
        try:
            st = A2Store(connection=conn, clock=self.clock)
            RecordingCursor.log.clear()
            r = st.append(s, [NewEvent(type="plain"), NewEvent(type="later", not_before=due),
                              {"type": "mapping", "notBefore": literal}])
        finally:
            conn.close()
        sent = json.loads(RecordingCursor.log[0][1][1])
        self.assertEqual([("notBefore" in e, e.get("notBefore")) for e in sent],
                         [(False, None), (True, due.strftime("%Y-%m-%dT%H:%M:%S") + millis + "Z"), (True, literal)])
        for events in (r.events, self.store.read(s)):
            self.assertEqual([e.not_before for e in events], [None, due, due])
        self.assertEqual(self.claimed(s), [1])

    def test_delayed_event_is_not_claimed_before_it_is_due(self) -> None:
        s = session()
        due = self.at(600_000)
        self.store.append(s, [NewEvent(type="later", not_before=due), NewEvent(type="now")])
        self.assertEqual(self.claimed(s), [2])
        self.assertEqual(self.claimed(s), Busy(retry_at=self.at(60_000)))  # the lease comes first
        self.store.complete(s, 2, 1)
        self.assertEqual(self.claimed(s), Busy(retry_at=due))
        self.clock.advance(600_000 - 1)
        self.assertEqual(self.claimed(s), Busy(retry_at=due))
        self.clock.advance(1)
        self.assertEqual(self.claimed(s), [1])
        self.store.complete(s, 1, 1)
        self.assertEqual(self.claimed(s), Settled())

    def test_bad_not_before_is_refused_and_writes_nothing(self) -> None:
        s = session()
        for bad in ("next tuesday", "infinity", 1767225600000):
            with self.assertRaises(InvalidPayloadError) as cm:
                self.store.append(s, [NewEvent(type="ok"), {"type": "x", "notBefore": bad}])
            self.assertEqual(cm.exception.sqlstate, "22023", bad)
        self.assertEqual(self.store.read(s), [])

    # -- retry_after_ms --------------------------------------------------------------

    def test_retry_after_ms_backs_off(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 60_000)
        f = self.store.fail(s, 1, 1, "upstream 503", 5, retry_after_ms=30_000)
        self.assertEqual((f.outcome, f.failure_count), ("failed", 1))
        e = self.store.read(s)[0]
        self.assertEqual((e.not_before, e.claim_holder), (self.at(30_000), None))
        self.assertEqual(self.claimed(s), Busy(retry_at=self.at(30_000)))
        self.clock.advance(29_999)
        self.assertEqual(self.claimed(s), Busy(retry_at=self.at(1)))
        self.clock.advance(1)
        self.assertEqual(self.claimed(s), [1])

    def test_retry_after_ms_only_when_given(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job"), NewEvent(type="job"), NewEvent(type="job")])
        self.store.claim(s, "w", 60_000)
        conn = psycopg.connect(h.target(DB), autocommit=True, cursor_factory=RecordingCursor)
        try:
            st = A2Store(connection=conn, clock=self.clock)
            RecordingCursor.log.clear()
            st.fail(s, 1, 1, "e", 5)
            st.fail(s, 2, 1, "e", 5, retry_after_ms=0)
            st.fail(s, 3, 1, "e", 5, retry_after_ms=5000)
        finally:
            conn.close()
        texts = [str(q) for q, _ in RecordingCursor.log]
        self.assertRegex(texts[0], r"a2_fail\(%s::text, %s::bigint, %s::integer, %s::text, %s::integer\) AS r")
        self.assertRegex(texts[1], r"a2_fail\(%s::text, %s::bigint, %s::integer, %s::text, %s::integer, %s::bigint\)")
        self.assertEqual([list(p)[:-1] for _, p in RecordingCursor.log],  # the last one is the clock
                         [[s, 1, 1, "e", 5], [s, 2, 1, "e", 5, 0], [s, 3, 1, "e", 5, 5000]])
        self.assertEqual([e.not_before for e in self.store.read(s)], [None, None, self.at(5000)])
        self.assertEqual(self.claimed(s), [1, 2])

    def test_bad_retry_after_ms_is_refused_and_writes_nothing(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 60_000)
        for bad in (-1, 2**53, 2**63 - 1):
            with self.assertRaises(InvalidPayloadError) as cm:
                self.store.fail(s, 1, 1, "e", 3, retry_after_ms=bad)
            self.assertEqual(cm.exception.sqlstate, "22023", bad)
        with self.assertRaises(InvalidPayloadError):  # not an integer: refused before sending
            self.store.fail(s, 1, 1, "e", 3, retry_after_ms=1.5)  # type: ignore[arg-type]
        e = self.store.read(s)[0]
        self.assertEqual((e.failure_count, e.not_before, e.claim_holder), (0, None, "w"))

    def test_async_fail_with_retry_after_ms(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 60_000)

        async def run() -> None:
            async with AsyncA2Store(h.target(DB), clock=self.clock, listen_conninfo=h.direct(DB)) as st:
                f = await st.fail(s, 1, 1, "e", 5, retry_after_ms=1234)
                self.assertEqual(f.outcome, "failed")

        asyncio.run(run())
        self.assertEqual(self.store.read(s)[0].not_before, self.at(1234))

    def test_on_a_0_2_0_database_calls_without_the_options_work(self) -> None:
        h.drop_database(DB_020)
        with h.admin() as c:
            c.execute(f"CREATE DATABASE {DB_020}")
        with h.admin(DB_020) as c:
            c.execute("CREATE EXTENSION a2 VERSION '0.2.0'")
        with h.store_on(DB_020, clock=self.clock) as old:
            s = session()
            old.append(s, [NewEvent(type="job"), NewEvent(type="job")])
            old.claim(s, "w", 60_000)
            self.assertEqual(old.fail(s, 1, 1, "e", 3).outcome, "failed")
            with self.assertRaises(NotConfiguredError) as cm:  # no six-argument a2_fail there
                old.fail(s, 2, 1, "e", 3, retry_after_ms=1000)
            self.assertEqual(cm.exception.sqlstate, "42883")
            self.assertEqual([e.failure_count for e in old.read(s)], [1, 0])

    # -- a durable timer ---------------------------------------------------------------

    def test_durable_timer(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(id=f"{s}-order", type="order.placed")])
        self.store.claim(s, "w", 60_000)
        due = self.at(3_600_000)
        timer = [ReturnedEvent(id=f"{s}-recheck", type="order.recheck", not_before=due)]
        done = self.store.complete(s, 1, 1, timer)
        self.assertEqual([(e.index, e.not_before, e.cause and (e.cause.index, e.cause.attempt)) for e in done.events],
                         [(2, due, (1, 1))])
        self.assertEqual(self.claimed(s), Busy(retry_at=due))
        self.assertEqual(self.store.complete(s, 1, 1, timer).events, done.events)  # a retry: the stored timer
        with self.assertRaises(SupersededError):
            self.store.complete(s, 1, 2, timer)
        self.clock.advance(3_600_000)
        self.assertEqual(self.claimed(s), [2])

    # -- backoff -----------------------------------------------------------------------

    def test_backoff_drives_fail(self) -> None:
        # "evt-1" with the default options is in the shared table: 893, 1919, 2832 ms
        retry_after = backoff()
        s = session()
        self.store.append(s, [NewEvent(id="evt-1", type="flaky")])
        for attempt, ms in ((1, 893), (2, 1919), (3, 2832)):
            r = self.store.claim(s, "w", 60_000)
            assert isinstance(r, Claimed)
            e = r.events[0]
            self.assertEqual(e.attempt_count, attempt)
            self.store.fail(s, e.index, e.attempt_count, "flaky", 10,
                            retry_after_ms=retry_after(e.id, e.attempt_count))
            self.assertEqual(self.claimed(s), Busy(retry_at=self.at(ms)))
            self.clock.advance(ms)
        r = self.store.claim(s, "w", 60_000)
        assert isinstance(r, Claimed)
        self.assertEqual((r.events[0].attempt_count, r.events[0].failure_count), (4, 3))


class BackoffTest(unittest.TestCase):
    """The helper alone; the same table as the TypeScript client's tests."""

    def test_shared_table(self) -> None:
        vectors: Dict[str, Any] = json.loads(VECTORS.read_text(encoding="utf-8"))
        for s, want in vectors["fnv1a32"]:
            self.assertEqual(fnv1a32(s.encode("utf-8")), want, s)
        for x, want in vectors["fmix32"]:
            self.assertEqual(fmix32(x), want, x)
        self.assertGreaterEqual(len(vectors["backoff"]), 30)
        for v in vectors["backoff"]:
            policy = backoff(**{OPTION_NAMES[k]: x for k, x in v["options"].items()})
            self.assertEqual(policy(v["eventId"], v["attempt"]), v["ms"], v)

    def test_range_spread_and_repeatability(self) -> None:
        exact = backoff(base_ms=1000, max_ms=30_000, factor=2, jitter=0)
        self.assertEqual([exact("e", a) for a in (1, 2, 3, 4, 5, 6, 7, 100)],
                         [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
        policy = backoff(base_ms=1000, max_ms=30_000, factor=2, jitter=0.5)
        for a in range(1, 9):
            delay = min(1000 * 2 ** (a - 1), 30_000)
            values = [policy(f"job-{i}", a) for i in range(200)]
            for v in values:
                self.assertIsInstance(v, int)
                self.assertTrue(delay / 2 <= v <= delay, (a, v))
            self.assertGreater(len(set(values)), 150, a)
            self.assertEqual([policy(f"job-{i}", a) for i in range(200)], values)

    def test_bad_options_and_attempts(self) -> None:
        bad: List[Dict[str, float]] = [
            {"base_ms": -1}, {"base_ms": float("nan")}, {"max_ms": float("inf")}, {"max_ms": -1},
            {"factor": 0.5}, {"factor": float("inf")}, {"jitter": -0.1}, {"jitter": 1.5}, {"jitter": float("nan")}]
        for kw in bad:
            with self.assertRaises(ValueError, msg=kw):
                backoff(**kw)
        with self.assertRaises(TypeError):
            backoff(base_ms="1000")  # type: ignore[arg-type]
        policy = backoff()
        for a in (0, -1, 2**53):
            with self.assertRaises(ValueError, msg=a):
                policy("e", a)
        for wrong in (1.0, True):
            with self.assertRaises(ValueError, msg=wrong):
                policy("e", wrong)  # type: ignore[arg-type]
        with self.assertRaises(TypeError):
            policy(1, 1)  # type: ignore[arg-type]


if __name__ == "__main__":
    unittest.main()
