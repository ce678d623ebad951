"""store.stream() (asyncio): the twin of ``_stream.py``.

The listener is a task (one more per node in distributed mode) of the
loop the first stream was opened in, alive while at least one stream is
open; see ``_listen`` for the design. It waits in psycopg's
``AsyncConnection.notifies()``; a failed connection is closed and a new
one LISTENs again after 50 ms, doubling up to 2 s. A stream is an async
iterator for one consumer task.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Any, Awaitable, Callable, Deque, Dict, List, Optional, Set, Tuple

import psycopg

from . import _listen as L
from ._pool import with_connect_timeout
from .errors import A2Error, StoreUnavailableError
from .models import Node, StoredEvent

ReadPage = Callable[[str, int, int], Awaitable[List[StoredEvent]]]


class _Life:
    def __init__(self) -> None:
        self.stop = asyncio.Event()
        self.ready = asyncio.Event()
        self.unsettled = 1

    def settle_one(self) -> None:
        self.unsettled -= 1
        if self.unsettled <= 0:
            self.ready.set()


class AsyncListener:
    """The listener behind an AsyncA2Store's streams (``store.listener``)."""

    def __init__(self, read: ReadPage, settings: L.StreamSettings, conninfo: Callable[[], str],
                 prefix: str, node_connection: Optional[L.NodeConnection]) -> None:
        self._read = read
        self.settings = settings
        self._conninfo = conninfo
        self._prefix = prefix
        self._node_connection = node_connection
        self._streams: Dict[str, Set[AsyncStream]] = {}
        self._single = L.Tap()
        self._taps: List[L.Tap] = []
        self._life: Optional[_Life] = None
        self._task: Optional["asyncio.Task[None]"] = None
        self._closed = False
        self.listens = 0
        self.distributed: Optional[bool] = None

    @property
    def listening(self) -> bool:
        return self._single.listening or any(t.listening for t in self._taps)

    @property
    def backend_pid(self) -> Optional[int]:
        return self._single.backend_pid

    @property
    def nodes(self) -> List[L.NodeStatus]:
        return [t.status() for t in self._taps]

    def open(self, session_id: str, start_after: int) -> "AsyncStream":
        if self._closed:
            raise StoreUnavailableError("store is closed")
        s = AsyncStream(self, session_id, start_after)
        self._streams.setdefault(session_id, set()).add(s)
        if self.settings.listen and self._task is None:
            self._start()
        return s

    def drop(self, s: "AsyncStream") -> None:
        group = self._streams.get(s.session_id)
        if group is None:
            return
        group.discard(s)
        if not group:
            del self._streams[s.session_id]
        if not self._streams and self._life is not None:
            self._life.stop.set()

    async def wait_ready(self) -> None:
        if self._life is not None:
            await self._life.ready.wait()

    async def read(self, session_id: str, after: int) -> List[StoredEvent]:
        return await self._read(session_id, after, self.settings.page_size)

    async def close(self) -> None:
        self._closed = True
        for group in list(self._streams.values()):
            for s in list(group):
                s.close()
        if self._life is not None:
            self._life.stop.set()
        task = self._task
        if task is not None and task is not asyncio.current_task():
            await asyncio.wait({task}, timeout=15.0)

    def _stopping(self) -> bool:
        return self._closed or not self._streams

    def _mark_all(self) -> None:
        for group in list(self._streams.values()):
            for s in list(group):
                s.mark()

    def _notify(self, channel: str, payload: str, tap: L.Tap) -> None:
        if channel != L.CHANNEL:
            return
        tap.notifications += 1
        parsed = L.parse(payload)
        if parsed is None:
            return
        session_id, index = parsed
        for s in list(self._streams.get(session_id, ())):
            if index is None or index > s.last:
                s.mark()

    # -- the listener's life ---------------------------------------------------

    def _start(self) -> None:
        life = _Life()
        self._life = life
        self._task = asyncio.get_running_loop().create_task(self._run(life))

    async def _run(self, life: _Life) -> None:
        try:
            await self._life_loop(life)
        finally:
            life.ready.set()
            self._life = None
            self._task = None
            if not self._closed and self._streams and self.settings.listen:
                self._start()

    async def _pause(self, life: _Life, seconds: float) -> None:
        try:
            await asyncio.wait_for(life.stop.wait(), seconds)
        except asyncio.TimeoutError:
            pass

    async def _connect(self, life: _Life, **kwargs: Any) -> Optional[psycopg.AsyncConnection[Any]]:
        """A connection, or None when the listener must stop first."""
        conninfo = kwargs.pop("conninfo", "")
        attempt = asyncio.ensure_future(
            psycopg.AsyncConnection.connect(with_connect_timeout(conninfo), autocommit=True, **kwargs))
        stopped = asyncio.ensure_future(life.stop.wait())
        try:
            await asyncio.wait({attempt, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if not attempt.done():
            # Nobody needs it any more: close it once it is there.
            attempt.add_done_callback(_close_when_done)
            return None
        conn: psycopg.AsyncConnection[Any] = attempt.result()
        return conn

    async def _life_loop(self, life: _Life) -> None:
        backoff = L.RECONNECT_MIN
        detected = False
        while not life.stop.is_set() and not self._stopping():
            try:
                conn = await self._connect(life, conninfo=self._conninfo())
            except Exception:
                self._settle(life)
                await self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)
                continue
            if conn is None:
                break
            if not detected:
                try:
                    nodes = await self._detect(conn)
                except Exception:
                    await conn.close()
                    self._settle(life)
                    self._mark_all()
                    await self._pause(life, backoff)
                    backoff = min(backoff * 2, L.RECONNECT_MAX)
                    continue
                detected = True
                self.distributed = nodes is not None
                if nodes:
                    await conn.close()
                    await self._distributed(life, nodes)
                    return
                self._taps = []
            lost, active = await self._hold(life, conn, self._single, lambda: self._settle(life))
            if active:
                backoff = L.RECONNECT_MIN
            if lost and not life.stop.is_set():
                self._mark_all()
                await self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)

    def _settle(self, life: _Life) -> None:
        if not life.ready.is_set():
            life.settle_one()

    async def _detect(self, conn: psycopg.AsyncConnection[Any]) -> Optional[List[Node]]:
        try:
            cur = await conn.execute(L.is_distributed_sql(self._prefix), prepare=False)
            row = await cur.fetchone()
        except psycopg.errors.UndefinedFunction:
            return None
        if not row or row[0] is not True:
            return None
        cur = await conn.execute(L.nodes_sql(self._prefix), prepare=False)
        return L.to_nodes(await cur.fetchall())

    async def _distributed(self, life: _Life, nodes: List[Node]) -> None:
        taps = [L.Tap(n) for n in nodes]
        self._taps = taps
        life.unsettled = len(taps)
        await asyncio.gather(*(self._node_life(life, t) for t in taps))

    async def _node_life(self, life: _Life, tap: L.Tap) -> None:
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
                conn = await self._connect(life, **kwargs)
            except Exception:
                settle()
                await self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)
                continue
            if conn is None:
                break
            lost, active = await self._hold(life, conn, tap, settle)
            if active:
                backoff = L.RECONNECT_MIN
            if lost and not life.stop.is_set():
                self._mark_all()
                await self._pause(life, backoff)
                backoff = min(backoff * 2, L.RECONNECT_MAX)

    async def _hold(self, life: _Life, conn: psycopg.AsyncConnection[Any], tap: L.Tap,
                    settle: Callable[[], None]) -> Tuple[bool, bool]:
        lost = False
        active = False

        def on_notify(n: psycopg.Notify) -> None:
            self._notify(n.channel, n.payload, tap)

        async def drain() -> None:
            async for n in conn.notifies():
                on_notify(n)

        conn.add_notify_handler(on_notify)
        try:
            await conn.execute(f"LISTEN {L.CHANNEL}", prepare=False)
            tap.backend_pid = conn.info.backend_pid
            tap.listening = True
            tap.listens += 1
            self.listens += 1
            active = True
            settle()
            self._mark_all()
            if not self._stopping():
                notes = asyncio.ensure_future(drain())
                stopped = asyncio.ensure_future(life.stop.wait())
                await asyncio.wait({notes, stopped}, return_when=asyncio.FIRST_COMPLETED)
                stopped.cancel()
                if notes.done():
                    notes.result()  # raises what ended it
                    raise psycopg.OperationalError("listener connection ended")
                notes.cancel()
                try:
                    await notes
                except asyncio.CancelledError:
                    pass
        except Exception:
            lost = True
            settle()
        finally:
            tap.listening = False
            tap.backend_pid = None
            conn.remove_notify_handler(on_notify)
            if not lost:
                try:
                    await conn.execute(f"UNLISTEN {L.CHANNEL}", prepare=False)
                except Exception:
                    lost = True
            await conn.close()
        return lost, active


