"""Every store call against a real cluster: the edge cases of the contract,
the error class of every SQLSTATE, the injected clock driving lease expiry
and retry_at, one unprepared statement per call (the port of the
TypeScript client's store.test.ts, plus claim_next, redrive, inspection
and retention, which that client does not have).
"""

from __future__ import annotations

import itertools
import unittest
from dataclasses import fields
from datetime import datetime, timezone
from typing import Any, Callable, Dict, List

import psycopg

from . import helpers as h
from a2_client import (
    A2Store,
    AlreadyRedriven,
    Busy,
    Cause,
    Claimed,
    ClaimRef,
    CorruptEventError,
    Event,
    ForbiddenError,
    InvalidPayloadError,
    NewEvent,
    NotConfiguredError,
    NotDeadLetteredError,
    NotFoundError,
    NullValueError,
    PartialDuplicateBatchError,
    Redriven,
    RenewResult,
    ReturnedEvent,
    SessionUnfinishedError,
    Settled,
    Snapshot,
    SnapshotWrite,
    StateRequest,
    StoredEvent,
    StoreUnavailableError,
    SupersededError,
)

DB = "a2_py_store"
T0 = h.utc("2026-01-01T00:00:00+00:00")

STORED_FIELDS = [
    "id", "type", "payload", "index", "session_id", "created_at", "cause", "lane",
    "processed_at", "processed_by_attempt", "returned_event_ids", "first_claimed_at",
    "last_claimed_at", "attempt_count", "failure_count", "last_failed_at",
    "last_failed_attempt", "last_error", "failed_at", "claim_holder", "claim_expires_at",
    "not_before", "queue", "priority", "concurrency_key", "cancelled_at", "cancel_reason",
    "wait_for", "wait_result",
]

_n = itertools.count(1)


def session() -> str:
    return f"s-{next(_n)}"


def events(n: int, **kw: Any) -> List[NewEvent]:
    return [NewEvent(type="t", payload=i, **kw) for i in range(n)]


class StoreTest(unittest.TestCase):
    store: A2Store
    clock: h.ManualClock

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.clock = h.ManualClock()
        cls.store = h.store_on(DB, clock=cls.clock)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.store.close()
        h.drop_database(DB)

    def sql(self, query: str, params: Any = None) -> List[Any]:
        with h.admin(DB) as c:
            cur = c.execute(query, params)
            return cur.fetchall() if cur.description else []


