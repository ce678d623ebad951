"""a2-client: a typed Python client for the a2 PostgreSQL extension.

    from a2_client import A2Store, NewEvent

    with A2Store("postgresql://app@db/app") as store:
        store.append("order-42", [NewEvent(type="order.placed", payload={"qty": 2})])

``A2Store`` is sync, ``AsyncA2Store`` its asyncio twin. Both run every a2
call as one unprepared statement (safe behind a transaction-mode pooler),
``transaction()`` joins the handler's SQL and a completion in one
transaction, and ``stream()`` is a live feed (LISTEN on a direct
connection, catch-up, reconnect, polling fallback). Errors are the classes
of ``a2_client.errors``.
"""

from ._versions import A2_VERSIONS
from ._aops import AsyncOperations
from ._backoff import BackoffPolicy, backoff
from ._astore import AsyncA2Store, AsyncTransaction
from ._astream import AsyncListener, AsyncStream
from ._calls import Clock, IdSource
from ._listen import NodeConnection, NodeStatus
from ._ops import Operations
from ._schedules import FiredTick, ScheduleInfo
from ._store import A2Store, Transaction
from ._stream import Listener, Stream
from .errors import (
    A2Error,
    CorruptEventError,
    DeadlockDetectedError,
    ForbiddenError,
    InvalidPayloadError,
    NotConfiguredError,
    NotDeadLetteredError,
    NotFoundError,
    NullValueError,
    PartialDuplicateBatchError,
    SerializationFailureError,
    SessionUnfinishedError,
    StoreUnavailableError,
    SupersededError,
)
from .models import (
    AlreadyRedriven,
    AppendResult,
    Busy,
    Cause,
    ClaimNextResult,
    ClaimRef,
    ClaimResult,
    Claimed,
    Completed,
    DropResult,
    Event,
    Failed,
    Metrics,
    NewEvent,
    Node,
    NotifyStatus,
    PresenceRow,
    QueueGauges,
    Redriven,
    RedriveResult,
    RenewResult,
    ReturnedEvent,
    SessionClaim,
    SessionPage,
    SessionSummary,
    Settled,
    Snapshot,
    SnapshotInfo,
    SnapshotWrite,
    StateRead,
    StateRequest,
    StoredEvent,
    WaitFor,
    WaitResult,
)

__version__ = "0.4.0"

__all__ = [
    "A2Error", "A2Store", "AlreadyRedriven", "AppendResult", "AsyncA2Store", "AsyncListener",
    "AsyncOperations", "AsyncStream", "AsyncTransaction", "BackoffPolicy", "Busy", "Cause", "ClaimNextResult",
    "ClaimRef",
    "ClaimResult", "Claimed", "Clock", "Completed", "CorruptEventError", "DeadlockDetectedError", "DropResult",
    "Event", "Failed", "ForbiddenError", "IdSource", "InvalidPayloadError", "Listener", "Metrics", "NewEvent",
    "Node", "NodeConnection", "NodeStatus", "NotConfiguredError", "NotDeadLetteredError", "NotFoundError",
    "NotifyStatus", "NullValueError", "Operations", "PartialDuplicateBatchError", "PresenceRow", "Redriven",
    "RedriveResult", "RenewResult", "ReturnedEvent", "SerializationFailureError", "SessionClaim",
    "SessionPage", "SessionSummary", "SessionUnfinishedError", "Settled", "Snapshot", "SnapshotInfo",
    "SnapshotWrite", "StateRead", "StateRequest", "StoreUnavailableError", "StoredEvent", "Stream",
    "SupersededError", "Transaction", "WaitFor", "WaitResult", "__version__", "backoff",
    "A2_VERSIONS", "FiredTick", "ScheduleInfo", "QueueGauges",
]
