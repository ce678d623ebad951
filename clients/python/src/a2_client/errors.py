"""One exception class per SQLSTATE of the a2 contract, and the mapping.

    Z2001                 PartialDuplicateBatchError
    Z2002                 SupersededError   (also: a completion or failure
                                             the server answers "superseded")
    Z2003                 NotFoundError
    Z2004                 NotDeadLetteredError
    Z2010                 SessionUnfinishedError
    22023, class 22       InvalidPayloadError   (22P02, 22003, ...)
    22004                 NullValueError        (an InvalidPayloadError)
    XX001                 CorruptEventError
    42501                 ForbiddenError
    42883, 3F000          NotConfiguredError    (a2 not installed there, or
                                                 not on search_path: see
                                                 the ``schema`` option)
    40001                 SerializationFailureError  (a StoreUnavailableError)
    40P01                 DeadlockDetectedError      (a StoreUnavailableError)
    anything else         StoreUnavailableError (connection refused or
                                                 lost, 57014, 3D000, ...)

Every one is an ``A2Error``; ``err.sqlstate`` is the SQLSTATE, ``err.code``
the TypeScript client's code for the same condition, and ``err.__cause__``
the psycopg exception. ``err.retryable`` is true for StoreUnavailableError
and its subclasses only: bad input is never reported as unavailable, so a
caller that retries on ``retryable`` never retries bad input forever.
"""

from __future__ import annotations

import re
from typing import Dict, Optional, Type

import psycopg

__all__ = [
    "A2Error",
    "CorruptEventError",
    "DeadlockDetectedError",
    "ForbiddenError",
    "InvalidPayloadError",
    "NotConfiguredError",
    "NotDeadLetteredError",
    "NotFoundError",
    "NullValueError",
    "PartialDuplicateBatchError",
    "SerializationFailureError",
    "SessionUnfinishedError",
    "StoreUnavailableError",
    "SupersededError",
    "to_a2_error",
]


