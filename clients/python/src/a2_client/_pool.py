"""Where the store's statements run: a psycopg_pool pool of its own, a pool
you bring, or one connection you bring.

The store's own pool is a ``psycopg_pool.ConnectionPool`` (asyncio:
``AsyncConnectionPool``) built from the conninfo with what the store needs:
autocommit connections with ``prepare_threshold=None`` (psycopg never
prepares a named statement on them, so a transaction-mode pooler is safe),
``min_size=0`` and ``max_size``, opened at the first call (creating a store
does no I/O). psycopg_pool brings the rest: max lifetime and idle
shrinking, reconnect backoff, a rollback of a connection returned inside a
transaction, and ``get_stats()``.

A connection handed out by the pool passes ``check_connection`` first: one
that is broken, closed, or has something to read while idle (a server that
restarted or terminated it said so before closing) is closed and given back,
so the pool replaces it, and the next one is taken. The test costs no round
trip. (psycopg_pool 3.2 has a ``check=`` callback for this; Debian 12 ships
3.1, so the store runs the same test itself.)

A call that waited ``POOL_TIMEOUT`` seconds in vain gets psycopg_pool's
``PoolTimeout`` only when the server can be reached (the pool was busy).
Otherwise the pool has been failing to connect in the background, logging
why; the call then connects once itself and raises that error (a database
that does not exist, a refused connection, a bad password), as it would
have without a pool.
"""

from __future__ import annotations

import asyncio
import select
import threading
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from typing import Any, AsyncIterator, Dict, Iterator, Optional, Union

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool, ConnectionPool, PoolTimeout

from .errors import StoreUnavailableError

AnyConnection = Union[psycopg.Connection[Any], psycopg.AsyncConnection[Any]]

#: Seconds a new connection may take, unless the conninfo says otherwise.
CONNECT_TIMEOUT = 10

#: Seconds a call of a store with its own pool waits for a connection (a
#: free one, or a new one the pool is still trying to open) before it raises
#: StoreUnavailableError; psycopg_pool's ``timeout``.
POOL_TIMEOUT = 10.0

#: What every connection of the store's own pool is opened with.
CONNECTION_KWARGS: Dict[str, Any] = {"autocommit": True, "prepare_threshold": None}


def with_connect_timeout(conninfo: str) -> str:
    """``conninfo`` with ``connect_timeout`` set when it has none."""
    if "connect_timeout" in conninfo_to_dict(conninfo):
        return conninfo
    return make_conninfo(conninfo, connect_timeout=CONNECT_TIMEOUT)


def conninfo_of(conn: AnyConnection) -> str:
    """The settings a connection was opened with (its password included)."""
    password = conn.info.password
    return make_conninfo(conn.info.dsn, password=password) if password else conn.info.dsn


def check_connection(conn: AnyConnection) -> None:
    """Raise when ``conn`` must not be handed out: closed, broken, or the
    server sent something to it while it was idle (it is going away)."""
    if conn.closed or conn.broken or conn.pgconn.status != pq.ConnStatus.OK:
        raise psycopg.OperationalError("the connection is closed")
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError, psycopg.Error) as err:
        raise psycopg.OperationalError(f"the connection is unusable: {err}") from err
    if readable:
        raise psycopg.OperationalError("the server sent something to an idle connection")


def _healthy(conn: AnyConnection) -> bool:
    try:
        check_connection(conn)
    except psycopg.Error:
        return False
    return True


def _stats_size(pool: Union[ConnectionPool, AsyncConnectionPool]) -> int:
    return int(pool.get_stats().get("pool_size", 0))


class OwnPool:
    """The sync store's own ``psycopg_pool.ConnectionPool``."""

    def __init__(self, conninfo: str, max_size: int = 4) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.conninfo = conninfo
        self.pool = ConnectionPool(with_connect_timeout(conninfo), min_size=0, max_size=max_size,
                                   kwargs=dict(CONNECTION_KWARGS), timeout=POOL_TIMEOUT, open=False,
                                   name="a2-store")
        self._lock = threading.Lock()
        self._opened = False
        self.closed = False

    def _open(self) -> None:
        with self._lock:
            if self.closed:
                raise StoreUnavailableError("store is closed")
            if not self._opened:
                self.pool.open()
                self._opened = True

    def _why(self) -> Optional[psycopg.Error]:
        """The error of connecting now (None when connecting works)."""
        try:
            psycopg.Connection.connect(self.pool.conninfo, **self.pool.kwargs).close()
        except psycopg.Error as err:
            return err
        return None

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        self._open()
        while True:
            with ExitStack() as stack:
                try:
                    conn = stack.enter_context(self.pool.connection())
                except PoolTimeout as timeout:
                    why = self._why()
                    if why is None:
                        raise
                    raise why from timeout
                if not _healthy(conn):
                    conn.close()  # given back closed: the pool opens another
                    continue
                yield conn
                return

    @property
    def size(self) -> int:
        """Open connections, idle, in use or being opened (0 once closed)."""
        return 0 if self.closed or not self._opened else _stats_size(self.pool)

    def close(self) -> None:
        with self._lock:
            self.closed = True
            opened = self._opened
        if opened:
            self.pool.close()


class AsyncOwnPool:
    """The asyncio store's own ``psycopg_pool.AsyncConnectionPool``."""

    def __init__(self, conninfo: str, max_size: int = 4) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self.conninfo = conninfo
        self.pool = AsyncConnectionPool(with_connect_timeout(conninfo), min_size=0, max_size=max_size,
                                        kwargs=dict(CONNECTION_KWARGS), timeout=POOL_TIMEOUT, open=False,
                                        name="a2-store")
        self._lock: Optional[asyncio.Lock] = None  # made in the running loop
        self._opened = False
        self.closed = False

    async def _open(self) -> None:
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self.closed:
                raise StoreUnavailableError("store is closed")
            if not self._opened:
                await self.pool.open()
                self._opened = True

    async def _why(self) -> Optional[psycopg.Error]:
        try:
            await (await psycopg.AsyncConnection.connect(self.pool.conninfo, **self.pool.kwargs)).close()
        except psycopg.Error as err:
            return err
        return None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        await self._open()
        while True:
            async with AsyncExitStack() as stack:
                try:
                    conn = await stack.enter_async_context(self.pool.connection())
                except PoolTimeout as timeout:
                    why = await self._why()
                    if why is None:
                        raise
                    raise why from timeout
                if not _healthy(conn):
                    await conn.close()
                    continue
                yield conn
                return

    @property
    def size(self) -> int:
        return 0 if self.closed or not self._opened else _stats_size(self.pool)

    async def close(self) -> None:
        self.closed = True
        if self._opened:
            await self.pool.close()


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