class AppendTest(StoreTest):
    def test_result_shapes(self) -> None:
        s = session()
        r = self.store.append(s, [NewEvent(id="a1", type="order.placed", payload={"qty": 2})])
        self.assertIs(r.has_pending, True)
        self.assertEqual([f.name for f in fields(StoredEvent)], STORED_FIELDS)
        self.assertEqual(r.events, [StoredEvent(
            id="a1", type="order.placed", payload={"qty": 2}, index=1, session_id=s, created_at=self.clock(),
            cause=None, lane=None, processed_at=None, processed_by_attempt=None, returned_event_ids=None,
            first_claimed_at=None, last_claimed_at=None, attempt_count=0, failure_count=0,
            last_failed_at=None, last_failed_attempt=None, last_error=None, failed_at=None,
            claim_holder=None, claim_expires_at=None)])
        e = r.events[0]
        self.assertEqual(e.created_at.tzinfo, timezone.utc)
        self.assertIsInstance(e.index, int)

    def test_json_round_trip(self) -> None:
        s = session()
        payloads: List[Any] = [[], {}, [1, [2, []]], 'it\'s "quoted" \\ {a,b}', None, 0, True, {"a": []},
                               "ünïcødé ✓ 日本", 2 ** 62, 1.5]
        r = self.store.append(s, [NewEvent(type="t", payload=p) for p in payloads])
        self.assertEqual([e.payload for e in r.events], payloads)
        self.assertEqual([e.payload for e in self.store.read(s)], payloads)
        # A missing payload is null; plain mappings are accepted as they are.
        m = self.store.append(s, [NewEvent(type="t"), {"type": "m", "payload": ["x"]}])
        self.assertEqual([e.payload for e in m.events], [None, ["x"]])

    def test_empty_batch(self) -> None:
        s = session()
        self.assertEqual((self.store.append(s, []).events, self.store.append(s, []).has_pending), ([], False))
        self.store.append(s, [NewEvent(type="audit", settled=True)])
        self.assertIs(self.store.append(s, []).has_pending, False)
        self.store.append(s, [NewEvent(type="job")])
        self.assertIs(self.store.append(s, []).has_pending, True)
        self.assertEqual(len(self.store.read(s)), 2)

    def test_dense_indexes_and_settled(self) -> None:
        s = session()
        r = self.store.append(s, [NewEvent(type="a"), NewEvent(type="b", settled=True), NewEvent(type="c")])
        self.assertEqual([e.index for e in r.events], [1, 2, 3])
        self.assertEqual(r.events[1].processed_at, self.clock())
        self.assertIsNone(r.events[0].processed_at)

    def test_generated_ids(self) -> None:
        s = session()
        r = self.store.append(s, [NewEvent(type="a")])
        self.assertRegex(r.events[0].id, r"^[0-9a-f-]{36}$")
        k = itertools.count(1)
        with A2Store(h.target(DB), ids=lambda: f"gen-{s}-{next(k)}") as with_ids:
            r2 = with_ids.append(s, [NewEvent(type="b"), NewEvent(id="mine", type="c"), {"type": "d"}])
        self.assertEqual([e.id for e in r2.events], [f"gen-{s}-1", "mine", f"gen-{s}-2"])

    def test_unknown_keys_of_a_mapping_are_refused(self) -> None:
        s = session()
        with self.assertRaises(InvalidPayloadError) as cm:
            self.store.append(s, [{"type": "a", "paylaod": 1}])
        self.assertEqual(cm.exception.sqlstate, "22023")
        self.assertIn("paylaod", cm.exception.message)
        self.assertEqual(self.store.read(s), [])

    def test_idempotent_replay(self) -> None:
        s = session()
        batch = [NewEvent(id=f"{s}-1", type="a", payload={"x": 1}), NewEvent(id=f"{s}-2", type="b")]
        first = self.store.append(s, batch)
        self.clock.advance(1000)
        again = self.store.append(s, batch)
        self.assertEqual(again.events, first.events)
        self.assertEqual(len(self.store.read(s)), 2)

    def test_partial_duplicate_batch(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(id=f"{s}-1", type="a", payload=1)])
        for batch in ([NewEvent(id=f"{s}-1", type="a", payload=2)],
                      [NewEvent(id=f"{s}-1", type="a", payload=1), NewEvent(type="b")],
                      [NewEvent(id="same", type="a"), NewEvent(id="same", type="a")]):
            with self.assertRaises(PartialDuplicateBatchError) as cm:
                self.store.append(s, batch)
            self.assertEqual((cm.exception.sqlstate, cm.exception.code), ("Z2001", "PARTIAL_DUPLICATE_BATCH"))
        with self.assertRaises(PartialDuplicateBatchError):
            self.store.append(session(), [NewEvent(id=f"{s}-1", type="a", payload=1)])
        self.assertEqual(len(self.store.read(s)), 1)

    def test_attempt_fence(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.assertIsInstance(self.store.claim(s, "w", 1000), Claimed)
        ok = self.store.append(s, [NewEvent(type="progress", cause=Cause(index=1, attempt=1, batch_size=2))])
        self.assertEqual(ok.events[0].cause, Cause(index=1, attempt=1, batch_size=2))
        with self.assertRaises(SupersededError) as cm:
            self.store.append(s, [NewEvent(type="progress", cause=Cause(index=1, attempt=2))])
        err = cm.exception
        self.assertEqual((err.sqlstate, err.session_id, err.index, err.attempt), ("Z2002", s, 1, 2))
        self.assertIsInstance(err.__cause__, psycopg.Error)
        with self.assertRaises(NotFoundError) as nf:
            self.store.append(s, [NewEvent(type="x", cause=Cause(index=99, attempt=1))])
        self.assertEqual(nf.exception.message, f'no event at index 99 in session "{s}"')
        self.assertIsInstance(nf.exception, LookupError)

    def test_lanes(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a", lane="pay"), NewEvent(type="b", lane="pay"), NewEvent(type="c")])
        c = self.store.claim(s, "w", 1000)
        assert isinstance(c, Claimed)
        self.assertEqual([e.index for e in c.events], [1, 3])
        self.assertEqual(c.events[0].lane, "pay")
        self.store.complete(s, 1, 1)
        c2 = self.store.claim(s, "w", 1000)
        assert isinstance(c2, Claimed)
        self.assertEqual([e.index for e in c2.events], [2])


class ReadTest(StoreTest):
    def test_bounds(self) -> None:
        s = session()
        self.store.append(s, events(5))
        def idx(evs: List[StoredEvent]) -> List[int]:
            return [e.index for e in evs]

        self.assertEqual(idx(self.store.read(s)), [1, 2, 3, 4, 5])
        self.assertEqual(idx(self.store.read(s, after_index=2)), [3, 4, 5])
        self.assertEqual(idx(self.store.read(s, through_index=2)), [1, 2])
        self.assertEqual(idx(self.store.read(s, after_index=1, through_index=3)), [2, 3])
        self.assertEqual(idx(self.store.read(s, after_index=1, limit=2)), [2, 3])
        self.assertEqual(self.store.read(session()), [])


class ClaimTest(StoreTest):
    def test_claim_busy_expiry(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a"), NewEvent(type="b")])
        c = self.store.claim(s, "w1", 30_000)
        assert isinstance(c, Claimed)
        self.assertEqual([(e.index, e.attempt_count, e.claim_holder) for e in c.events], [(1, 1, "w1"), (2, 1, "w1")])
        at = self.clock()
        self.assertEqual((c.events[0].first_claimed_at, c.events[0].last_claimed_at), (at, at))
        self.assertEqual(c.events[0].claim_expires_at, h.ms(at, 30_000))
        self.clock.advance(10_000)
        self.assertEqual(self.store.claim(s, "w2", 30_000), Busy(retry_at=h.ms(at, 30_000)))
        self.clock.advance(20_000)  # exactly at expiry: claimable
        again = self.store.claim(s, "w2", 5000)
        assert isinstance(again, Claimed)
        self.assertEqual([e.attempt_count for e in again.events], [2, 2])
        self.assertEqual(again.events[0].first_claimed_at, at)
        self.assertEqual(again.events[0].last_claimed_at, self.clock())

    def test_settled_expires_at_exclude(self) -> None:
        s = session()
        self.assertEqual(self.store.claim(s, "w", 1), Settled())
        self.store.append(s, [NewEvent(type="a"), NewEvent(type="b")])
        at = h.ms(self.clock(), 123_456)
        c = self.store.claim(s, "w", 1, expires_at=at, exclude_indexes=[2])
        assert isinstance(c, Claimed)
        self.assertEqual([e.index for e in c.events], [1])
        self.assertEqual(c.events[0].claim_expires_at, at)
        self.assertEqual(self.store.claim(s, "w", 1000, exclude_indexes=[2]), Busy(retry_at=at))

    def test_huge_lease_beyond_datetime(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a")])
        c = self.store.claim(s, "w", 8_000_000_000_000_000)
        assert isinstance(c, Claimed)
        self.assertEqual(c.events[0].claim_expires_at, datetime.max.replace(tzinfo=timezone.utc))

    def test_renew(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a"), NewEvent(type="b"), NewEvent(type="c")])
        self.store.claim(s, "w", 1000)
        self.clock.advance(1000)  # all three expire
        self.store.claim(s, "w", 1000, exclude_indexes=[1])  # 2 and 3 at attempt 2
        r = self.store.renew(s, "w", [ClaimRef(3, 2), (1, 1), {"index": 2, "attempt": 1}], 60_000)
        # 1: expired (neither); 2: attempt 1 is superseded by 2; 3: renewed.
        self.assertEqual(r, RenewResult(renewed=[3], superseded=[2]))
        e3 = self.store.read(s, after_index=2)[0]
        self.assertEqual(e3.claim_expires_at, h.ms(self.clock(), 60_000))
        self.assertEqual(self.store.renew(s, "w", [], 1), RenewResult(renewed=[], superseded=[]))
        self.assertEqual(self.store.renew(s, "intruder", [e3], 1), RenewResult(renewed=[], superseded=[]))
        self.assertEqual(self.store.renew(s, "w", [e3], 1).renewed, [3])  # a StoredEvent names its attempt

    def test_claim_next(self) -> None:
        a, b, c = session(), session(), session()
        for x in (a, b, c):
            self.store.append(x, [NewEvent(type="job"), NewEvent(type="job")])
            self.clock.advance(1)
        r = self.store.claim_next("fleet", 30_000, 2)
        # Oldest available work first: a, then b; each session's every eligible event.
        mine = [cl for cl in r.claims if cl.session_id in (a, b, c)]
        self.assertEqual([cl.session_id for cl in mine], [a, b])
        self.assertEqual([[(e.index, e.attempt_count, e.claim_holder) for e in cl.events] for cl in mine],
                         [[(1, 1, "fleet"), (2, 1, "fleet")]] * 2)
        self.assertIsNotNone(r.retry_at)
        rest = self.store.claim_next("fleet", 30_000, 10_000)
        self.assertIn(c, [cl.session_id for cl in rest.claims])
        self.assertEqual(self.store.claim_next("fleet", 30_000, 10).claims, [])
        with self.assertRaises(InvalidPayloadError):
            self.store.claim_next("fleet", 1000, 0)


class CompleteFailTest(StoreTest):
    def test_complete(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 1000)
        r = self.store.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-c", type="child", payload=[], settled=True)])
        self.assertEqual(r.outcome, "completed")
        self.assertEqual([(e.index, e.cause, e.payload) for e in r.events], [(2, Cause(1, 1), [])])
        self.assertEqual(r.events[0].processed_at, self.clock())
        # The same completion again: an idempotent retry returning the stored children.
        self.assertEqual(self.store.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-c", type="child", payload=[],
                                                                     settled=True)]), r)
        parent = self.store.read(s, through_index=1)[0]
        self.assertEqual((parent.processed_by_attempt, parent.returned_event_ids), (1, [f"{s}-c"]))

    def test_superseded_completion_raises(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 1000)
        self.clock.advance(1000)
        self.store.claim(s, "w2", 1000)  # attempt 2
        with self.assertRaises(SupersededError) as cm:
            self.store.complete(s, 1, 1)
        err = cm.exception
        self.assertEqual((err.sqlstate, err.code, err.session_id, err.index, err.attempt),
                         ("Z2002", "SUPERSEDED_ATTEMPT", s, 1, 1))
        self.assertEqual(err.message, f'attempt 1 no longer owns event 1 in session "{s}"')
        self.assertIsNone(self.store.read(s)[0].processed_at)
        with self.assertRaises(NotFoundError):
            self.store.complete(s, 9, 1)

    def test_complete_duplicate_children(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a"), NewEvent(type="b")])
        self.store.claim(s, "w", 1000)
        with self.assertRaises(PartialDuplicateBatchError):
            self.store.complete(s, 2, 1, [ReturnedEvent(id="d", type="x"), ReturnedEvent(id="d", type="x")])

    def test_expired_lease_may_complete(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job")])
        self.store.claim(s, "w", 10)
        self.clock.advance(60_000)
        self.assertEqual(self.store.complete(s, 1, 1).events, [])

    def test_fail_retry_dead_letter(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="job", lane="l"), NewEvent(type="next", lane="l")])
        self.store.claim(s, "w", 1000)
        f1 = self.store.fail(s, 1, 1, "card declined", 2)
        self.assertEqual((f1.outcome, f1.failure_count), ("failed", 1))
        self.assertEqual(self.store.fail(s, 1, 1, "again", 2), f1)  # idempotent
        e = self.store.read(s, through_index=1)[0]
        self.assertEqual((e.last_error, e.last_failed_attempt, e.last_failed_at, e.claim_holder),
                         ("card declined", 1, self.clock(), None))
        c = self.store.claim(s, "w", 1000)  # at once: the lease was cleared
        assert isinstance(c, Claimed)
        self.assertEqual([(x.index, x.attempt_count) for x in c.events], [(1, 2)])
        with self.assertRaises(SupersededError) as cm:
            self.store.fail(s, 1, 1, "old", 2)
        self.assertEqual((cm.exception.index, cm.exception.attempt), (1, 1))
        dl = self.store.fail(s, 1, 2, None, 2)
        self.assertEqual((dl.outcome, dl.failure_count), ("dead_lettered", 2))
        dead = self.store.read(s, through_index=1)[0]
        self.assertEqual((dead.failed_at, dead.last_error, dead.finished), (self.clock(), None, True))
        self.assertEqual(self.store.claim(s, "w", 1000), Settled())  # the lane stays blocked
        with self.assertRaises(NotFoundError):
            self.store.fail(s, 7, 1, "x", 1)

    def test_redrive(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="a"), NewEvent(type="b"), NewEvent(type="c")])
        self.store.claim(s, "w", 1000)
        for i in (1, 2):
            self.store.fail(s, i, 1, f"boom {i}", 1)
        r = self.store.redrive(s, 1)
        assert isinstance(r, Redriven)
        self.assertEqual((r.event.failed_at, r.event.failure_count, r.event.last_error), (None, 0, "boom 1"))
        again = self.store.redrive(s, 1)
        self.assertIsInstance(again, AlreadyRedriven)
        with self.assertRaises(NotDeadLetteredError) as cm:
            self.store.redrive(s, 3)
        self.assertEqual(cm.exception.sqlstate, "Z2004")
        with self.assertRaises(NotFoundError):
            self.store.redrive(s, 99)
        self.assertEqual([e.index for e in self.store.redrive_session(s)], [2])
        self.assertEqual(self.store.redrive_session(s), [])
        c = self.store.claim(s, "w", 1000)
        assert isinstance(c, Claimed)
        self.assertEqual([(e.index, e.attempt_count) for e in c.events], [(1, 2), (2, 2)])
        with self.assertRaises(SupersededError):  # the dead attempt stays fenced out
            self.store.complete(s, 1, 1)