def _close_when_done(attempt: "asyncio.Future[psycopg.AsyncConnection[Any]]") -> None:
    if not attempt.cancelled() and attempt.exception() is None:
        asyncio.ensure_future(attempt.result().close())


class AsyncStream:
    """One session's events after ``start_after``, in index order, each once (``async for``)."""

    def __init__(self, hub: AsyncListener, session_id: str, start_after: int) -> None:
        self._hub = hub
        self.session_id = session_id
        self.last = start_after
        self._buffer: Deque[StoredEvent] = collections.deque()
        self._wake = asyncio.Event()
        self._marks = 1
        self._clean = 0
        self._busy = False
        self.done = False

    def __aiter__(self) -> "AsyncStream":
        return self

    async def __aenter__(self) -> "AsyncStream":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self.close()

    def mark(self) -> None:
        self._marks += 1
        self._wake.set()

    def close(self) -> None:
        """Ends the stream: a waiting ``__anext__`` raises StopAsyncIteration."""
        if self.done:
            return
        self.done = True
        self._buffer.clear()
        self._wake.set()
        self._hub.drop(self)

    async def aclose(self) -> None:
        self.close()

    async def __anext__(self) -> StoredEvent:
        if self._busy:
            raise RuntimeError("stream.__anext__() called before the previous one finished")
        self._busy = True
        try:
            return await self._next()
        finally:
            self._busy = False

    async def _next(self) -> StoredEvent:
        poll = self._hub.settings.poll_interval
        while True:
            if self._buffer:
                return self._buffer.popleft()
            if self.done:
                raise StopAsyncIteration
            if self._clean == self._marks:
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), poll)
                except asyncio.TimeoutError:
                    self._marks += 1  # the poll
                continue
            marks = self._marks
            await self._hub.wait_ready()
            try:
                page = await self._hub.read(self.session_id, self.last)
            except A2Error as err:
                if self.done:
                    continue  # closed while reading (a closed store fails its reads)
                if err.retryable:
                    self._wake.clear()
                    try:
                        await asyncio.wait_for(self._wake.wait(), min(poll, 1.0))
                    except asyncio.TimeoutError:
                        pass
                    continue
                self.close()
                raise
            if self.done:
                continue
            fresh = [e for e in page if e.index > self.last]
            if fresh:
                self.last = fresh[-1].index
            if len(page) < self._hub.settings.page_size:
                self._clean = marks
            self._buffer.extend(fresh)
