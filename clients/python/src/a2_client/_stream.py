"""store.stream() (sync): live feeds of sessions over one shared LISTEN.

The listener runs in a daemon thread (one more per node in distributed
mode) while at least one stream is open; see ``_listen`` for the design.
It waits on its connection's socket with ``select`` and drains the
notifications libpq has read; a failed connection (a server restart,
``pg_terminate_backend``) is closed and a new one LISTENs again after
50 ms, doubling up to 2 s while it keeps failing. Streams poll meanwhile.

A stream is an iterator for one consumer thread: ``next()`` blocks until an
event arrives, the stream is closed (StopIteration), or a read fails with
anything but StoreUnavailableError (raised once; the stream is then over).
A StoreUnavailableError read is retried after ``min(poll_interval, 1)``
seconds.
"""

from __future__ import annotations

import collections
import select
import socket
import threading
from typing import Any, Callable, Deque, Dict, Iterator, List, Optional, Set, Tuple

import psycopg

from . import _listen as L
from ._pool import with_connect_timeout
from .errors import A2Error, StoreUnavailableError
from .models import Node, StoredEvent

ReadPage = Callable[[str, int, int], List[StoredEvent]]


class _Life:
    """One run of the listener: stop signal and readiness."""

    def __init__(self) -> None:
        self.stop = threading.Event()
        self.ready = threading.Event()
        self.wake_r, self.wake_w = socket.socketpair()
        self.unsettled = 1
        self.lock = threading.Lock()

    def signal(self) -> None:
        if not self.stop.is_set():
            self.stop.set()
            try:
                self.wake_w.send(b"x")
            except OSError:
                pass

    def settle_one(self) -> None:
        with self.lock:
            self.unsettled -= 1
            if self.unsettled <= 0:
                self.ready.set()

    def close(self) -> None:
        self.ready.set()
        self.wake_r.close()
        self.wake_w.close()