class SnapshotTest(StoreTest):
    def test_snapshots_state_pins(self) -> None:
        s = session()
        self.store.append(s, events(4))
        log = self.store.read(s)
        self.assertEqual(self.store.read_state(s, "sum").events,
                         [Event(e.id, e.type, e.payload, e.index, e.session_id, e.created_at) for e in log])
        self.store.put_snapshots(s, "sum", [SnapshotWrite(2, {"total": 3}, pin_event_indexes=(3,)),
                                            {"index": 4, "state": {"total": 10}}])
        head = self.store.read_state(s, "sum")
        self.assertEqual((head.head_index, head.snapshot, head.events), (4, Snapshot(4, {"total": 10}), []))
        bounded = self.store.read_state(s, "sum", through_index=3)
        self.assertEqual((bounded.head_index, bounded.snapshot), (4, Snapshot(2, {"total": 3})))
        self.assertEqual([e.index for e in bounded.events], [3])
        self.assertIs(type(bounded.events[0]), Event)
        split = self.store.read_state(s, "sum", through_index=4, snapshot_through_index=3)
        self.assertEqual((split.snapshot and split.snapshot.index, [e.index for e in split.events]), (2, [3, 4]))
        infos = self.store.list_snapshots(s, include_history=True)
        self.assertEqual([(i.reducer_name, i.index, i.head) for i in infos], [("sum", 2, False), ("sum", 4, True)])
        self.assertEqual([(i.index, i.head) for i in self.store.list_snapshots(s)], [(4, None)])
        # Completing event 3 releases the pin; the history checkpoint goes.
        self.store.claim(s, "w", 1000, exclude_indexes=[1, 2, 4])
        self.store.complete(s, 3, 1)
        after = self.store.read_state(s, "sum", through_index=3)
        self.assertEqual((after.snapshot, [e.index for e in after.events]), (None, [1, 2, 3]))
        self.store.put_snapshots(s, "sum", [])
        self.store.put_snapshots(s, "other", [SnapshotWrite(1)])
        self.assertEqual(self.store.read_state(s, "other").snapshot, Snapshot(1, None))

    def test_read_states(self) -> None:
        a, b = session(), session()
        self.store.append(a, events(2))
        self.store.append(b, events(1))
        self.store.put_snapshots(b, "r", [SnapshotWrite(1, [])])
        r = self.store.read_states([b, StateRequest(a, through_index=1), {"sessionId": "nobody"}], "r")
        self.assertEqual([(x.head_index, x.snapshot, [e.index for e in x.events]) for x in r],
                         [(1, Snapshot(1, []), []), (None, None, [1]), (None, None, [])])
        self.assertEqual(self.store.read_states([], "r"), [])


