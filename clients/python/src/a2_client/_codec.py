"""JSON in both directions, and the checks on plain arguments.

Out: every jsonb argument is sent as JSON text and cast to jsonb in the
statement (never a PostgreSQL array literal), so ``[]`` stays ``[]``.
Dataclass inputs become the contract's camelCase keys, only those that are
set; mappings are sent with their own keys, so the server refuses a key the
contract does not define. ``datetime`` values inside the contract's fields
(``notBefore``) become ISO text; anything ``json`` cannot encode (a
``datetime`` in a payload, NaN, a set) is an InvalidPayloadError before any
I/O.

In: the functions answer jsonb (psycopg parses it) in camelCase with
ISO-8601 timestamps; these decoders build the dataclasses of ``models``.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from .errors import InvalidPayloadError
from .models import (
    AlreadyRedriven,
    Busy,
    Cause,
    ClaimNextResult,
    ClaimRef,
    ClaimResult,
    Claimed,
    DropResult,
    Event,
    NewEvent,
    PresenceRow,
    Redriven,
    RedriveResult,
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

Json = Dict[str, Any]

_MAX = datetime.max.replace(tzinfo=timezone.utc)
_MIN = datetime.min.replace(tzinfo=timezone.utc)


# -- out ----------------------------------------------------------------------


def json_text(value: Any) -> str:
    """JSON text for a jsonb parameter (strict: no NaN, no unknown types)."""
    try:
        return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as err:
        raise InvalidPayloadError(f"value cannot be encoded as JSON: {err}") from err


def iso(value: datetime, what: str) -> str:
    """ISO-8601 text in UTC for a timestamptz; a naive datetime is refused."""
    if not isinstance(value, datetime):
        raise InvalidPayloadError(f"{what} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidPayloadError(f"{what} must be timezone-aware (a naive datetime is ambiguous)")
    return value.astimezone(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def integer(value: Any, what: str) -> int:
    """An int argument; a float with a fraction (or a bool) is refused before any I/O."""
    if isinstance(value, bool):
        raise InvalidPayloadError(f"{what} must be an integer, not a bool")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    raise InvalidPayloadError(f"{what} must be an integer, not {value!r}")


def optional_integer(value: Any, what: str) -> Optional[int]:
    return None if value is None else integer(value, what)


def _plain(value: Any, what: str) -> Any:
    """A mapping's value: datetimes (notBefore) to ISO text, the rest as is."""
    return iso(value, what) if isinstance(value, datetime) else value


def _mapping(m: Mapping[str, Any], what: str) -> Json:
    if not isinstance(m, Mapping):
        raise InvalidPayloadError(f"{what} must be a dataclass or a mapping, not {type(m).__name__}")
    return {str(k): _plain(v, f"{what}.{k}") for k, v in m.items()}


def _cause_json(c: Union[Cause, Mapping[str, Any]]) -> Json:
    if isinstance(c, Cause):
        out: Json = {"index": c.index, "attempt": c.attempt}
        if c.batch_size is not None:
            out["batchSize"] = c.batch_size
        return out
    return _mapping(c, "cause")


NewEventLike = Union[NewEvent, Mapping[str, Any]]
ReturnedEventLike = Union[ReturnedEvent, Mapping[str, Any]]
SnapshotWriteLike = Union[SnapshotWrite, Mapping[str, Any]]
StateRequestLike = Union[StateRequest, str, Mapping[str, Any]]
ClaimLike = Union[ClaimRef, StoredEvent, Sequence[int], Mapping[str, Any]]


def new_event_json(e: NewEventLike, generated_id: Optional[str], i: int) -> Json:
    if not isinstance(e, NewEvent):
        out = _mapping(e, f"events[{i}]")
        if generated_id is not None and out.get("id") is None:
            out["id"] = generated_id
        return out
    out = {"type": e.type, "payload": e.payload}
    event_id = e.id if e.id is not None else generated_id
    if event_id is not None:
        out["id"] = event_id
    if e.cause is not None:
        out["cause"] = _cause_json(e.cause)
    if e.lane is not None:
        out["lane"] = e.lane
    if e.settled is not None:
        out["settled"] = e.settled
    if e.not_before is not None:
        out["notBefore"] = iso(e.not_before, f"events[{i}].not_before")
    _dispatch_json(e, out)
    if e.wait_for is not None:
        out["waitFor"] = _wait_for_json(e.wait_for)
    return out


def _dispatch_json(e: Any, out: Json) -> None:
    """a2 0.4.0: queue, priority, concurrencyKey, each only when given."""
    if e.queue is not None:
        out["queue"] = e.queue
    if e.priority is not None:
        out["priority"] = e.priority
    if e.concurrency_key is not None:
        out["concurrencyKey"] = e.concurrency_key


