"""a2 0.4.0 recurring schedules through the client (docs/time.md, "Schedules"):
``schedule``, ``list_schedules``, ``pause_schedule``, ``resume_schedule``,
``unschedule`` and ``fire_schedules``, sync and asyncio, driven by the
injected clock in 2031 (the server's own scheduler, on the wall clock, finds
nothing due then). Nothing sleeps.
"""

from __future__ import annotations

import asyncio
import unittest

from . import helpers as h
from a2_client import A2Store, AsyncA2Store, FiredTick, InvalidPayloadError, NotFoundError, NullValueError

DB = "a2_py_schedules"


class SchedulesTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock("2031-06-01T09:59:30.000+00:00")
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def set_clock(self, iso: str) -> None:
        self.clock.advance(int((h.utc(iso) - self.clock()).total_seconds() * 1000))

    def test_1_schedule_fire_once_list(self) -> None:
        nxt = self.store.schedule("hourly", "0 * * * *", "reports", {"type": "report", "payload": {"k": 1}})
        self.assertEqual(nxt, h.utc("2031-06-01T10:00:00.000+00:00"))
        self.assertEqual(self.store.fire_schedules(), [])
        self.set_clock("2031-06-01T10:00:00.005+00:00")
        self.assertEqual(self.store.fire_schedules(), [FiredTick(
            name="hourly", tick_at=h.utc("2031-06-01T10:00:00.000+00:00"), session_id="reports", index=1,
            event_id="schedule:hourly@2031-06-01T10:00:00.000Z")])
        self.assertEqual(self.store.fire_schedules(), [])
        self.assertEqual([(e.id, e.type, e.payload) for e in self.store.read("reports")],
                         [("schedule:hourly@2031-06-01T10:00:00.000Z", "report", {"k": 1})])
        (s,) = [x for x in self.store.list_schedules() if x.name == "hourly"]
        self.assertEqual((s.spec, s.timezone, s.session_id, s.event, s.missed, s.backfill_limit, s.grace_ms,
                          s.paused, s.fired_count),
                         ("0 * * * *", "UTC", "reports", {"type": "report", "payload": {"k": 1}}, "latest", 100,
                          60000, False, 1))
        self.assertEqual(s.next_tick_at, h.utc("2031-06-01T11:00:00.000+00:00"))
        self.assertEqual(s.last_tick_at, h.utc("2031-06-01T10:00:00.000+00:00"))

    def test_2_pause_resume_backfill(self) -> None:
        self.set_clock("2031-06-01T10:05:00.000+00:00")
        self.store.schedule("bf", "*/10 * * * *", "bf", {"type": "tick"}, missed="backfill", backfill_limit=2)
        self.assertEqual(self.store.pause_schedule("bf"), h.utc("2031-06-01T10:10:00.000+00:00"))
        self.set_clock("2031-06-01T10:45:00.000+00:00")
        self.assertEqual([f for f in self.store.fire_schedules() if f.name == "bf"], [])
        self.store.resume_schedule("bf")
        self.assertEqual([f.tick_at for f in self.store.fire_schedules() if f.name == "bf"],
                         [h.utc("2031-06-01T10:30:00.000+00:00"), h.utc("2031-06-01T10:40:00.000+00:00")])

    def test_3_timezone_and_transaction(self) -> None:
        with self.store.transaction() as tx:
            nxt = tx.schedule("standup", "0 9 * * mon-fri", "team", {"type": "standup"}, timezone="Europe/Berlin")
        # 2031-06-01 is a Sunday; Monday 09:00 CEST is 07:00 UTC
        self.assertEqual(nxt, h.utc("2031-06-02T07:00:00.000+00:00"))
        self.assertTrue(self.store.unschedule("standup"))
        self.assertFalse(self.store.unschedule("standup"))

    def test_4_errors_write_nothing(self) -> None:
        before = len(self.store.list_schedules())
        with self.assertRaises(InvalidPayloadError) as e:
            self.store.schedule("x", "61 * * * *", "s", {"type": "t"})
        self.assertEqual(e.exception.sqlstate, "22023")
        with self.assertRaises(InvalidPayloadError):
            self.store.schedule("x", "@hourly", "s", {"type": "t"}, timezone="Nowhere/None")
        with self.assertRaises(InvalidPayloadError):
            self.store.schedule("x", "@hourly", "s", {"type": "t", "id": "mine"})
        with self.assertRaises(InvalidPayloadError):
            self.store.schedule("x", "@hourly", "s", {"type": "t"}, missed="sometimes")
        with self.assertRaises(NullValueError):
            self.store.unschedule(None)  # type: ignore[arg-type]
        with self.assertRaises(NotFoundError):
            self.store.pause_schedule("nope")
        with self.assertRaises(NotFoundError):
            self.store.resume_schedule("nope")
        self.assertEqual(len(self.store.list_schedules()), before)

    def test_5_async(self) -> None:
        async def run() -> None:
            st = AsyncA2Store(h.target(DB), clock=self.clock)
            try:
                self.set_clock("2031-06-03T00:00:00.000+00:00")
                nxt = await st.schedule("async", "every 5 minutes", "async", {"type": "poll"})
                self.assertEqual(nxt, h.utc("2031-06-03T00:05:00.000+00:00"))
                self.set_clock("2031-06-03T00:05:00.000+00:00")
                fired = [f for f in await st.fire_schedules() if f.name == "async"]
                self.assertEqual([f.event_id for f in fired], ["schedule:async@2031-06-03T00:05:00.000Z"])
                self.assertEqual(await st.pause_schedule("async"), h.utc("2031-06-03T00:10:00.000+00:00"))
                self.assertEqual(await st.resume_schedule("async"), h.utc("2031-06-03T00:10:00.000+00:00"))
                self.assertIn("async", [s.name for s in await st.list_schedules()])
                self.assertTrue(await st.unschedule("async"))
            finally:
                await st.close()

        asyncio.run(run())


if __name__ == "__main__":
    unittest.main()