class PresenceTest(StoreTest):
    def test_last_writer_wins_tombstones_expiry(self) -> None:
        ns = f"room-{session()}"
        t0 = self.clock()
        self.store.presence_set(ns, "alice", {"cursor": 10, "typing": True, "tags": []}, at=t0, seen=1, ttl_ms=5000)
        rows = self.store.presence_read(ns)
        self.assertEqual([(r.participant, r.field, r.value, r.seen, r.at, r.expires_at) for r in rows],
                         [("alice", f, v, 1, t0, h.ms(t0, 5000)) for f, v in
                          (("cursor", 10), ("tags", []), ("typing", True))])
        t1 = h.ms(t0, 10)
        self.store.presence_set(ns, "alice", {"typing": None}, at=t1, seen=2, ttl_ms=5000)
        # An older write arriving later loses, and cannot bring "typing" back.
        self.store.presence_set(ns, "alice", {"typing": True, "cursor": 3}, at=h.ms(t0, -1), seen=3, ttl_ms=5000)
        def fv() -> List[Any]:
            return [(r.field, r.value) for r in self.store.presence_read(ns)]

        self.assertEqual(fv(), [("cursor", 10), ("tags", [])])
        self.store.presence_set(ns, "alice", {"cursor": 4}, at=t0, seen=3, ttl_ms=5000)  # a tie: the new write
        self.assertEqual(fv(), [("cursor", 4), ("tags", [])])
        self.store.presence_set(ns, "alice", {}, at=t1, seen=4, ttl_ms=5000)  # nothing to write
        self.clock.advance(5000)
        self.assertEqual(self.store.presence_read(ns), [])


