"""Where the store's statements run: a small pool of its own, a pool you
bring, or one connection you bring.

The store's own pool opens autocommit connections with
``prepare_threshold=None`` (psycopg never prepares a named statement on
them), lazily, up to ``max_size``; a caller waits for a free one. A
connection that is broken, closed, or has something to read while idle (a
server that restarted or terminated it said so before closing) is dropped
instead of being handed out; one returned inside a transaction is rolled
back (or dropped when that fails).
"""

from __future__ import annotations

import asyncio
import select
import threading
from contextlib import asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Dict, Iterator, List, Optional, Union

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from .errors import StoreUnavailableError

AnyConnection = Union[psycopg.Connection[Any], psycopg.AsyncConnection[Any]]

#: Seconds a new connection may take, unless the conninfo says otherwise.
CONNECT_TIMEOUT = 10


def with_connect_timeout(conninfo: str) -> str:
    """``conninfo`` with ``connect_timeout`` set when it has none."""
    if "connect_timeout" in conninfo_to_dict(conninfo):
        return conninfo
    return make_conninfo(conninfo, connect_timeout=CONNECT_TIMEOUT)


def conninfo_of(conn: AnyConnection) -> str:
    """The settings a connection was opened with (its password included)."""
    password = conn.info.password
    return make_conninfo(conn.info.dsn, password=password) if password else conn.info.dsn


def _has_input(conn: AnyConnection) -> bool:
    """The server sent something to an idle connection: it is going away."""
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error):
        return True
    return bool(readable)


def _usable(conn: AnyConnection) -> bool:
    return not conn.closed and not conn.broken and conn.pgconn.status == pq.ConnStatus.OK


class Pool:
    """The sync store's own pool."""

    def __init__(self, conninfo: str, max_size: int = 4, **kwargs: Any) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.conninfo = conninfo
        self.kwargs: Dict[str, Any] = {**kwargs, "autocommit": True, "prepare_threshold": None}
        self._idle: List[psycopg.Connection[Any]] = []
        self._slots = threading.BoundedSemaphore(max_size)
        self._lock = threading.Lock()
        self._all: List[psycopg.Connection[Any]] = []
        self.closed = False

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        if self.closed:
            raise StoreUnavailableError("store is closed")
        self._slots.acquire()
        try:
            conn = self._take()
            try:
                yield conn
            finally:
                self._give(conn)
        finally:
            self._slots.release()

    def _take(self) -> psycopg.Connection[Any]:
        while True:
            with self._lock:
                conn = self._idle.pop() if self._idle else None
            if conn is None:
                break
            if _usable(conn) and not _has_input(conn):
                return conn
            self._discard(conn)
        conn = psycopg.Connection.connect(with_connect_timeout(self.conninfo), **self.kwargs)
        with self._lock:
            self._all.append(conn)
            if self.closed:
                self._all.remove(conn)
                conn.close()
                raise StoreUnavailableError("store is closed")
        return conn

    def _give(self, conn: psycopg.Connection[Any]) -> None:
        if _usable(conn) and conn.info.transaction_status != pq.TransactionStatus.IDLE:
            try:
                conn.rollback()
            except psycopg.Error:
                pass
        if self.closed or not _usable(conn) or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            self._discard(conn)
            return
        with self._lock:
            self._idle.append(conn)

    def _discard(self, conn: psycopg.Connection[Any]) -> None:
        with self._lock:
            if conn in self._all:
                self._all.remove(conn)
        conn.close()

    @property
    def size(self) -> int:
        """Open connections, idle or in use (for tests and monitoring)."""
        with self._lock:
            return len(self._all)

    def close(self) -> None:
        self.closed = True
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            self._discard(conn)


class AsyncPool:
    """The asyncio store's own pool."""

    def __init__(self, conninfo: str, max_size: int = 4, **kwargs: Any) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.conninfo = conninfo
        self.kwargs: Dict[str, Any] = {**kwargs, "autocommit": True, "prepare_threshold": None}
        self.max_size = max_size
        self._idle: List[psycopg.AsyncConnection[Any]] = []
        self._all: List[psycopg.AsyncConnection[Any]] = []
        self._slots: Optional[asyncio.Semaphore] = None  # made in the running loop
        self.closed = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self.closed:
            raise StoreUnavailableError("store is closed")
        if self._slots is None:
            self._slots = asyncio.Semaphore(self.max_size)
        async with self._slots:
            conn = await self._take()
            try:
                yield conn
            finally:
                await self._give(conn)

    async def _take(self) -> psycopg.AsyncConnection[Any]:
        while self._idle:
            conn = self._idle.pop()
            if _usable(conn) and not _has_input(conn):
                return conn
            await self._discard(conn)
        conn = await psycopg.AsyncConnection.connect(with_connect_timeout(self.conninfo), **self.kwargs)
        if self.closed:
            await conn.close()
            raise StoreUnavailableError("store is closed")
        self._all.append(conn)
        return conn

    async def _give(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if _usable(conn) and conn.info.transaction_status != pq.TransactionStatus.IDLE:
            try:
                await conn.rollback()
            except psycopg.Error:
                pass
        if self.closed or not _usable(conn) or conn.info.transaction_status != pq.TransactionStatus.IDLE:
            await self._discard(conn)
            return
        self._idle.append(conn)

    async def _discard(self, conn: psycopg.AsyncConnection[Any]) -> None:
        if conn in self._all:
            self._all.remove(conn)
        await conn.close()

    @property
    def size(self) -> int:
        return len(self._all)

    async def close(self) -> None:
        self.closed = True
        idle, self._idle = self._idle, []
        for conn in idle:
            await self._discard(conn)


class SingleConnection:
    """One connection you bring: the store's calls take turns on it."""

    def __init__(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self._lock = threading.RLock()
        self.conninfo = conninfo_of(conn)

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self._lock:
            yield self.conn


class AsyncSingleConnection:
    def __init__(self, conn: psycopg.AsyncConnection[Any]) -> None:
        self.conn = conn
        self._lock: Optional[asyncio.Lock] = None
        self.conninfo = conninfo_of(conn)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            yield self.conn
