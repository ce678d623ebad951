"""The store's methods (sync), over whatever runs a ``Call``.

``Operations`` is what ``A2Store``, a ``Transaction`` and ``store.using(conn)``
share: every a2 call, each one statement. The asyncio twin is in
``_aops.py``; both build their statements with ``_calls.Statements``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable, Iterable, List, Mapping, Optional, TypeVar

from . import _codec as c
from ._calls import Call, Statements
from ._schedules import ScheduleOperations
from .models import (
    AppendResult,
    ClaimNextResult,
    ClaimResult,
    Completed,
    DropResult,
    Failed,
    LimitInfo,
    Metrics,
    NotifyStatus,
    PresenceRow,
    QueueInfo,
    RedriveResult,
    RenewResult,
    SessionPage,
    SnapshotInfo,
    StateRead,
    StoredEvent,
)

T = TypeVar("T")


class Operations(ScheduleOperations):
    """Every a2 call, each one statement (one round trip)."""

    def __init__(self, statements: Statements, run: Callable[[Call[Any]], Any]) -> None:
        self._st = statements
        self._run_call = run

    def _run(self, call: Call[T]) -> T:
        result: T = self._run_call(call)
        return result

    # -- the log -------------------------------------------------------------

    def append(self, session_id: str, events: Iterable[c.NewEventLike]) -> AppendResult:
        """Append events (``a2_append``). An event with a stale ``cause`` raises SupersededError."""
        return self._run(self._st.append(session_id, events))

    def read(self, session_id: str, *, after_index: Optional[int] = None, through_index: Optional[int] = None,
             limit: Optional[int] = None) -> List[StoredEvent]:
        """Events with ``after_index < index <= through_index``, at most ``limit`` (``a2_read``)."""
        return self._run(self._st.read(session_id, after_index, through_index, limit))

    # -- work ----------------------------------------------------------------

    def claim(self, session_id: str, holder: str, ttl_ms: int, *, expires_at: Optional[datetime] = None,
              exclude_indexes: Iterable[int] = (), queues: Optional[Iterable[str]] = None) -> ClaimResult:
        """Claim every eligible event of a session: Claimed, Busy or Settled (``a2_claim``)."""
        return self._run(self._st.claim(session_id, holder, ttl_ms, expires_at, exclude_indexes, queues))

    def claim_next(self, holder: str, ttl_ms: int, max_sessions: int = 1, *,
                   expires_at: Optional[datetime] = None, queues: Optional[Iterable[str]] = None) -> ClaimNextResult:
        """Claim the eligible events of up to ``max_sessions`` sessions, oldest work first (``a2_claim_next``)."""
        return self._run(self._st.claim_next(holder, ttl_ms, max_sessions, expires_at, queues))

    def renew(self, session_id: str, holder: str, claims: Iterable[c.ClaimLike], ttl_ms: int, *,
              expires_at: Optional[datetime] = None) -> RenewResult:
        """Extend live leases; lists what was renewed and what is superseded (``a2_renew``; [] sends nothing)."""
        return self._run(self._st.renew(session_id, holder, claims, ttl_ms, expires_at))

    def complete(self, session_id: str, index: int, attempt: int,
                 events: Iterable[c.ReturnedEventLike] = ()) -> Completed:
        """Complete an attempt with its returned events (``a2_complete``).

        A stale attempt raises SupersededError (the server answered
        ``superseded``): inside ``store.transaction()`` that rolls back the
        handler's writes too.
        """
        return self._run(self._st.complete(session_id, index, attempt, events))

    def fail(self, session_id: str, index: int, attempt: int, error: Optional[str], max_failures: int, *,
             retry_after_ms: Optional[int] = None) -> Failed:
        """Record a failed attempt: Failed('failed' | 'dead_lettered') (``a2_fail``).

        ``retry_after_ms`` (a2 0.3.0 backoff) is sent only when given, so
        the call works on servers whose ``a2_fail`` has five arguments. A
        stale attempt raises SupersededError.
        """
        return self._run(self._st.fail(session_id, index, attempt, error, max_failures, retry_after_ms))

    def redrive(self, session_id: str, index: int) -> RedriveResult:
        """Put a dead-lettered event back in play: Redriven or AlreadyRedriven (``a2_redrive``)."""
        return self._run(self._st.redrive(session_id, index))

    def redrive_session(self, session_id: str) -> List[StoredEvent]:
        """Redrive every dead letter of a session; returns them, in index order."""
        return self._run(self._st.redrive_session(session_id))

    def cancel(self, session_id: str, indexes: Optional[Iterable[int]] = None,
               reason: Optional[str] = None) -> List[StoredEvent]:
        """Cancel unfinished events (``a2_cancel``, a2 0.4.0): the listed indexes, or every
        unfinished event of the session when ``indexes`` is None. Returns the events this call
        cancelled, in index order; finished ones are left alone, so a repeat returns []. A
        cancelled event's live attempt is superseded; its lane moves on. A listed index
        without an event raises NotFoundError and cancels nothing.
        """
        return self._run(self._st.cancel(session_id, indexes, reason))

    # -- state ---------------------------------------------------------------

    def read_state(self, session_id: str, reducer_name: str, *, through_index: Optional[int] = None,
                   snapshot_through_index: Optional[int] = None) -> StateRead:
        """A checkpoint and the events after it, in one consistent read (``a2_read_state``)."""
        return self._run(self._st.read_state(session_id, reducer_name, through_index, snapshot_through_index))

    def read_states(self, requests: Iterable[c.StateRequestLike], reducer_name: str) -> List[StateRead]:
        """``read_state`` for many sessions, in request order (``a2_read_states``; [] sends nothing)."""
        return self._run(self._st.read_states(requests, reducer_name))

    def put_snapshots(self, session_id: str, reducer_name: str, snapshots: Iterable[c.SnapshotWriteLike]) -> None:
        """Store reducer checkpoints (``a2_put_snapshots``; [] sends nothing)."""
        self._run(self._st.put_snapshots(session_id, reducer_name, snapshots))

    def list_snapshots(self, session_id: str, *, include_history: bool = False) -> List[SnapshotInfo]:
        """A session's checkpoints: heads, and pinned history with ``include_history``."""
        return self._run(self._st.list_snapshots(session_id, include_history))

    # -- presence ------------------------------------------------------------

    def presence_set(self, ns: str, participant: str, values: Mapping[str, Any], *, at: datetime, seen: int,
                     ttl_ms: int) -> None:
        """Field-wise last-writer-wins presence; a None value deletes (``a2_presence_set``; {} sends nothing)."""
        self._run(self._st.presence_set(ns, participant, values, at, seen, ttl_ms))

    def presence_read(self, ns: str) -> List[PresenceRow]:
        """The live presence rows of a namespace (``a2_presence_read``)."""
        return self._run(self._st.presence_read(ns))

    # -- inspection and retention --------------------------------------------

    def list_sessions(self, prefix: str = "", *, cursor: Optional[str] = None, limit: int = 100) -> SessionPage:
        """A page of session summaries in session-id order (``a2_list_sessions``)."""
        return self._run(self._st.list_sessions(prefix, cursor, limit))

    def metrics(self) -> Metrics:
        """The queue's figures (``a2_metrics()``; needs pg_monitor or a grant)."""
        return self._run(self._st.metrics())

    def notify_status(self) -> NotifyStatus:
        """The notifier's state (``a2_notify_status()``)."""
        return self._run(self._st.notify_status())

    def notify_wait(self, timeout_ms: int = 10000) -> bool:
        """Wait until every finished transaction's announcement was sent (tests)."""
        return self._run(self._st.notify_wait(timeout_ms))

    def drop_session(self, session_id: str, *, force: bool = False) -> DropResult:
        """Remove a finished session (``a2_drop_session``); unfinished work raises SessionUnfinishedError."""
        return self._run(self._st.drop_session(session_id, force))

    def drop_finished_sessions(self, idle_ms: int, max_sessions: int) -> int:
        """Drop up to ``max_sessions`` finished sessions idle for ``idle_ms``; returns how many."""
        return self._run(self._st.drop_finished_sessions(idle_ms, max_sessions))

    # -- dispatch control (a2 0.4.0) ----------------------------------------

    def set_concurrency_limit(self, key: str, max_leased: Optional[int]) -> None:
        """At most ``max_leased`` live leases of events with this key; None removes it."""
        self._run(self._st.set_concurrency_limit(key, max_leased))

    def set_rate_limit(self, key: str, max_claims: Optional[int], per_ms: Optional[int]) -> None:
        """At most ``max_claims`` claims start per ``per_ms`` window; None, None removes it."""
        self._run(self._st.set_rate_limit(key, max_claims, per_ms))

    def pause_queue(self, queue: str) -> bool:
        """Claims skip the queue from the commit on; True when it was not paused."""
        return self._run(self._st.pause_queue(queue))

    def resume_queue(self, queue: str) -> bool:
        """The queue is claimable at once again; True when it was paused."""
        return self._run(self._st.resume_queue(queue))

    def list_queues(self) -> List[QueueInfo]:
        """Per-queue figures (``a2_list_queues()``)."""
        return self._run(self._st.list_queues())

    def list_limits(self) -> List[LimitInfo]:
        """Each key with a limit (``a2_list_limits()``)."""
        return self._run(self._st.list_limits())