class InspectionTest(StoreTest):
    def test_list_sessions_pages(self) -> None:
        prefix = f"ls-{session()}:"
        for i in range(5):
            self.store.append(f"{prefix}{i}", events(2))
        self.store.claim(f"{prefix}0", "w", 1000)
        self.store.fail(f"{prefix}0", 1, 1, "x", 1)
        seen: List[str] = []
        cursor = None
        pages = 0
        while True:
            page = self.store.list_sessions(prefix, cursor=cursor, limit=2)
            pages += 1
            seen += [x.session_id for x in page.sessions]
            if page.cursor is None:
                break
            cursor = page.cursor
        self.assertEqual(seen, [f"{prefix}{i}" for i in range(5)])
        self.assertEqual(pages, 3)
        first = self.store.list_sessions(prefix, limit=1).sessions[0]
        self.assertEqual((first.event_count, first.pending_count, first.failed_count, first.attempt_count,
                          first.failure_count), (2, 1, 1, 2, 1))
        self.assertIsInstance(first.updated_at, datetime)

    def test_metrics_and_notify_status(self) -> None:
        m = self.store.metrics()
        self.assertIsInstance(m.eligible_events, int)
        self.assertEqual(m.measured_at, self.clock())  # the store clock
        before = m.eligible_events
        s = session()
        self.store.append(s, events(3))
        self.assertEqual(self.store.metrics().eligible_events, before + 3)
        st = self.store.notify_status()
        self.assertIn(st.mode, ("notifier", "in-transaction", "off"))
        self.assertIs(self.store.notify_wait(5000), True)

    def test_drop_sessions(self) -> None:
        s = session()
        self.store.append(s, events(2))
        with self.assertRaises(SessionUnfinishedError) as cm:
            self.store.drop_session(s)
        self.assertEqual(cm.exception.sqlstate, "Z2010")
        d = self.store.drop_session(s, force=True)
        self.assertEqual((d.session_id, d.dropped, d.events, d.last_index), (s, True, 2, 2))
        self.assertEqual([e.index for e in self.store.append(s, events(1)).events], [3])  # never reused
        self.assertIs(self.store.drop_session(session()).dropped, False)
        self.assertIsInstance(self.store.drop_finished_sessions(10 ** 12, 10), int)