class Listener:
    """The listener behind a store's streams (``store.listener``: for tests and monitoring)."""

    def __init__(self, read: ReadPage, settings: L.StreamSettings, conninfo: Callable[[], str],
                 prefix: str, node_connection: Optional[L.NodeConnection]) -> None:
        self._read = read
        self.settings = settings
        self._conninfo = conninfo
        self._prefix = prefix
        self._node_connection = node_connection
        self._lock = threading.RLock()
        self._streams: Dict[str, Set[Stream]] = {}
        self._single = L.Tap()
        self._taps: List[L.Tap] = []
        self._life: Optional[_Life] = None
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        #: How many LISTENs became active, on all nodes.
        self.listens = 0
        #: Whether the last start found a2 distributed; None before the first.
        self.distributed: Optional[bool] = None

    # -- status ---------------------------------------------------------------

    @property
    def listening(self) -> bool:
        return self._single.listening or any(t.listening for t in self._taps)

    @property
    def backend_pid(self) -> Optional[int]:
        """The backend pid of the single-node listening connection."""
        return self._single.backend_pid

    @property
    def nodes(self) -> List[L.NodeStatus]:
        """Distributed mode: each listed node's LISTEN (empty on a single node)."""
        return [t.status() for t in self._taps]

    # -- streams --------------------------------------------------------------

    def open(self, session_id: str, start_after: int) -> "Stream":
        with self._lock:
            if self._closed:
                raise StoreUnavailableError("store is closed")
            s = Stream(self, session_id, start_after)
            self._streams.setdefault(session_id, set()).add(s)
            if self.settings.listen and self._thread is None:
                self._start()
            return s

    def drop(self, s: "Stream") -> None:
        with self._lock:
            group = self._streams.get(s.session_id)
            if group is None:
                return
            group.discard(s)
            if not group:
                del self._streams[s.session_id]
            if not self._streams and self._life is not None:
                self._life.signal()

    def wait_ready(self, s: "Stream") -> None:
        """Until a LISTEN is active (on every node), or failed, or is off."""
        while True:
            with self._lock:
                life = self._life
            if life is None or s.done or life.ready.wait(0.1):
                return

    def read(self, session_id: str, after: int) -> List[StoredEvent]:
        return self._read(session_id, after, self.settings.page_size)

    def close(self, timeout: Optional[float] = None) -> None:
        """Ends every stream and waits for the listening connections to close."""
        with self._lock:
            self._closed = True
            streams = [s for group in self._streams.values() for s in group]
        for s in streams:
            s.close()
        with self._lock:
            if self._life is not None:
                self._life.signal()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout if timeout is not None else 15.0)

    def _stopping(self) -> bool:
        return self._closed or not self._streams

    def _mark_all(self) -> None:
        with self._lock:
            streams = [s for group in self._streams.values() for s in group]
        for s in streams:
            s.mark()

    def _notify(self, channel: str, payload: str, tap: L.Tap) -> None:
        if channel != L.CHANNEL:
            return
        tap.notifications += 1
        parsed = L.parse(payload)
        if parsed is None:
            return
        session_id, index = parsed
        with self._lock:
            streams = list(self._streams.get(session_id, ()))
        for s in streams:
            if index is None or index > s.last:
                s.mark()

    # -- the listener's life ------------------------------------------------------

    def _start(self) -> None:
        life = _Life()
        self._life = life
        self._thread = threading.Thread(target=self._run, args=(life,), name="a2-listener", daemon=True)
        self._thread.start()

    def _run(self, life: _Life) -> None:
        try:
            self._life_loop(life)
        finally:
            life.close()
            with self._lock:
                self._life = None
                self._thread = None
                # A stream opened while we were stopping starts a new life.
                if not self._closed and self._streams and self.settings.listen:
                    self._start()

    def _pause(self, life: _Life, seconds: float) -> None:
        life.stop.wait(seconds)

    def _connect(self, **kwargs: Any) -> psycopg.Connection[Any]:
        conninfo = kwargs.pop("conninfo", "")
        return psycopg.Connection.connect(with_connect_timeout(conninfo), autocommit=True, **kwargs)

    def _life_loop(self, life: _Life) -> None:
        backoff = L.RECONNECT_MIN
        detected = False
        while not life.stop.is_set() and not self._stopping():
            try:
                conn = self._connect(conninfo=self._conninfo())
            except Exception:
                # No LISTEN possible now: streams poll meanwhile.
                self._settle(life)
                self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)
                continue
            if not detected:
                try:
                    nodes = self._detect(conn)
                except Exception:
                    conn.close()
                    self._settle(life)
                    self._mark_all()
                    self._pause(life, backoff)
                    backoff = min(backoff * 2, L.RECONNECT_MAX)
                    continue
                detected = True
                self.distributed = nodes is not None
                if nodes:
                    conn.close()
                    self._distributed(life, nodes)
                    return
                self._taps = []
            lost, active = self._hold(life, conn, self._single)
            if active:
                backoff = L.RECONNECT_MIN
            if lost and not life.stop.is_set():
                self._mark_all()
                self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)

    def _settle(self, life: _Life) -> None:
        if not life.ready.is_set():
            life.settle_one()

    def _detect(self, conn: psycopg.Connection[Any]) -> Optional[List[Node]]:
        """The nodes to LISTEN on, or None for a single node."""
        try:
            row = conn.execute(L.is_distributed_sql(self._prefix), prepare=False).fetchone()
        except psycopg.errors.UndefinedFunction:
            return None  # an a2 0.1.0 install
        if not row or row[0] is not True:
            return None
        return L.to_nodes(conn.execute(L.nodes_sql(self._prefix), prepare=False).fetchall())

    def _distributed(self, life: _Life, nodes: List[Node]) -> None:
        taps = [L.Tap(n) for n in nodes]
        self._taps = taps
        with life.lock:
            life.unsettled = len(taps)
        threads = [threading.Thread(target=self._node_life, args=(life, t), name=f"a2-listener-{t.node}",
                                    daemon=True) for t in taps]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    def _node_life(self, life: _Life, tap: L.Tap) -> None:
        assert tap.node is not None
        backoff = L.RECONNECT_MIN
        settled = False

        def settle() -> None:
            nonlocal settled
            if not settled:
                settled = True
                life.settle_one()

        while not life.stop.is_set() and not self._stopping():
            try:
                kwargs = L.node_settings(self._conninfo(), tap.node, self._node_connection)
                conn = self._connect(**kwargs)
            except Exception:
                settle()
                self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)
                continue
            lost, active = self._hold(life, conn, tap, settle)
            if active:
                backoff = L.RECONNECT_MIN
            if lost and not life.stop.is_set():
                # This node's announcements are lost until it is back.
                self._mark_all()
                self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)

    def _hold(self, life: _Life, conn: psycopg.Connection[Any], tap: L.Tap,
              settle: Optional[Callable[[], None]] = None) -> Tuple[bool, bool]:
        """One LISTEN until the connection fails or the listener must stop."""
        done = settle or (lambda: self._settle(life))
        lost = False
        active = False

        def on_notify(n: psycopg.Notify) -> None:
            self._notify(n.channel, n.payload, tap)

        conn.add_notify_handler(on_notify)
        try:
            conn.execute(f"LISTEN {L.CHANNEL}", prepare=False)
            tap.backend_pid = conn.info.backend_pid
            tap.listening = True
            tap.listens += 1
            self.listens += 1
            active = True
            done()
            self._mark_all()
            while not life.stop.is_set() and not self._stopping():
                readable, _, _ = select.select([conn.fileno(), life.wake_r], [], [])
                if conn.fileno() not in readable:
                    continue
                with conn.lock:
                    conn.pgconn.consume_input()
                    while True:
                        n = conn.pgconn.notifies()
                        if n is None:
                            break
                        self._notify(n.relname.decode("utf-8", "replace"), n.extra.decode("utf-8", "replace"), tap)
                if conn.pgconn.status != psycopg.pq.ConnStatus.OK:
                    raise psycopg.OperationalError("listener connection lost")
        except Exception:
            lost = True
            done()
        finally:
            tap.listening = False
            tap.backend_pid = None
            conn.remove_notify_handler(on_notify)
            if not lost:
                try:
                    conn.execute(f"UNLISTEN {L.CHANNEL}", prepare=False)
                except Exception:
                    lost = True
            conn.close()
        return lost, active


