"""store.stream() (sync): catch-up plus live, no gap while appends race the
LISTEN, reconnect after the listener's backend is terminated, the polling
fallback, one shared listener, paging, close() (the port of
stream.test.ts).

Where a test must prove that a notification (not the poll) delivered an
event, the store polls every 60 s and the test waits at most a few.
"""

from __future__ import annotations

import itertools
import unittest


import psycopg

from . import helpers as h
from a2_client import A2Store, InvalidPayloadError, NewEvent

DB = "a2_py_stream"
NO_POLL = 60.0
_n = itertools.count(1)


def session() -> str:
    return f"st-{next(_n)}"


LISTENERS = "query = 'LISTEN a2_events' AND state = 'idle'"


class StreamTest(unittest.TestCase):
    writer: A2Store

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        cls.writer = h.store_on(DB)

    @classmethod
    def tearDownClass(cls) -> None:
        cls.writer.close()
        h.drop_database(DB)

    def append_n(self, s: str, count: int, start: int = 0) -> None:
        for i in range(count):
            self.writer.append(s, [NewEvent(type="t", payload=start + i)])

    def test_catch_up_then_live_by_notification(self) -> None:
        with h.store_on(DB, poll_interval=NO_POLL) as store:
            s = session()
            self.append_n(s, 3)
            it = store.stream(s, start_after=1)
            first = h.take(it, 2, 5, "catch-up")
            self.assertEqual([e.index for e in first], [2, 3])
            live = h.take_async(it, 2)
            h.sleep(0.05)
            self.append_n(s, 2, 3)
            self.assertEqual([(e.index, e.payload) for e in h.within(live, 5, "live (notification)", it)],
                             [(4, 3), (5, 4)])
            self.assertEqual(store.listener.listens, 1)
            it.close()
            with self.assertRaises(StopIteration):
                next(it)

    def test_misses_nothing_while_appends_race_the_listen(self) -> None:
        # Each round opens a fresh store (a fresh LISTEN) while a writer appends,
        # starting a little later every round, so that across the rounds the
        # last append lands before the first read, between it and the LISTEN,
        # and after the LISTEN. With the poll off, an event missed by the
        # catch-up would never arrive.
        listened_first = 0
        for rnd in range(60):
            with h.store_on(DB, poll_interval=NO_POLL, max_size=2) as store:
                s = session()

                def appends(s: str = s, rnd: int = rnd) -> None:
                    h.sleep((rnd % 15) / 1000)
                    for i in range(3):
                        self.writer.append(s, [NewEvent(type="t", payload=i)])

                writing = h.background(appends)
                it = store.stream(s)
                got = h.take(it, 3, 10, f"round {rnd}: all 3 events")
                writing.result(10)
                self.assertEqual([e.index for e in got], [1, 2, 3], f"round {rnd}")
                if store.listener.listens == 1:
                    listened_first += 1
        self.assertEqual(listened_first, 60)

    def test_reconnects_after_terminate_and_catches_up(self) -> None:
        with h.store_on(DB, poll_interval=NO_POLL) as store:
            s = session()
            self.append_n(s, 1)
            it = store.stream(s)
            self.assertEqual([e.index for e in h.take(it, 1, 5, "first")], [1])
            listener = store.listener
            pid = listener.backend_pid
            self.assertIsNotNone(pid)
            waiting = h.take_async(it, 1)
            with h.admin() as c:
                row = c.execute("SELECT pg_terminate_backend(%s)", [pid]).fetchone()
            self.assertEqual(row, (True,))
            # Appended while the listener is down or reconnecting: only the
            # catch-up after the new LISTEN can find it.
            self.append_n(s, 1, 1)
            got = h.within(waiting, 10, "the event appended while the listener was down", it)
            self.assertEqual([(e.index, e.payload) for e in got], [(2, 1)])
            h.wait_until(lambda: listener.listens >= 2, 10, "a second LISTEN")
            self.assertNotEqual(listener.backend_pid, pid)
            live = h.take_async(it, 2)
            h.sleep(0.05)
            self.append_n(s, 2, 2)
            self.assertEqual([(e.index, e.payload) for e in h.within(live, 10, "live after reconnect", it)],
                             [(3, 2), (4, 3)])

    def test_polling_with_listen_false(self) -> None:
        with h.store_on(DB, listen=False, poll_interval=0.1) as store:
            s = session()
            self.append_n(s, 1)
            it = store.stream(s)
            self.assertEqual([e.index for e in h.take(it, 1, 5, "catch-up")], [1])
            nxt = h.take_async(it, 1)
            self.append_n(s, 1, 1)
            self.assertEqual([e.index for e in h.within(nxt, 5, "polled event", it)], [2])
            self.assertEqual(store.listener.listens, 0)

    def test_polling_when_writers_set_notify_off(self) -> None:
        # A session-level SET: on a direct connection, never through the pooler.
        with psycopg.connect(h.direct(DB), autocommit=True) as quiet_conn:
            quiet_conn.execute("SET a2.notify = 'off'")
            quiet = A2Store(connection=quiet_conn)
            with h.store_on(DB, poll_interval=0.2) as store:
                s = session()
                it = store.stream(s)
                got = h.take_async(it, 2)
                h.sleep(0.1)
                quiet.append(s, [NewEvent(type="t")])
                quiet.append(s, [NewEvent(type="t")])
                self.assertEqual([e.index for e in h.within(got, 2, "polled events", it)], [1, 2])
                self.assertEqual(store.listener.listens, 1)

    def test_one_listener_many_streams(self) -> None:
        with h.store_on(DB, poll_interval=NO_POLL) as store:
            sessions = [session(), session(), session()]
            streams = [(sessions[i], store.stream(sessions[i])) for i in (0, 1, 2, 0, 1)]
            futures = [h.take_async(it, 2) for _, it in streams]
            h.sleep(0.05)
            for s in sessions:
                self.append_n(s, 2)
            for (s, it), f in zip(streams, futures):
                self.assertEqual([(e.session_id, e.index) for e in h.within(f, 5, "two each", it)],
                                 [(s, 1), (s, 2)])
            self.assertEqual(store.listener.listens, 1)
            self.assertEqual(h.count_backends(DB, LISTENERS), 1)

    def test_pages_through_a_backlog(self) -> None:
        with h.store_on(DB, poll_interval=NO_POLL, page_size=7) as store:
            s = session()
            self.writer.append(s, [NewEvent(type="t", payload=i) for i in range(30)])
            got = h.take(store.stream(s, start_after=3), 27, 5, "backlog")
            self.assertEqual([e.index for e in got], list(range(4, 31)))

    def test_close_ends_a_waiting_next_and_a_for_loop(self) -> None:
        store = h.store_on(DB, poll_interval=NO_POLL)
        s = session()
        self.append_n(s, 1)
        seen = []

        def loop() -> None:
            for e in store.stream(s):
                seen.append(e.index)

        looping = h.background(loop)
        waiting = store.stream(s)
        self.assertEqual([e.index for e in h.take(waiting, 1, 5, "first event")], [1])
        pending = h.take_async(waiting, 1)
        h.wait_until(lambda: seen == [1], 5, "first event of the loop")
        h.sleep(0.05)
        self.assertFalse(pending.done())
        store.close()
        h.within(looping, 2, "the for loop ends on close")
        self.assertEqual(h.within(pending, 2, "a waiting next() ends on close"), [])
        self.assertEqual(seen, [1])

    def test_close_right_after_stream_does_not_hang_and_frees_the_connection(self) -> None:
        for _ in range(5):
            store = h.store_on(DB, poll_interval=NO_POLL, max_size=2)
            it = store.stream(session())
            pending = h.take_async(it, 1)
            h.within(h.background(store.close), 3, "close while connecting")
            self.assertEqual(h.within(pending, 2, "next() ends"), [])
            self.assertEqual(store.pool_size, 0)
        h.wait_until(lambda: h.count_backends(DB, LISTENERS) == 0, 3, "no listener left")

    def test_closing_the_only_stream_releases_the_listener(self) -> None:
        with h.store_on(DB, poll_interval=NO_POLL, max_size=2) as store:
            it = store.stream(session())
            nxt = h.take_async(it, 1)
            h.wait_until(lambda: store.listener.listening, 5, "LISTEN")
            it.close()
            self.assertEqual(h.within(nxt, 2, "next() ends"), [])
            h.wait_until(lambda: not store.listener.listening, 3, "listener released")
            h.wait_until(lambda: h.count_backends(DB, LISTENERS) == 0, 3, "listener backend gone")
            h.sleep(0.1)
            self.assertFalse(store.listener.listening)
            # A new stream starts a new listener.
            s = session()
            it2 = store.stream(s)
            got = h.take_async(it2, 1)
            h.wait_until(lambda: store.listener.listens == 2, 5, "a second LISTEN")
            self.append_n(s, 1)
            self.assertEqual([e.index for e in h.within(got, 5, "after restart", it2)], [1])

    def test_bad_input_ends_the_stream(self) -> None:
        with h.store_on(DB, listen=False) as store:
            it = store.stream("x" * 2000)
            with self.assertRaises(InvalidPayloadError):
                next(it)
            with self.assertRaises(StopIteration):
                next(it)

    def test_an_unavailable_read_is_retried(self) -> None:
        # The reads go to a database that does not exist yet; the stream keeps
        # retrying, and delivers once it does. (Direct: pgbouncer waits
        # server_login_retry before it tries a failed database again.)
        db = "a2_py_stream_late"
        h.drop_database(db)
        store = A2Store(h.direct(db), listen=False, poll_interval=0.1)
        try:
            it = store.stream("late")
            got = h.take_async(it, 1)
            h.sleep(0.5)
            self.assertFalse(got.done())
            # Created with a2 already in it, so no read sees it without.
            h.fresh_database(db + "_tmp")
            with h.admin() as c:
                c.execute(f"ALTER DATABASE {db}_tmp RENAME TO {db}")
            with A2Store(h.direct(db)) as w:
                w.append("late", [NewEvent(type="t")])
            self.assertEqual([e.index for e in h.within(got, 5, "after the database appeared", it)], [1])
        finally:
            store.close()
            h.drop_database(db)




if __name__ == "__main__":
    unittest.main()
