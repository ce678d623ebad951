"""What the sync and asyncio listeners share: settings, bookkeeping, the
notification format, and how the nodes of a distributed a2 are found and
reached.

The design (both listeners): one listener per store holds a dedicated
connection, outside the store's pool, that runs ``LISTEN a2_events`` while
at least one stream is open. A notification ``{"sessionId", "index"}``
marks the streams of that session; a marked stream whose consumer waits
reads the rest with ``a2_read(session, last, NULL, page_size)`` through the
store's ordinary connections. Every time a LISTEN becomes active (first
start, every reconnect) every stream is marked, so an event committed
before the LISTEN is found by that read and one committed after it is
announced: no gap. A waiting stream that heard nothing for
``poll_interval`` seconds reads anyway (the polling fallback), whether or
not notifications work.

Distributed mode (a2 on Citus): when a listener starts it asks, on its
first connection, ``a2_is_distributed()`` (no such function, SQLSTATE
42883: a single node); when true it LISTENs on every node
``a2_notify_nodes()`` lists, one connection and one reconnect loop each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from psycopg.conninfo import make_conninfo

from .models import Node

DEFAULT_POLL_INTERVAL = 1.0
DEFAULT_PAGE_SIZE = 500
RECONNECT_MIN = 0.05
RECONNECT_MAX = 2.0
CHANNEL = "a2_events"

#: Maps a listed node to its connection settings (a conninfo string, or
#: keyword arguments for ``psycopg.connect``).
NodeConnection = Callable[[Node], Union[str, Mapping[str, Any]]]


@dataclass(frozen=True)
class StreamSettings:
    listen: bool
    poll_interval: float
    page_size: int


@dataclass(frozen=True)
class NodeStatus:
    """One node's LISTEN, as ``store.listener.nodes`` reports it."""

    host: str
    port: int
    listening: bool
    #: How many LISTENs on this node became active.
    listens: int
    #: How many a2_events notifications this node delivered.
    notifications: int
    backend_pid: Optional[int]


class Tap:
    """One LISTEN's bookkeeping: the single-node listener's, or one node's."""

    def __init__(self, node: Optional[Node] = None) -> None:
        self.node = node
        self.listening = False
        self.backend_pid: Optional[int] = None
        self.listens = 0
        self.notifications = 0

    def status(self) -> NodeStatus:
        assert self.node is not None
        return NodeStatus(host=self.node.host, port=self.node.port, listening=self.listening,
                          listens=self.listens, notifications=self.notifications,
                          backend_pid=self.backend_pid)


def check_settings(poll_interval: float, page_size: int) -> None:
    if not poll_interval > 0:
        raise ValueError("poll_interval must be a positive number of seconds")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise ValueError("page_size must be a positive integer")


def parse(payload: str) -> Optional[Tuple[str, Optional[int]]]:
    """``(session_id, index)`` of an a2_events payload; None when it is not one."""
    try:
        msg = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(msg, dict) or not isinstance(msg.get("sessionId"), str):
        return None
    index = msg.get("index")
    return msg["sessionId"], index if isinstance(index, int) and not isinstance(index, bool) else None


def node_settings(base: str, node: Node, node_connection: Optional[NodeConnection]) -> Dict[str, Any]:
    """Keyword arguments for ``connect``: ``node_connection(node)``, else the
    store's own settings (``base``, a conninfo string or URL) with the node's
    host and port."""
    if node_connection is not None:
        got = node_connection(node)
        return {"conninfo": got} if isinstance(got, str) else dict(got)
    return {"conninfo": make_conninfo(base, host=node.host, port=str(node.port))}


def is_distributed_sql(prefix: str) -> str:
    return f"SELECT {prefix}a2_is_distributed()"


def nodes_sql(prefix: str) -> str:
    return f"SELECT node_name, node_port FROM {prefix}a2_notify_nodes()"


def to_nodes(rows: List[Tuple[Any, ...]]) -> List[Node]:
    return [Node(host=str(r[0]), port=int(r[1])) for r in rows]
