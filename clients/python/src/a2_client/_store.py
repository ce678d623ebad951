"""A2Store: the sync client.

Creating a store does no I/O. Its calls run on its own
``psycopg_pool.ConnectionPool`` (given a conninfo), on a pool you bring
(anything with a ``connection()`` context manager, such as a
``psycopg_pool.ConnectionPool`` of your own), or on one connection you
bring. ``store.transaction()`` runs the handler's SQL and a2 calls in one
transaction on one connection; ``store.stream()`` is a live feed.
"""

from __future__ import annotations

import json
import threading
from contextlib import ExitStack, contextmanager
from typing import Any, Callable, ContextManager, Iterator, List, NoReturn, Optional, Tuple, TypeVar

import psycopg
from psycopg.rows import tuple_row

from . import _listen as L
from ._calls import Call, Clock, IdSource, Statements
from ._ops import Operations
from ._pool import OwnPool, SingleConnection
from ._stream import Listener, Stream
from .errors import A2Error, SupersededError, to_a2_error
from .models import StoredEvent

T = TypeVar("T")


def fetch(conn: psycopg.Connection[Any], call: Call[Any]) -> Any:
    """Run one call's statement, unprepared; its single value (jsonb parsed)."""
    assert call.text is not None
    cur = conn.cursor(row_factory=tuple_row)
    row = cur.execute(call.text, call.params, prepare=False).fetchone()
    value = None if row is None else row[0]
    if isinstance(value, str):  # a connection that does not parse jsonb
        value = json.loads(value) if value else None
    return value


def raise_mapped(err: BaseException) -> NoReturn:
    mapped = to_a2_error(err)
    if mapped is err:
        raise err
    raise mapped from err


def run_on(conn_cm: Callable[[], ContextManager[psycopg.Connection[Any]]], call: Call[T]) -> T:
    if call.text is None:
        return call.decode(None)
    try:
        with conn_cm() as conn:
            value = fetch(conn, call)
    except Exception as err:
        raise_mapped(err)
    return call.decode(value)


class Transaction(Operations):
    """What ``store.transaction()`` yields: every a2 call on the transaction's
    connection, plus ``execute`` for your own SQL.

    An a2 error inside the block has aborted the transaction (or, for a
    SupersededError answered by the server, must not commit): let it
    propagate and everything rolls back. If the block swallows it, leaving
    the block rolls back anyway and raises it again. ``savepoint()`` scopes
    that: an error caught outside a savepoint block that it left is gone
    with the savepoint's rollback.
    """

    def __init__(self, statements: Statements, conn: psycopg.Connection[Any]) -> None:
        super().__init__(statements, self._run_here)
        #: The transaction's psycopg connection, for your own cursors.
        self.connection = conn
        self._depth = 0
        self._doom: Optional[Tuple[int, A2Error]] = None
        self._closed = False

    def _run_here(self, call: Call[Any]) -> Any:
        if self._closed:
            raise RuntimeError("the transaction is over")
        if call.text is None:
            return call.decode(None)
        try:
            value = fetch(self.connection, call)
        except Exception as err:
            mapped = to_a2_error(err)
            self._set_doom(mapped)
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

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> psycopg.Cursor[Any]:
        """Your own SQL in the same transaction (psycopg's errors, not mapped)."""
        if self._closed:
            raise RuntimeError("the transaction is over")
        return self.connection.execute(query, params, **kwargs)

    @contextmanager
    def savepoint(self) -> Iterator["Transaction"]:
        """A nested block (SAVEPOINT): an error leaving it rolls back only the block."""
        depth = self._depth + 1
        with self.connection.transaction():
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


class A2Store(Operations):
    """The a2 client (sync). See the package README for every option."""

    def __init__(
        self,
        conninfo: Optional[str] = None,
        *,
        pool: Any = None,
        connection: Optional[psycopg.Connection[Any]] = None,
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
            raise TypeError("A2Store needs exactly one of conninfo, pool= or connection=")
        L.check_settings(poll_interval, page_size)
        self._own: Optional[OwnPool] = None
        source: Any
        if conninfo is not None:
            source = self._own = OwnPool(conninfo, max_size)
        elif connection is not None:
            source = SingleConnection(connection)
        else:
            source = pool
        self._source = source
        st = Statements(schema, clock, ids)
        super().__init__(st, lambda call: run_on(self._source.connection, call))
        self._listen_conninfo = listen_conninfo
        self.listener = Listener(self._read_page, L.StreamSettings(listen, poll_interval, page_size),
                                 self._listening_conninfo, st.prefix, node_connection)
        self._closed = False
        self._close_lock = threading.Lock()

    # -- the stream --------------------------------------------------------------

    def stream(self, session_id: str, *, start_after: int = 0) -> Stream:
        """A live feed of a session's events after ``start_after``, in index order, each once."""
        return self.listener.open(session_id, start_after)

    def _read_page(self, session_id: str, after: int, limit: int) -> List[StoredEvent]:
        return run_on(self._source.connection, self._st.read_page(session_id, after, limit))

    def _listening_conninfo(self) -> str:
        if self._listen_conninfo is not None:
            return self._listen_conninfo
        info = getattr(self._source, "conninfo", None)
        if isinstance(info, str):
            return info
        raise A2Error("no conninfo to LISTEN with: pass listen_conninfo=")

    # -- transactions ---------------------------------------------------------------

    @contextmanager
    def transaction(self) -> Iterator[Transaction]:
        """BEGIN; the block; COMMIT, on one connection. An exception rolls everything back and propagates."""
        with ExitStack() as stack:
            try:
                conn = stack.enter_context(self._source.connection())
                block = conn.transaction()
                block.__enter__()
            except Exception as err:
                raise_mapped(err)
            tx = Transaction(self._st, conn)
            try:
                yield tx
                doom = tx._doomed(0)
                if doom is not None:
                    raise doom
            except BaseException as err:
                tx._closed = True
                try:
                    block.__exit__(type(err), err, err.__traceback__)
                except Exception:
                    pass  # the rollback failed: the connection is broken and dropped
                raise
            tx._closed = True
            try:
                block.__exit__(None, None, None)
            except Exception as err:
                raise_mapped(err)

    def using(self, conn: psycopg.Connection[Any]) -> Operations:
        """The store's calls on a connection you manage (in your transaction, if one is open)."""
        @contextmanager
        def here() -> Iterator[psycopg.Connection[Any]]:
            yield conn
        return Operations(self._st, lambda call: run_on(here, call))

    # -- lifecycle --------------------------------------------------------------------

    def close(self) -> None:
        """Ends every stream, the listener, and the store's own pool (not a pool or connection you passed)."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        self.listener.close()
        if self._own is not None:
            self._own.close()

    @property
    def pool_size(self) -> Optional[int]:
        """Connections of the store's own pool (None with a pool or connection you passed)."""
        return None if self._own is None else self._own.size

    @property
    def pool(self) -> Any:
        """The pool the calls run on: the store's own ``psycopg_pool.ConnectionPool``
        (for ``get_stats()``), the one you passed, or None with ``connection=``."""
        if self._own is not None:
            return self._own.pool
        return None if isinstance(self._source, SingleConnection) else self._source

    def __enter__(self) -> "A2Store":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