class ErrorTest(StoreTest):
    def test_bad_input_is_invalid_payload_never_unavailable(self) -> None:
        s = session()
        with self.assertRaises(InvalidPayloadError) as cm:
            self.store.append(s, [{"type": 5}])
        self.assertEqual(cm.exception.sqlstate, "22023")
        self.assertFalse(cm.exception.retryable)
        with self.assertRaises(NullValueError) as null:
            self.store.append(None, [])  # type: ignore[arg-type]
        self.assertEqual(null.exception.sqlstate, "22004")
        self.assertIsInstance(null.exception, InvalidPayloadError)
        with self.assertRaises(InvalidPayloadError) as client_side:
            self.store.read(s, after_index=1.5)  # type: ignore[arg-type]
        self.assertIsNone(client_side.exception.sqlstate)  # refused before any I/O
        with self.assertRaises(InvalidPayloadError) as big:
            self.store.read(s, after_index=2 ** 64)
        self.assertTrue(big.exception.sqlstate and big.exception.sqlstate.startswith("22"))
        calls: List[Callable[[], object]] = [
                     lambda: self.store.claim(s, "w", -1),
                     lambda: self.store.claim(s, "w", 1, expires_at=datetime(2026, 1, 1)),  # naive
                     lambda: self.store.fail(s, 0, 1, "x", 1),
                     lambda: self.store.append(s, [NewEvent(type="t", payload={"n": {1, 2}})]),
                     lambda: self.store.append(s, [NewEvent(type="t", payload=float("nan"))]),
                     lambda: self.store.append(s, [NewEvent(type="t", payload=datetime.now())]),
                     lambda: self.store.append("x" * 2000, [NewEvent(type="t")]),
                     lambda: self.store.append(s, "not a list"),  # type: ignore[arg-type]
                     lambda: self.store.presence_set(s, "p", ["x"], at=T0, seen=1, ttl_ms=1)]  # type: ignore
        for call in calls:
            with self.assertRaises(InvalidPayloadError):
                call()
        self.assertEqual(self.store.read(s), [])

    def test_forbidden(self) -> None:
        with h.admin(DB) as c:
            c.execute("DROP ROLE IF EXISTS regress_py_reader")
            c.execute("CREATE ROLE regress_py_reader LOGIN")
            c.execute("GRANT SELECT ON a2_events TO regress_py_reader")
        try:
            with A2Store(psycopg.conninfo.make_conninfo(h.target(DB), user="regress_py_reader")) as st:
                self.assertEqual(st.read("nobody"), [])
                with self.assertRaises(ForbiddenError) as cm:
                    st.append("s", [NewEvent(type="t")])
                self.assertEqual((cm.exception.sqlstate, cm.exception.code), ("42501", "FORBIDDEN"))
        finally:
            with h.admin(DB) as c:
                c.execute("DROP OWNED BY regress_py_reader")
                c.execute("DROP ROLE regress_py_reader")

    def test_corrupt_row(self) -> None:
        s = session()
        self.store.append(s, [NewEvent(type="t")])
        self.sql("""UPDATE a2_events SET cause = '{"index": 0, "attempt": 1}' WHERE session_id = %s""", [s])
        with self.assertRaises(CorruptEventError) as cm:
            self.store.read(s)
        self.assertEqual(cm.exception.sqlstate, "XX001")
        self.assertIn("invalid cause", cm.exception.message)

    def test_unavailable(self) -> None:
        with A2Store(h.direct("a2_py_no_such_database")) as st:
            with self.assertRaises(StoreUnavailableError) as cm:
                st.read("s")
            self.assertTrue(cm.exception.retryable)
            self.assertIsInstance(cm.exception.__cause__, psycopg.OperationalError)
        with A2Store("postgresql://postgres@127.0.0.1:1/x?connect_timeout=2") as refused:
            with self.assertRaises(StoreUnavailableError):
                refused.append("s", [])
        # A statement timeout (57014), here behind a session lock another transaction holds.
        s = session()
        with h.admin(DB) as holder, holder.transaction():
            holder.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", [s])
            with A2Store(h.direct(DB, options="-c statement_timeout=200")) as slow:
                with self.assertRaises(StoreUnavailableError) as t:
                    slow.append(s, [NewEvent(type="t")])
                self.assertEqual(t.exception.sqlstate, "57014")
                self.assertTrue(t.exception.retryable)
        self.assertEqual(self.store.read(s), [])

    def test_one_source(self) -> None:
        with self.assertRaises(TypeError):
            A2Store()
        with psycopg.connect(h.direct(DB)) as conn, self.assertRaises(TypeError):
            A2Store(h.direct(DB), connection=conn)
        with self.assertRaises(ValueError):
            A2Store(h.direct(DB), poll_interval=0)