class Stream(Iterator[StoredEvent]):
    """One session's events after ``start_after``, in index order, each once."""

    def __init__(self, hub: Listener, session_id: str, start_after: int) -> None:
        self._hub = hub
        self.session_id = session_id
        #: The greatest index delivered (or start_after).
        self.last = start_after
        self._buffer: Deque[StoredEvent] = collections.deque()
        self._cond = threading.Condition()
        self._next_lock = threading.Lock()
        self._marks = 1
        self._clean = 0
        self.done = False

    def __iter__(self) -> "Stream":
        return self

    def __enter__(self) -> "Stream":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def mark(self) -> None:
        """Something may be new: read when the consumer waits."""
        with self._cond:
            self._marks += 1
            self._cond.notify_all()

    def close(self) -> None:
        """Ends the stream: a waiting ``next()`` raises StopIteration."""
        with self._cond:
            if self.done:
                return
            self.done = True
            self._buffer.clear()
            self._cond.notify_all()
        self._hub.drop(self)

    def __next__(self) -> StoredEvent:
        with self._next_lock:
            return self._next()

    def _next(self) -> StoredEvent:
        poll = self._hub.settings.poll_interval
        while True:
            with self._cond:
                if self._buffer:
                    return self._buffer.popleft()
                if self.done:
                    raise StopIteration
                if self._clean == self._marks:
                    woken = self._cond.wait_for(lambda: self.done or self._clean != self._marks, poll)
                    if not woken:
                        self._marks += 1  # the poll
                    continue
                marks = self._marks
            self._hub.wait_ready(self)
            try:
                page = self._hub.read(self.session_id, self.last)
            except A2Error as err:
                if self.done:
                    continue  # closed while reading (a closed store fails its reads)
                if err.retryable:
                    with self._cond:
                        self._cond.wait_for(lambda: self.done, min(poll, 1.0))
                    continue
                self.close()
                raise
            with self._cond:
                if self.done:
                    continue
                fresh = [e for e in page if e.index > self.last]
                if fresh:
                    self.last = fresh[-1].index
                # A full page may have more behind it: stay marked.
                if len(page) < self._hub.settings.page_size:
                    self._clean = marks
                self._buffer.extend(fresh)
