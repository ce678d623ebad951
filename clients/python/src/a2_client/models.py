"""The values the client sends and returns.

Every result is a frozen dataclass. Field names are the contract's
camelCase keys in snake_case (``sessionId`` is ``session_id``), timestamps
are timezone-aware ``datetime`` objects in UTC, indexes and counts are
``int``, and ``None`` stands where the contract has ``null``.

Inputs are dataclasses too (``NewEvent``, ``ReturnedEvent``,
``SnapshotWrite``, ``StateRequest``, ``ClaimRef``); wherever a list of them
is taken, a plain mapping with the contract's own keys is accepted as well
and sent as it is (so a misspelled key is refused by the server with
``InvalidPayloadError``, never stored as null).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Literal, Optional, Tuple, Union

__all__ = [
    "AlreadyRedriven",
    "Busy",
    "Cause",
    "ClaimNextResult",
    "ClaimRef",
    "ClaimResult",
    "Claimed",
    "Completed",
    "DropResult",
    "Event",
    "Failed",
    "AppendResult",
    "LimitInfo",
    "QueueGauges",
    "QueueInfo",
    "Metrics",
    "NewEvent",
    "Node",
    "NotifyStatus",
    "PresenceRow",
    "Redriven",
    "RedriveResult",
    "RenewResult",
    "ReturnedEvent",
    "SessionClaim",
    "SessionPage",
    "SessionSummary",
    "Settled",
    "Snapshot",
    "SnapshotInfo",
    "SnapshotWrite",
    "StateRead",
    "StateRequest",
    "StoredEvent",
]


@dataclass(frozen=True)
class Cause:
    """Where an event came from: attempt ``attempt`` of the event at ``index``."""

    index: int
    attempt: int
    #: How many events that attempt returned, when the producer said so.
    batch_size: Optional[int] = None


@dataclass(frozen=True)
class WaitFor:
    """A durable wait (a2 0.4.0): not claimable until an event of one of
    ``types`` is appended to the session after this one, or until
    ``timeout_ms`` has passed since it was appended (None: no timeout)."""

    types: List[str]
    timeout_ms: Optional[int] = None


@dataclass(frozen=True)
class WaitResult:
    """How a wait ended: ``timed_out``, or the ``index`` and ``type`` of the
    event that ended it."""

    timed_out: bool = False
    index: Optional[int] = None
    type: Optional[str] = None


@dataclass(frozen=True)
class Event:
    """An immutable log entry, as a reducer sees it."""

    id: str
    type: str
    payload: Any
    index: int
    session_id: str
    created_at: datetime


@dataclass(frozen=True)
class StoredEvent(Event):
    """A log entry with its dispatch bookkeeping (the contract's StoredEvent)."""

    cause: Optional[Cause]
    lane: Optional[str]
    processed_at: Optional[datetime]
    processed_by_attempt: Optional[int]
    returned_event_ids: Optional[List[str]]
    first_claimed_at: Optional[datetime]
    last_claimed_at: Optional[datetime]
    attempt_count: int
    failure_count: int
    last_failed_at: Optional[datetime]
    last_failed_attempt: Optional[int]
    last_error: Optional[str]
    failed_at: Optional[datetime]
    claim_holder: Optional[str]
    claim_expires_at: Optional[datetime]
    #: Not eligible before this time (a2 0.3.0 scheduling); None when unset.
    not_before: Optional[datetime] = None
    #: a2 0.4.0: the queue (None: 'default'), priority (None: 0), concurrency key.
    queue: Optional[str] = None
    priority: Optional[int] = None
    concurrency_key: Optional[str] = None
    #: When ``a2_cancel`` cancelled it (a2 0.4.0); None when not cancelled.
    #: ``processed_at`` is the same time and ``processed_by_attempt`` None.
    cancelled_at: Optional[datetime] = None
    #: The reason given to ``a2_cancel``; None without one (or not cancelled).
    cancel_reason: Optional[str] = None
    #: The event's durable wait (a2 0.4.0); None when it has none.
    wait_for: Optional[WaitFor] = None
    #: How that wait ended; None while it waits, or without a wait.
    wait_result: Optional[WaitResult] = None

    @property
    def finished(self) -> bool:
        """Processed, cancelled or dead-lettered: no claim will return it again."""
        return self.processed_at is not None or self.failed_at is not None

    @property
    def cancelled(self) -> bool:
        """Cancelled by ``a2_cancel``: terminal, never processed by an attempt."""
        return self.cancelled_at is not None


# -- inputs -----------------------------------------------------------------


@dataclass(frozen=True)
class NewEvent:
    """One event to append. A missing id is generated (by ``ids``, else the server)."""

    type: str
    payload: Any = None
    id: Optional[str] = None
    cause: Optional[Cause] = None
    lane: Optional[str] = None
    #: Store it already processed (an audit record nobody dispatches).
    settled: Optional[bool] = None
    #: Not claimable before this time (a2 0.3.0); only sent when given.
    not_before: Optional[datetime] = None
    #: a2 0.4.0 dispatch fields, each sent only when given.
    queue: Optional[str] = None
    priority: Optional[int] = None
    concurrency_key: Optional[str] = None
    #: A durable wait (a2 0.4.0); only sent when given.
    wait_for: Optional[WaitFor] = None


@dataclass(frozen=True)
class ReturnedEvent:
    """One event an attempt returns with its completion: it needs an id."""

    id: str
    type: str
    payload: Any = None
    lane: Optional[str] = None
    settled: Optional[bool] = None
    not_before: Optional[datetime] = None
    #: a2 0.4.0 dispatch fields, each sent only when given.
    queue: Optional[str] = None
    priority: Optional[int] = None
    concurrency_key: Optional[str] = None
    #: "Continue when X happens" (a2 0.4.0); only sent when given.
    wait_for: Optional[WaitFor] = None


@dataclass(frozen=True)
class QueueInfo:
    """One row of ``a2_list_queues()`` (a2 0.4.0)."""

    queue: str
    paused: bool
    available: int
    leased: int
    scheduled: int
    oldest_available_at: Optional[datetime]
    keys_at_limit: List[str]


@dataclass(frozen=True)
class LimitInfo:
    """One row of ``a2_list_limits()`` (a2 0.4.0)."""

    key: str
    max_leased: Optional[int]
    leased: int
    rate_max: Optional[int]
    rate_per_ms: Optional[int]
    claims_in_window: int
    at_limit: bool


@dataclass(frozen=True)
class ClaimRef:
    """A lease to renew: attempt ``attempt`` of the event at ``index``."""

    index: int
    attempt: int


@dataclass(frozen=True)
class SnapshotWrite:
    """A reducer checkpoint at ``index``, pinned for the listed unfinished events."""

    index: int
    state: Any = None
    pin_event_indexes: Optional[Tuple[int, ...]] = None


@dataclass(frozen=True)
class StateRequest:
    """One session of a ``read_states`` call."""

    session_id: str
    through_index: Optional[int] = None
    snapshot_through_index: Optional[int] = None


# -- results ----------------------------------------------------------------


@dataclass(frozen=True)
class AppendResult:
    events: List[StoredEvent]
    #: The session had an unprocessed event before, or gained one now.
    has_pending: bool


@dataclass(frozen=True)
class Claimed:
    events: List[StoredEvent]
    outcome: Literal["claimed"] = "claimed"


@dataclass(frozen=True)
class Busy:
    #: The earliest time something may become claimable (a lease expiry).
    retry_at: datetime
    outcome: Literal["busy"] = "busy"


@dataclass(frozen=True)
class Settled:
    outcome: Literal["settled"] = "settled"


ClaimResult = Union[Claimed, Busy, Settled]


@dataclass(frozen=True)
class SessionClaim:
    session_id: str
    events: List[StoredEvent]


@dataclass(frozen=True)
class ClaimNextResult:
    claims: List[SessionClaim]
    #: The earliest live lease expiry (or due time); None when nothing is leased.
    retry_at: Optional[datetime]


@dataclass(frozen=True)
class RenewResult:
    renewed: List[int]
    superseded: List[int]


@dataclass(frozen=True)
class Completed:
    """A completion: the children it stored (a stale attempt raises SupersededError)."""

    events: List[StoredEvent]
    outcome: Literal["completed"] = "completed"


@dataclass(frozen=True)
class Failed:
    """A failure: ``failed`` (re-claimable) or ``dead_lettered`` (at max_failures)."""

    outcome: Literal["failed", "dead_lettered"]
    failure_count: int


@dataclass(frozen=True)
class Redriven:
    event: StoredEvent
    outcome: Literal["redriven"] = "redriven"


@dataclass(frozen=True)
class AlreadyRedriven:
    event: StoredEvent
    outcome: Literal["already_redriven"] = "already_redriven"


RedriveResult = Union[Redriven, AlreadyRedriven]


@dataclass(frozen=True)
class Snapshot:
    index: int
    state: Any


@dataclass(frozen=True)
class StateRead:
    """One consistent cache-plus-tail read for a reducer fold."""

    #: The current head checkpoint, even when an older one is selected.
    head_index: Optional[int]
    snapshot: Optional[Snapshot]
    #: Events strictly after ``snapshot.index`` (the whole log on a miss).
    events: List[Event]


@dataclass(frozen=True)
class PresenceRow:
    participant: str
    field: str
    value: Any
    seen: int
    at: datetime
    expires_at: datetime


@dataclass(frozen=True)
class SessionSummary:
    session_id: str
    event_count: int
    pending_count: int
    failed_count: int
    attempt_count: int
    failure_count: int
    first_event_at: Optional[datetime]
    updated_at: Optional[datetime]
    #: a2 0.4.0: pending events per queue ("default" included), only for a
    #: session with a pending event in a named queue; None otherwise.
    pending_by_queue: Optional[Dict[str, int]] = None


@dataclass(frozen=True)
class SessionPage:
    sessions: List[SessionSummary]
    #: Pass it back for the next page; None on the last page.
    cursor: Optional[str]


@dataclass(frozen=True)
class SnapshotInfo:
    reducer_name: str
    index: int
    updated_at: datetime
    #: Only with include_history: whether this row is the reducer's head.
    head: Optional[bool] = None


@dataclass(frozen=True)
class DropResult:
    session_id: str
    dropped: bool
    events: int
    snapshots: int
    last_index: Optional[int]


@dataclass(frozen=True)
class Metrics:
    """One row of ``a2_metrics()``; see the repository README, Monitoring."""

    sessions_with_eligible_work: int
    eligible_events: int
    leased_events: int
    expired_leases: int
    dead_letters: int
    lane_waiting_events: int
    oldest_eligible_created_at: Optional[datetime]
    oldest_eligible_age_ms: Optional[int]
    events_estimate: int
    dead_rows_estimate: int
    events_inserted_estimate: int
    measured_at: datetime
    #: a2 0.4.0 (None from an older server): the paused queues and the
    #: concurrency keys at a limit now, sorted.
    paused_queues: Optional[List[str]] = None
    keys_at_limit: Optional[List[str]] = None
    #: a2 0.4.0 (None from an older server): each queue with unprocessed
    #: events ("default" for events without a queue) and its counts.
    queues: Optional[Dict[str, "QueueGauges"]] = None
    #: Columns a newer server adds (e.g. a scheduled count), by name.
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class QueueGauges:
    """One queue of ``a2_metrics().queues`` (a2 0.4.0): its unprocessed
    events by state; each sums over the queues to the ``Metrics`` field of
    the same name (``eligible_events``, ..., ``dead_letters``)."""

    eligible: int
    leased: int
    scheduled: int
    lane_waiting: int
    dead_letters: int


@dataclass(frozen=True)
class NotifyStatus:
    """One row of ``a2_notify_status()``: the background notifier's state."""

    mode: str
    notifier_pid: Optional[int]
    queue_size: Optional[int]
    queue_depth: Optional[int]
    waiting: Optional[int]
    recorded: Optional[int]
    announced: Optional[int]
    coalesced: Optional[int]
    fallbacks: Optional[int]
    dropped: Optional[int]
    extra: Dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Node:
    """A node a consumer must LISTEN on, as ``a2_notify_nodes()`` lists it."""

    host: str
    port: int