def _wait_for_json(w: Any) -> Any:
    """A WaitFor as sent (timeoutMs only when set); a mapping as it is."""
    if not isinstance(w, WaitFor):
        return w
    out: Json = {"types": list(w.types)}
    if w.timeout_ms is not None:
        out["timeoutMs"] = w.timeout_ms
    return out


def _wait_for(v: Any) -> Optional[WaitFor]:
    if v is None:
        return None
    return WaitFor(types=list(v["types"]), timeout_ms=int_or_none(v.get("timeoutMs")))


def _wait_result(v: Any) -> Optional[WaitResult]:
    if v is None:
        return None
    if v.get("timedOut") is True:
        return WaitResult(timed_out=True)
    return WaitResult(index=int(v["index"]), type=v["type"])


def has_id(e: NewEventLike) -> bool:
    return (e.id if isinstance(e, NewEvent) else e.get("id")) is not None


def returned_event_json(e: ReturnedEventLike, i: int) -> Json:
    if not isinstance(e, ReturnedEvent):
        return _mapping(e, f"events[{i}]")
    out: Json = {"id": e.id, "type": e.type, "payload": e.payload}
    if e.lane is not None:
        out["lane"] = e.lane
    if e.settled is not None:
        out["settled"] = e.settled
    if e.not_before is not None:
        out["notBefore"] = iso(e.not_before, f"events[{i}].not_before")
    _dispatch_json(e, out)
    if e.wait_for is not None:
        out["waitFor"] = _wait_for_json(e.wait_for)
    return out


def claim_json(c: ClaimLike, i: int) -> Json:
    if isinstance(c, ClaimRef):
        return {"index": c.index, "attempt": c.attempt}
    if isinstance(c, StoredEvent):
        return {"index": c.index, "attempt": c.attempt_count}
    if isinstance(c, Mapping):
        return _mapping(c, f"claims[{i}]")
    if isinstance(c, (tuple, list)) and len(c) == 2:
        return {"index": c[0], "attempt": c[1]}
    raise InvalidPayloadError(f"claims[{i}] must be a ClaimRef, a StoredEvent or an (index, attempt) pair")


def snapshot_write_json(w: SnapshotWriteLike, i: int) -> Json:
    if not isinstance(w, SnapshotWrite):
        return _mapping(w, f"snapshots[{i}]")
    out: Json = {"index": w.index, "state": w.state}
    if w.pin_event_indexes is not None:
        out["pinEventIndexes"] = list(w.pin_event_indexes)
    return out


def state_request_json(r: StateRequestLike, i: int) -> Json:
    if isinstance(r, str):
        return {"sessionId": r}
    if not isinstance(r, StateRequest):
        return _mapping(r, f"requests[{i}]")
    out: Json = {"sessionId": r.session_id}
    if r.through_index is not None:
        out["throughIndex"] = r.through_index
    if r.snapshot_through_index is not None:
        out["snapshotThroughIndex"] = r.snapshot_through_index
    return out


def listed(items: Iterable[Any], what: str) -> List[Any]:
    """A list argument: any iterable but a string or a mapping."""
    if isinstance(items, (str, bytes, Mapping)):
        raise InvalidPayloadError(f"{what} must be a list, not {type(items).__name__}")
    return list(items)


# -- in -----------------------------------------------------------------------


def when(v: Any) -> datetime:
    """An ISO timestamp from the server (UTC, "...Z").

    JavaScript's expanded years ("+275760-09-13T00:00:00.000Z", a lease of
    a huge ttl) lie beyond ``datetime``: they become ``datetime.max`` (or
    ``datetime.min``) in UTC.
    """
    s = str(v)
    if s[:1] in ("+", "-"):
        return _MAX if s[0] == "+" else _MIN
    if s.endswith("Z"):
        s = s[:-1] + "+00:00"
    return datetime.fromisoformat(s).astimezone(timezone.utc)


def when_or_none(v: Any) -> Optional[datetime]:
    return None if v is None else when(v)


def int_or_none(v: Any) -> Optional[int]:
    return None if v is None else int(v)


def _cause(v: Any) -> Optional[Cause]:
    if v is None:
        return None
    b = v.get("batchSize")
    return Cause(index=int(v["index"]), attempt=int(v["attempt"]), batch_size=None if b is None else int(b))


def to_event(e: Json) -> Event:
    return Event(
        id=e["id"],
        type=e["type"],
        payload=e.get("payload"),
        index=int(e["index"]),
        session_id=e["sessionId"],
        created_at=when(e["createdAt"]),
    )


