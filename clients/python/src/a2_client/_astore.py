"""AsyncA2Store: the asyncio client, the twin of ``_store.py``.

Its calls run on its own ``psycopg_pool.AsyncConnectionPool`` (given a
conninfo), on a pool you bring (anything with an async ``connection()``
context manager, such as ``psycopg_pool.AsyncConnectionPool``), or on one
``AsyncConnection`` you bring.
"""

from __future__ import annotations

import json
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any, AsyncContextManager, AsyncIterator, Callable, List, Optional, Tuple, TypeVar

import psycopg
from psycopg.rows import tuple_row

from . import _listen as L
from ._aops import AsyncOperations
from ._astream import AsyncListener, AsyncStream
from ._calls import Call, Clock, IdSource, Statements
from ._pool import AsyncOwnPool, AsyncSingleConnection
from ._store import raise_mapped
from .errors import A2Error, SupersededError, to_a2_error
from .models import StoredEvent

T = TypeVar("T")


async def fetch(conn: psycopg.AsyncConnection[Any], call: Call[Any]) -> Any:
    assert call.text is not None
    cur = conn.cursor(row_factory=tuple_row)
    await cur.execute(call.text, call.params, prepare=False)
    row = await cur.fetchone()
    value = None if row is None else row[0]
    if isinstance(value, str):
        value = json.loads(value) if value else None
    return value


async def run_on(conn_cm: Callable[[], AsyncContextManager[psycopg.AsyncConnection[Any]]], call: Call[T]) -> T:
    if call.text is None:
        return call.decode(None)
    try:
        async with conn_cm() as conn:
            value = await fetch(conn, call)
    except Exception as err:
        raise_mapped(err)
    return call.decode(value)


class AsyncTransaction(AsyncOperations):
    """What ``store.transaction()`` yields (asyncio); see ``Transaction``."""

    def __init__(self, statements: Statements, conn: psycopg.AsyncConnection[Any]) -> None:
        super().__init__(statements, self._run_here)
        self.connection = conn
        self._depth = 0
        self._doom: Optional[Tuple[int, A2Error]] = None
        self._closed = False

    async def _run_here(self, call: Call[Any]) -> Any:
        if self._closed:
            raise RuntimeError("the transaction is over")
        if call.text is None:
            return call.decode(None)
        try:
            value = await fetch(self.connection, call)
        except Exception as err:
            self._set_doom(to_a2_error(err))
            raise_mapped(err)
        try:
            return call.decode(value)
        except SupersededError as err:
            self._set_doom(err)
            raise

    def _set_doom(self, err: A2Error) -> None:
        if self._doom is None or self._doom[0] > self._depth:
            self._doom = (self._depth, err)

    def _doomed(self, depth: int) -> Optional[A2Error]:
        return self._doom[1] if self._doom is not None and self._doom[0] >= depth else None

    async def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.AsyncCursor[Any]:
        """Your own SQL in the same transaction (psycopg's errors, not mapped)."""
        if self._closed:
            raise RuntimeError("the transaction is over")
        return await self.connection.execute(query, params, **kwargs)

    @asynccontextmanager
    async def savepoint(self) -> AsyncIterator["AsyncTransaction"]:
        depth = self._depth + 1
        async with self.connection.transaction():
            self._depth = depth
            try:
                yield self
                doom = self._doomed(depth)
                if doom is not None:
                    raise doom
            except BaseException:
                if self._doomed(depth) is not None:
                    self._doom = None
                raise
            finally:
                self._depth = depth - 1


class AsyncA2Store(AsyncOperations):
    """The a2 client (asyncio): the same options and calls as A2Store, awaited."""

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        pool: Any = None,
        connection: Optional[psycopg.AsyncConnection[Any]] = None,
        max_size: int = 4,
        clock: Optional[Clock] = None,
        ids: Optional[IdSource] = None,
        schema: Optional[str] = None,
        listen: bool = True,
        listen_conninfo: Optional[str] = None,
        poll_interval: float = L.DEFAULT_POLL_INTERVAL,
        page_size: int = L.DEFAULT_PAGE_SIZE,
        node_connection: Optional[L.NodeConnection] = None,
    ) -> None:
        if sum(x is not None for x in (conninfo, pool, connection)) != 1:
            raise TypeError("AsyncA2Store needs exactly one of conninfo, pool= or connection=")
        L.check_settings(poll_interval, page_size)
        self._own: Optional[AsyncOwnPool] = None
        source: Any
        if conninfo is not None:
            source = self._own = AsyncOwnPool(conninfo, max_size)
        elif connection is not None:
            source = AsyncSingleConnection(connection)
        else:
            source = pool
        self._source = source
        st = Statements(schema, clock, ids)
        super().__init__(st, lambda call: run_on(self._source.connection, call))
        self._listen_conninfo = listen_conninfo
        self.listener = AsyncListener(self._read_page, L.StreamSettings(listen, poll_interval, page_size),
                                      self._listening_conninfo, st.prefix, node_connection)
        self._closed = False

    def stream(self, session_id: str, *, start_after: int = 0) -> AsyncStream:
        """A live feed of a session's events after ``start_after`` (``async for``); call in a running loop."""
        return self.listener.open(session_id, start_after)

    async def _read_page(self, session_id: str, after: int, limit: int) -> List[StoredEvent]:
        return await run_on(self._source.connection, self._st.read_page(session_id, after, limit))

    def _listening_conninfo(self) -> str:
        if self._listen_conninfo is not None:
            return self._listen_conninfo
        info = getattr(self._source, "conninfo", None)
        if isinstance(info, str):
            return info
        raise A2Error("no conninfo to LISTEN with: pass listen_conninfo=")

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncTransaction]:
        """BEGIN; the block; COMMIT, on one connection. An exception rolls everything back and propagates."""
        async with AsyncExitStack() as stack:
            try:
                conn = await stack.enter_async_context(self._source.connection())
                block = conn.transaction()
                await block.__aenter__()
            except Exception as err:
                raise_mapped(err)
            tx = AsyncTransaction(self._st, conn)
            try:
                yield tx
                doom = tx._doomed(0)
                if doom is not None:
                    raise doom
            except BaseException as err:
                tx._closed = True
                try:
                    await block.__aexit__(type(err), err, err.__traceback__)
                except Exception:
                    pass
                raise
            tx._closed = True
            try:
                await block.__aexit__(None, None, None)
            except Exception as err:
                raise_mapped(err)

    def using(self, conn: psycopg.AsyncConnection[Any]) -> AsyncOperations:
        """The store's calls on a connection you manage."""
        @asynccontextmanager
        async def here() -> AsyncIterator[psycopg.AsyncConnection[Any]]:
            yield conn
        return AsyncOperations(self._st, lambda call: run_on(here, call))

    async def close(self) -> None:
        """Ends every stream, the listener, and the store's own pool."""
        if self._closed:
            return
        self._closed = True
        await self.listener.close()
        if self._own is not None:
            await self._own.close()

    @property
    def pool_size(self) -> Optional[int]:
        """Connections of the store's own pool (None with a pool or connection you passed)."""
        return None if self._own is None else self._own.size

    @property
    def pool(self) -> Any:
        """The pool the calls run on: the store's own ``psycopg_pool.AsyncConnectionPool``
        (for ``get_stats()``), the one you passed, or None with ``connection=``."""
        if self._own is not None:
            return self._own.pool
        return None if isinstance(self._source, AsyncSingleConnection) else self._source

    async def __aenter__(self) -> "AsyncA2Store":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
