"""The statements: one ``SELECT a2_xxx(...)`` per call, and how to decode it.

A ``Call`` is what one method sends (text and parameters) and how its
answer becomes a result. The sync and asyncio stores run the same calls;
only the I/O differs.

Every call is one statement with positional parameters, sent unprepared
(``prepare=False``), so it works through a transaction-mode pooler. An
injected clock rides in the same statement:

    SELECT a2_claim(%s::text, ...) AS r
      FROM (SELECT pg_catalog.set_config('a2.now', %s::text, true)) AS a2_clock

PostgreSQL evaluates the FROM subquery before the select list (a subquery
with a volatile target list is not flattened), and the setting is
transaction-local: outside an explicit transaction it lasts for that one
statement and leaves nothing on the connection.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable, Dict, Generic, Iterable, List, Mapping, Optional, Sequence, TypeVar

from . import _codec as c
from .errors import InvalidPayloadError, SupersededError
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
    QueueGauges,
    QueueInfo,
    RedriveResult,
    RenewResult,
    SessionPage,
    SnapshotInfo,
    StateRead,
    StoredEvent,
)

T = TypeVar("T")

#: The injectable clock: returns the time every call of the store uses.
Clock = Callable[[], datetime]
#: The injectable id source for events appended without an id.
IdSource = Callable[[], str]


@dataclass(frozen=True)
class Call(Generic[T]):
    """One statement (``text`` None: nothing to send) and its decoder."""

    text: Optional[str]
    params: Sequence[Any]
    decode: Callable[[Any], T]


def quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _metrics(r: Dict[str, Any]) -> Metrics:
    known = Metrics.__dataclass_fields__.keys() - {"extra"}
    args: Dict[str, Any] = {k: r.get(k) for k in known}
    for k in ("oldest_eligible_created_at", "measured_at"):
        args[k] = c.when_or_none(args[k])
    for k in ("paused_queues", "keys_at_limit"):
        args[k] = None if args[k] is None else [str(x) for x in args[k]]
    if args["queues"] is not None:
        args["queues"] = {q: QueueGauges(eligible=int(v["eligible"]), leased=int(v["leased"]),
                                         scheduled=int(v["scheduled"]), lane_waiting=int(v["laneWaiting"]),
                                         dead_letters=int(v["deadLetters"]))
                          for q, v in args["queues"].items()}
    return Metrics(**args, extra={k: v for k, v in r.items() if k not in known})


def _queue_info(r: Dict[str, Any]) -> QueueInfo:
    return QueueInfo(queue=r["queue"], paused=r["paused"] is True, available=int(r["available"]),
                     leased=int(r["leased"]), scheduled=int(r["scheduled"]),
                     oldest_available_at=c.when_or_none(r.get("oldest_available_at")),
                     keys_at_limit=list(r.get("keys_at_limit") or []))


def _limit_info(r: Dict[str, Any]) -> LimitInfo:
    return LimitInfo(key=r["key"], max_leased=c.int_or_none(r.get("max_leased")), leased=int(r["leased"]),
                     rate_max=c.int_or_none(r.get("rate_max")), rate_per_ms=c.int_or_none(r.get("rate_per_ms")),
                     claims_in_window=int(r["claims_in_window"]), at_limit=r["at_limit"] is True)


def _notify_status(r: Dict[str, Any]) -> NotifyStatus:
    known = NotifyStatus.__dataclass_fields__.keys() - {"extra"}
    args: Dict[str, Any] = {k: r.get(k) for k in known}
    return NotifyStatus(**args, extra={k: v for k, v in r.items() if k not in known})


class Statements:
    """Builds the calls of one store: its schema, clock and id source."""

    def __init__(self, schema: Optional[str] = None, clock: Optional[Clock] = None,
                 ids: Optional[IdSource] = None) -> None:
        self.prefix = "" if schema is None else quote_ident(schema) + "."
        self.clock = clock
        self.ids = ids

    def fn(self, name: str) -> str:
        return self.prefix + name

    def call(self, name: str, args: Sequence[str], params: Sequence[Any],
             decode: Callable[[Any], T], clock: bool = True, select: Optional[str] = None) -> Call[T]:
        """``SELECT name(args) AS r`` with the clock's reading as the last parameter."""
        expr = f"{self.fn(name)}({', '.join(args)})"
        text = f"SELECT {select.format(expr) if select else expr} AS r"
        values = list(params)
        if clock and self.clock is not None:
            now = self.clock()
            values.append(c.iso(now, "clock()"))
            text += " FROM (SELECT pg_catalog.set_config('a2.now', %s::text, true)) AS a2_clock"
        return Call(text, values, decode)

    # -- the log ---------------------------------------------------------------

    def append(self, session_id: str, events: Iterable[c.NewEventLike]) -> Call[AppendResult]:
        batch = c.listed(events, "events")
        body = [c.new_event_json(e, None if c.has_id(e) or self.ids is None else self.ids(), i)
                for i, e in enumerate(batch)]
        return self.call("a2_append", ["%s::text", "%s::jsonb"], [session_id, c.json_text(body)],
                         lambda r: AppendResult(events=c.stored_list(r["events"]),
                                                has_pending=r.get("hasPending") is True))

    def read(self, session_id: str, after_index: Optional[int], through_index: Optional[int],
             limit: Optional[int]) -> Call[List[StoredEvent]]:
        return self.call("a2_read", ["%s::text", "%s::bigint", "%s::bigint", "%s::integer"],
                         [session_id, c.optional_integer(after_index, "after_index"),
                          c.optional_integer(through_index, "through_index"),
                          c.optional_integer(limit, "limit")],
                         # clocked: a waiting event's timeout is judged at the store clock
                         c.stored_list)

    # -- work --------------------------------------------------------------------

    def claim(self, session_id: str, holder: str, ttl_ms: int, expires_at: Optional[datetime],
              exclude_indexes: Iterable[int], queues: Optional[Iterable[str]] = None) -> Call[ClaimResult]:
        # queues (a2 0.4.0) is sent only when given, so a 0.3.0 server serves the rest
        args = ["%s::text", "%s::text", "%s::bigint", "%s::timestamptz", "%s::bigint[]"]
        params: List[Any] = [session_id, holder, c.integer(ttl_ms, "ttl_ms"), _at(expires_at),
                             [c.integer(i, "exclude_indexes[]") for i in c.listed(exclude_indexes, "exclude_indexes")]]
        if queues is not None:
            args.append("%s::text[]")
            params.append(list(c.listed(queues, "queues")))
        return self.call("a2_claim", args, params, c.to_claim)

    def claim_next(self, holder: str, ttl_ms: int, max_sessions: int,
                   expires_at: Optional[datetime], queues: Optional[Iterable[str]] = None) -> Call[ClaimNextResult]:
        args = ["%s::text", "%s::bigint", "%s::integer", "%s::timestamptz"]
        params: List[Any] = [holder, c.integer(ttl_ms, "ttl_ms"), c.integer(max_sessions, "max_sessions"),
                             _at(expires_at)]
        if queues is not None:
            args.append("%s::text[]")
            params.append(list(c.listed(queues, "queues")))
        return self.call("a2_claim_next", args, params, c.to_claim_next)

    # -- dispatch control (a2 0.4.0) -------------------------------------------

    def set_concurrency_limit(self, key: str, max_leased: Optional[int]) -> Call[None]:
        return self.call("a2_set_concurrency_limit", ["%s::text", "%s::integer"],
                         [key, c.optional_integer(max_leased, "max_leased")], lambda r: None, clock=False)

    def set_rate_limit(self, key: str, max_claims: Optional[int], per_ms: Optional[int]) -> Call[None]:
        return self.call("a2_set_rate_limit", ["%s::text", "%s::integer", "%s::bigint"],
                         [key, c.optional_integer(max_claims, "max_claims"), c.optional_integer(per_ms, "per_ms")],
                         lambda r: None, clock=False)

    def pause_queue(self, queue: str) -> Call[bool]:
        return self.call("a2_pause_queue", ["%s::text"], [queue], lambda r: r.get("changed") is True, clock=False)

    def resume_queue(self, queue: str) -> Call[bool]:
        return self.call("a2_resume_queue", ["%s::text"], [queue], lambda r: r.get("changed") is True)

    def list_queues(self) -> Call[List[QueueInfo]]:
        return self.call("a2_list_queues", [], [], lambda r: [_queue_info(x) for x in r],
                         select="(SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(x)), '[]'::jsonb) FROM {} x)")

    def list_limits(self) -> Call[List[LimitInfo]]:
        return self.call("a2_list_limits", [], [], lambda r: [_limit_info(x) for x in r],
                         select="(SELECT COALESCE(pg_catalog.jsonb_agg(pg_catalog.to_jsonb(x)), '[]'::jsonb) FROM {} x)")

    def renew(self, session_id: str, holder: str, claims: Iterable[c.ClaimLike], ttl_ms: int,
              expires_at: Optional[datetime]) -> Call[RenewResult]:
        listed = c.listed(claims, "claims")
        if not listed:  # as the TypeScript client: nothing to ask
            return Call(None, (), lambda _: RenewResult(renewed=[], superseded=[]))
        return self.call("a2_renew", ["%s::text", "%s::text", "%s::jsonb", "%s::bigint", "%s::timestamptz"],
                         [session_id, holder, c.json_text([c.claim_json(x, i) for i, x in enumerate(listed)]),
                          c.integer(ttl_ms, "ttl_ms"), _at(expires_at)],
                         lambda r: RenewResult(renewed=[int(i) for i in r["renewed"]],
                                               superseded=[int(i) for i in r["superseded"]]))

    def complete(self, session_id: str, index: int, attempt: int,
                 events: Iterable[c.ReturnedEventLike]) -> Call[Completed]:
        body = [c.returned_event_json(e, i) for i, e in enumerate(c.listed(events, "events"))]

        def decode(r: Dict[str, Any]) -> Completed:
            if r.get("outcome") != "completed":
                raise SupersededError.of(session_id, index, attempt)
            return Completed(events=c.stored_list(r.get("events")))

        return self.call("a2_complete", ["%s::text", "%s::bigint", "%s::integer", "%s::jsonb"],
                         [session_id, c.integer(index, "index"), c.integer(attempt, "attempt"), c.json_text(body)],
                         decode)

    def fail(self, session_id: str, index: int, attempt: int, error: Optional[str], max_failures: int,
             retry_after_ms: Optional[int]) -> Call[Failed]:
        args = ["%s::text", "%s::bigint", "%s::integer", "%s::text", "%s::integer"]
        params: List[Any] = [session_id, c.integer(index, "index"), c.integer(attempt, "attempt"),
                             error, c.integer(max_failures, "max_failures")]
        if retry_after_ms is not None:
            # Only then: a server without a2 0.3.0's backoff has the five-argument a2_fail.
            args.append("%s::bigint")
            params.append(c.integer(retry_after_ms, "retry_after_ms"))

        def decode(r: Dict[str, Any]) -> Failed:
            outcome = r.get("outcome")
            if outcome not in ("failed", "dead_lettered"):
                raise SupersededError.of(session_id, index, attempt)
            return Failed(outcome=outcome, failure_count=int(r["failureCount"]))

        return self.call("a2_fail", args, params, decode)

    def redrive(self, session_id: str, index: int) -> Call[RedriveResult]:
        return self.call("a2_redrive", ["%s::text", "%s::bigint"], [session_id, c.integer(index, "index")],
                         c.to_redrive)

    def redrive_session(self, session_id: str) -> Call[List[StoredEvent]]:
        return self.call("a2_redrive", ["%s::text"], [session_id], lambda r: c.stored_list(r["events"]))

    def cancel(self, session_id: str, indexes: Optional[Iterable[int]],
               reason: Optional[str]) -> Call[List[StoredEvent]]:
        listed = None if indexes is None else [c.integer(i, "indexes[]") for i in c.listed(indexes, "indexes")]
        return self.call("a2_cancel", ["%s::text", "%s::bigint[]", "%s::text"], [session_id, listed, reason],
                         lambda r: c.stored_list(r["cancelled"]))

    # -- state -------------------------------------------------------------------

    def read_state(self, session_id: str, reducer_name: str, through_index: Optional[int],
                   snapshot_through_index: Optional[int]) -> Call[StateRead]:
        return self.call("a2_read_state", ["%s::text", "%s::text", "%s::bigint", "%s::bigint"],
                         [session_id, reducer_name, c.optional_integer(through_index, "through_index"),
                          c.optional_integer(snapshot_through_index, "snapshot_through_index")],
                         c.to_state_read, clock=False)

    def read_states(self, requests: Iterable[c.StateRequestLike], reducer_name: str) -> Call[List[StateRead]]:
        listed = c.listed(requests, "requests")
        if not listed:
            return Call(None, (), lambda _: [])
        return self.call("a2_read_states", ["%s::jsonb", "%s::text"],
                         [c.json_text([c.state_request_json(r, i) for i, r in enumerate(listed)]), reducer_name],
                         lambda r: [c.to_state_read(x) for x in r], clock=False)

    def put_snapshots(self, session_id: str, reducer_name: str,
                      snapshots: Iterable[c.SnapshotWriteLike]) -> Call[None]:
        listed = c.listed(snapshots, "snapshots")
        if not listed:
            return Call(None, (), lambda _: None)
        return self.call("a2_put_snapshots", ["%s::text", "%s::text", "%s::jsonb"],
                         [session_id, reducer_name,
                          c.json_text([c.snapshot_write_json(w, i) for i, w in enumerate(listed)])],
                         lambda _: None)

    # -- presence ------------------------------------------------------------------

    def presence_set(self, ns: str, participant: str, values: Mapping[str, Any], at: datetime, seen: int,
                     ttl_ms: int) -> Call[None]:
        if not isinstance(values, Mapping):
            raise InvalidPayloadError(f"values must be a mapping, not {type(values).__name__}")
        if not values:  # as the TypeScript client: no fields, no write
            return Call(None, (), lambda _: None)
        return self.call("a2_presence_set",
                         ["%s::text", "%s::text", "%s::jsonb", "%s::timestamptz", "%s::bigint", "%s::bigint"],
                         [ns, participant, c.json_text(dict(values)), c.iso(at, "at"), c.integer(seen, "seen"),
                          c.integer(ttl_ms, "ttl_ms")],
                         lambda _: None)

    def presence_read(self, ns: str) -> Call[List[PresenceRow]]:
        return self.call("a2_presence_read", ["%s::text"], [ns], lambda r: [c.to_presence_row(x) for x in r])

    # -- inspection and retention ------------------------------------------------------

    def list_sessions(self, prefix: str, cursor: Optional[str], limit: int) -> Call[SessionPage]:
        return self.call("a2_list_sessions", ["%s::text", "%s::text", "%s::integer"],
                         [prefix, cursor, c.integer(limit, "limit")], c.to_session_page, clock=False)

    def list_snapshots(self, session_id: str, include_history: bool) -> Call[List[SnapshotInfo]]:
        return self.call("a2_list_snapshots", ["%s::text", "%s::boolean"], [session_id, bool(include_history)],
                         lambda r: [c.to_snapshot_info(x) for x in r], clock=False)

    def metrics(self) -> Call[Metrics]:
        return self.call("a2_metrics", [], [], _metrics, select="pg_catalog.to_jsonb({})")

    def notify_status(self) -> Call[NotifyStatus]:
        return self.call("a2_notify_status", [], [], _notify_status, clock=False, select="pg_catalog.to_jsonb({})")

    def notify_wait(self, timeout_ms: int) -> Call[bool]:
        return self.call("a2_notify_wait", ["%s::bigint"], [c.integer(timeout_ms, "timeout_ms")],
                         lambda r: r is True, clock=False)

    def drop_session(self, session_id: str, force: bool) -> Call[DropResult]:
        return self.call("a2_drop_session", ["%s::text", "%s::boolean"], [session_id, bool(force)], c.to_drop)

    def drop_finished_sessions(self, idle_ms: int, max_sessions: int) -> Call[int]:
        return self.call("a2_drop_finished_sessions", ["%s::bigint", "%s::integer"],
                         [c.integer(idle_ms, "idle_ms"), c.integer(max_sessions, "max_sessions")], int)

    # -- the stream's read -------------------------------------------------------------

    def read_page(self, session_id: str, after_index: int, limit: int) -> Call[List[StoredEvent]]:
        return self.call("a2_read", ["%s::text", "%s::bigint", "NULL", "%s::integer"],
                         [session_id, after_index, limit], c.stored_list, clock=False)


def _at(value: Optional[datetime]) -> Optional[str]:
    return None if value is None else c.iso(value, "expires_at")