class RecordingCursor(psycopg.Cursor[Any]):
    log: List[Any] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> "RecordingCursor":
        RecordingCursor.log.append((query, kwargs.get("prepare")))
        super().execute(query, params, **kwargs)
        return self


class WireTest(StoreTest):
    def test_one_unprepared_statement_per_call_and_the_clock_rides_in_it(self) -> None:
        # A connection that would prepare every statement on its first use.
        conn = psycopg.connect(h.target(DB), autocommit=True, prepare_threshold=0,
                               cursor_factory=RecordingCursor)
        st = A2Store(connection=conn, clock=self.clock)
        s = session()
        calls: Dict[str, Callable[[], object]] = {
            "append": lambda: st.append(s, [NewEvent(type="job")]),
            "read": lambda: st.read(s),
            "claim": lambda: st.claim(s, "w", 1000),
            "renew": lambda: st.renew(s, "w", [ClaimRef(1, 1)], 1000),
            "complete": lambda: st.complete(s, 1, 1, [ReturnedEvent(id=f"{s}-c", type="c")]),
            "fail": lambda: st.fail(s, 2, 1, "x", 1),
            "redrive": lambda: st.redrive(s, 2),
            "claim_next": lambda: st.claim_next("w", 1000, 1),
            "read_state": lambda: st.read_state(s, "r"),
            "read_states": lambda: st.read_states([s], "r"),
            "put_snapshots": lambda: st.put_snapshots(s, "r", [SnapshotWrite(1, {})]),
            "presence_set": lambda: st.presence_set(s, "p", {"f": 1}, at=self.clock(), seen=1, ttl_ms=1000),
            "presence_read": lambda: st.presence_read(s),
            "list_sessions": lambda: st.list_sessions(s),
            "list_snapshots": lambda: st.list_snapshots(s),
            "metrics": lambda: st.metrics(),
        }
        # read is timed: it judges waits' timeouts (a2 0.4.0) at the store clock
        untimed = {"read_state", "read_states", "list_sessions", "list_snapshots"}
        try:
            for name, call in calls.items():
                for _ in range(2 if name in ("complete", "redrive") else 6):
                    RecordingCursor.log.clear()
                    call()
                    self.assertEqual(len(RecordingCursor.log), 1, name)
                    text, prepare = RecordingCursor.log[0]
                    self.assertIs(prepare, False, name)
                    self.assertRegex(text, r"^SELECT ", name)
                    self.assertEqual("set_config('a2.now', %s::text, true)" in text, name not in untimed,
                                     f"{name}: {text}")
            row = conn.execute("SELECT count(*) FROM pg_prepared_statements", prepare=False).fetchone()
            if not h.VIA_BOUNCER:  # through the pooler this asks some server connection
                self.assertEqual(row and row[0], 0)
        finally:
            conn.close()

    def test_nothing_of_the_clock_is_left_on_the_connection(self) -> None:
        with psycopg.connect(h.target(DB), autocommit=True) as conn:
            st = A2Store(connection=conn, clock=h.ManualClock("2030-05-05T05:05:05.005+00:00"))
            r = st.append(session(), [NewEvent(type="t")])
            self.assertEqual(r.events[0].created_at, h.utc("2030-05-05T05:05:05.005+00:00"))
            row = conn.execute("SELECT coalesce(current_setting('a2.now', true), '')").fetchone()
            self.assertEqual(row and row[0], "")
            wall = A2Store(connection=conn)
            w = wall.append(session(), [NewEvent(type="t")])
            self.assertLess(abs((w.events[0].created_at - datetime.now(timezone.utc)).total_seconds()), 60)

    def test_own_pool_is_lazy_and_closed(self) -> None:
        st = A2Store(h.target(DB), max_size=2)
        self.assertEqual(st.pool_size, 0)  # no I/O until the first call
        s = session()
        st.append(s, [NewEvent(type="t")])
        self.assertEqual(len(st.read(s)), 1)
        self.assertEqual(st.pool_size, 1)
        st.close()
        self.assertEqual(st.pool_size, 0)
        with self.assertRaises(StoreUnavailableError):
            st.read(s)

    def test_terminated_idle_connection_is_replaced(self) -> None:
        if h.VIA_BOUNCER:
            self.skipTest("pgbouncer replaces its own server connections")
        st = A2Store(h.target(DB), max_size=1)
        try:
            s = session()
            st.append(s, [NewEvent(type="t")])
            st.read(s)
            self.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s "
                     "AND pid <> pg_backend_pid() AND query LIKE %s", [DB, "%a2_read%"])
            h.sleep(0.2)
            self.assertEqual(len(st.read(s)), 1)  # a new connection, no error
        finally:
            st.close()


class SchemaTest(unittest.TestCase):
    def test_extension_outside_search_path(self) -> None:
        db = "a2_py_schema"
        h.fresh_database(db, "queue")
        try:
            with A2Store(h.target(db)) as plain:
                with self.assertRaises(NotConfiguredError) as cm:
                    plain.read("s")
                self.assertEqual(cm.exception.sqlstate, "42883")
            with A2Store(h.target(db), schema="queue") as st:
                st.append("s", [NewEvent(type="t", payload=[])])
                self.assertEqual([e.payload for e in st.read("s")], [[]])
                self.assertIsInstance(st.claim("s", "w", 1000), Claimed)
        finally:
            h.drop_database(db)


if __name__ == "__main__":
    unittest.main()