def to_stored(e: Json) -> StoredEvent:
    ids = e.get("returnedEventIds")
    return StoredEvent(
        id=e["id"],
        type=e["type"],
        payload=e.get("payload"),
        index=int(e["index"]),
        session_id=e["sessionId"],
        created_at=when(e["createdAt"]),
        cause=_cause(e.get("cause")),
        lane=e.get("lane"),
        processed_at=when_or_none(e.get("processedAt")),
        processed_by_attempt=int_or_none(e.get("processedByAttempt")),
        returned_event_ids=None if ids is None else list(ids),
        first_claimed_at=when_or_none(e.get("firstClaimedAt")),
        last_claimed_at=when_or_none(e.get("lastClaimedAt")),
        attempt_count=int(e["attemptCount"]),
        failure_count=int(e["failureCount"]),
        last_failed_at=when_or_none(e.get("lastFailedAt")),
        last_failed_attempt=int_or_none(e.get("lastFailedAttempt")),
        last_error=e.get("lastError"),
        failed_at=when_or_none(e.get("failedAt")),
        claim_holder=e.get("claimHolder"),
        claim_expires_at=when_or_none(e.get("claimExpiresAt")),
        not_before=when_or_none(e.get("notBefore")),
        queue=e.get("queue"),
        priority=int_or_none(e.get("priority")),
        concurrency_key=e.get("concurrencyKey"),
        cancelled_at=when_or_none(e.get("cancelledAt")),
        cancel_reason=e.get("cancelReason"),
        wait_for=_wait_for(e.get("waitFor")),
        wait_result=_wait_result(e.get("waitResult")),
    )


def stored_list(v: Any) -> List[StoredEvent]:
    return [to_stored(e) for e in (v or [])]


def to_claim(r: Json) -> ClaimResult:
    outcome = r.get("outcome")
    if outcome == "claimed":
        return Claimed(events=stored_list(r.get("events")))
    if outcome == "busy":
        return Busy(retry_at=when(r["retryAt"]))
    return Settled()


def to_claim_next(r: Json) -> ClaimNextResult:
    return ClaimNextResult(
        claims=[SessionClaim(session_id=c["sessionId"], events=stored_list(c.get("events")))
                for c in r.get("claims") or []],
        retry_at=when_or_none(r.get("retryAt")),
    )


def to_redrive(r: Json) -> RedriveResult:
    event = to_stored(r["event"])
    if r.get("outcome") == "already_redriven":
        return AlreadyRedriven(event=event)
    return Redriven(event=event)


def to_state_read(r: Json) -> StateRead:
    snap = r.get("snapshot")
    return StateRead(
        head_index=int_or_none(r.get("headIndex")),
        snapshot=None if snap is None else Snapshot(index=int(snap["index"]), state=snap.get("state")),
        events=[to_event(e) for e in r.get("events") or []],
    )


def to_presence_row(r: Json) -> PresenceRow:
    return PresenceRow(
        participant=r["participant"],
        field=r["field"],
        value=r.get("value"),
        seen=int(r["seen"]),
        at=when(r["at"]),
        expires_at=when(r["expiresAt"]),
    )


def to_session_page(r: Json) -> SessionPage:
    return SessionPage(
        sessions=[
            SessionSummary(
                session_id=s["sessionId"],
                event_count=int(s["eventCount"]),
                pending_count=int(s["pendingCount"]),
                failed_count=int(s["failedCount"]),
                attempt_count=int(s["attemptCount"]),
                failure_count=int(s["failureCount"]),
                first_event_at=when_or_none(s.get("firstEventAt")),
                updated_at=when_or_none(s.get("updatedAt")),
                pending_by_queue=(None if s.get("pendingByQueue") is None
                                  else {q: int(n) for q, n in s["pendingByQueue"].items()}),
            )
            for s in r.get("sessions") or []
        ],
        cursor=r.get("cursor"),
    )


def to_snapshot_info(r: Json) -> SnapshotInfo:
    head = r.get("head")
    return SnapshotInfo(
        reducer_name=r["reducerName"],
        index=int(r["index"]),
        updated_at=when(r["updatedAt"]),
        head=None if head is None else bool(head),
    )


def to_drop(r: Json) -> DropResult:
    return DropResult(
        session_id=r["sessionId"],
        dropped=bool(r["dropped"]),
        events=int(r.get("events") or 0),
        snapshots=int(r.get("snapshots") or 0),
        last_index=int_or_none(r.get("lastIndex")),
    )