class A2Error(Exception):
    """Base class of every error the client raises for an a2 call."""

    #: The TypeScript client's A2Error code for the same condition.
    code: str = "STORE_UNAVAILABLE"
    #: Worth retrying as it is (the store, not the input, failed).
    retryable: bool = False

    def __init__(self, message: str, *, sqlstate: Optional[str] = None,
                 detail: Optional[str] = None, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.sqlstate = sqlstate
        self.detail = detail
        self.hint = hint


class PartialDuplicateBatchError(A2Error):
    """Z2001: a replay that changed an event, mixed stored and new events, or reused an id."""

    code = "PARTIAL_DUPLICATE_BATCH"


_STALE = re.compile(r'^attempt (\d+) no longer owns event (\d+) in session "(.*)"$', re.S)


class SupersededError(A2Error):
    """Z2002: the attempt is stale; another attempt (or a dead letter) owns the event.

    Raised in every case the contract calls stale: an append whose ``cause``
    names an attempt that is no longer current (the server's Z2002), and
    ``complete``/``fail`` of such an attempt (the server answers
    ``{"outcome": "superseded"}``; the client raises this error instead, so
    that inside ``store.transaction()`` the handler's own writes roll back
    with it). ``session_id``, ``index`` and ``attempt`` name the attempt.
    """

    code = "SUPERSEDED_ATTEMPT"

    def __init__(self, message: str, *, sqlstate: Optional[str] = "Z2002",
                 detail: Optional[str] = None, hint: Optional[str] = None,
                 session_id: Optional[str] = None, index: Optional[int] = None,
                 attempt: Optional[int] = None) -> None:
        super().__init__(message, sqlstate=sqlstate, detail=detail, hint=hint)
        m = _STALE.match(message)
        if m is not None:
            attempt = int(m.group(1)) if attempt is None else attempt
            index = int(m.group(2)) if index is None else index
            session_id = m.group(3) if session_id is None else session_id
        self.session_id = session_id
        self.index = index
        self.attempt = attempt

    @classmethod
    def of(cls, session_id: str, index: int, attempt: int) -> "SupersededError":
        """The error for an answer of ``superseded`` (worded as the server's Z2002)."""
        return cls(f'attempt {attempt} no longer owns event {index} in session "{session_id}"',
                   detail="The server answered {\"outcome\": \"superseded\"}.",
                   session_id=session_id, index=index, attempt=attempt)


class NotFoundError(A2Error, LookupError):
    """Z2003: no event at that index in that session."""

    code = "NOT_FOUND"


class NotDeadLetteredError(A2Error):
    """Z2004: a redrive of an event that is not dead-lettered."""

    code = "NOT_DEAD_LETTERED"


class SessionUnfinishedError(A2Error):
    """Z2010: drop_session without force while an event is unfinished."""

    code = "SESSION_UNFINISHED"


class InvalidPayloadError(A2Error, ValueError):
    """22023 and every other data exception (class 22): bad input, nothing written."""

    code = "INVALID_PAYLOAD"


class NullValueError(InvalidPayloadError):
    """22004: None where the contract requires a value."""


class CorruptEventError(A2Error):
    """XX001: a stored row violates the contract (e.g. an invalid cause)."""

    code = "CORRUPT_EVENT"


class ForbiddenError(A2Error):
    """42501: privileges or row-level security refuse the call."""

    code = "FORBIDDEN"


class NotConfiguredError(A2Error):
    """42883/3F000: no such a2 function there (not installed, not on search_path, too old)."""

    code = "STORE_NOT_CONFIGURED"


class StoreUnavailableError(A2Error):
    """The store failed, not the input: connection refused or lost, timeouts, ...

    Worth retrying as it is (``retryable``); a whole transaction when it
    happened inside one.
    """

    code = "STORE_UNAVAILABLE"
    retryable = True


class SerializationFailureError(StoreUnavailableError):
    """40001: under REPEATABLE READ or SERIALIZABLE; retry the transaction."""


class DeadlockDetectedError(StoreUnavailableError):
    """40P01: PostgreSQL broke a deadlock (never between two a2 calls); retry."""


_BY_SQLSTATE: Dict[str, Type[A2Error]] = {
    "Z2001": PartialDuplicateBatchError,
    "Z2002": SupersededError,
    "Z2003": NotFoundError,
    "Z2004": NotDeadLetteredError,
    "Z2010": SessionUnfinishedError,
    "22004": NullValueError,
    "XX001": CorruptEventError,
    "42501": ForbiddenError,
    "42883": NotConfiguredError,
    "3F000": NotConfiguredError,
    "40001": SerializationFailureError,
    "40P01": DeadlockDetectedError,
}


def to_a2_error(err: BaseException) -> A2Error:
    """The A2Error for whatever a call raised (its ``__cause__`` is ``err``)."""
    if isinstance(err, A2Error):
        return err
    sqlstate: Optional[str] = None
    detail = hint = None
    message = str(err).strip() or type(err).__name__
    if isinstance(err, psycopg.Error):
        sqlstate = err.sqlstate
        diag = err.diag
        if diag.message_primary:
            message = diag.message_primary
        detail, hint = diag.message_detail, diag.message_hint
    cls: Type[A2Error]
    if sqlstate is None:
        cls = StoreUnavailableError
    elif sqlstate in _BY_SQLSTATE:
        cls = _BY_SQLSTATE[sqlstate]
    elif sqlstate.startswith("22"):
        cls = InvalidPayloadError
    else:
        cls = StoreUnavailableError
    if cls is StoreUnavailableError and sqlstate is None and not isinstance(err, psycopg.Error):
        message = f"{type(err).__name__}: {message}"
    mapped = cls(message, sqlstate=sqlstate, detail=detail, hint=hint)
    mapped.__cause__ = err
    return mapped
