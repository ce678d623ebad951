"""backoff(): exponential backoff with jitter, for ``fail(..., retry_after_ms=...)``.

    retry_after = backoff(base_ms=1000, max_ms=300_000)
    store.fail(s, e.index, e.attempt_count, str(err), 5,
               retry_after_ms=retry_after(e.id, e.attempt_count))

For the attempt ``attempt`` (1, 2, 3, ...) of the event with id ``event_id``::

    delay = base_ms * factor ** (attempt - 1), capped at max_ms
    ms    = floor(delay * (1 - jitter * u))

where ``u`` in [0, 1) is a hash of the event id and the attempt: the result
lies in [delay * (1 - jitter), delay], spread over that range for different
events but the same for the same event and attempt (no ``random``), so a
test with an injected clock gets the same schedule every run.

The same formula, step for step, as the TypeScript client's ``backoff()``
(clients/node/src/backoff.ts): IEEE-754 doubles in a fixed order, the power
by repeated multiplication, ``u`` = MurmurHash3's 32-bit finalizer over
FNV-1a (32 bit) of the UTF-8 bytes of ``f"{event_id}\\0{attempt}"`` (lone
surrogates as U+FFFD, as JavaScript's TextEncoder does), over 2**32.  Both
test suites check one table of values (clients/shared/backoff-vectors.json).
"""

from __future__ import annotations

import math
from typing import Callable

__all__ = ["BackoffPolicy", "backoff", "fmix32", "fnv1a32", "jitter_fraction"]

#: Given an event id and the attempt that failed, the milliseconds to wait.
BackoffPolicy = Callable[[str, int], int]

_MAX_SAFE_INTEGER = 2**53 - 1
_M32 = 0xFFFFFFFF


def fnv1a32(data: bytes) -> int:
    """FNV-1a, 32 bit."""
    h = 0x811C9DC5
    for b in data:
        h = ((h ^ b) * 0x01000193) & _M32
    return h


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finalizer."""
    h &= _M32
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    h ^= h >> 16
    return h


def _utf8(s: str) -> bytes:
    # As TextEncoder: a surrogate pair (two code points here) is one
    # character, a lone surrogate is U+FFFD.
    return s.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")


def jitter_fraction(event_id: str, attempt: int) -> float:
    """``u`` in [0, 1) for one event id and attempt."""
    return fmix32(fnv1a32(_utf8(f"{event_id}\0{attempt}"))) / 4294967296


def _number(v: object, what: str) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise TypeError(f"backoff: {what} must be a number, not {v!r}")
    return float(v)


def backoff(base_ms: float = 1000, max_ms: float = 300_000, factor: float = 2,
            jitter: float = 0.5) -> BackoffPolicy:
    """A policy ``(event_id, attempt) -> ms``.

    base_ms: the delay after attempt 1 (default 1000 ms); max_ms: the
    largest delay (default 300,000 ms, five minutes); factor: growth per
    attempt (default 2; 1 = constant); jitter: the randomized fraction of
    the delay, 0..1 (default 0.5; 0 = none).  Raises ValueError for values
    out of range.
    """
    base = _number(base_ms, "base_ms")
    cap = _number(max_ms, "max_ms")
    fac = _number(factor, "factor")
    jit = _number(jitter, "jitter")
    if not (math.isfinite(base) and base >= 0):
        raise ValueError(f"backoff: base_ms must be a finite number >= 0, not {base_ms!r}")
    if not (0 <= cap <= _MAX_SAFE_INTEGER):
        raise ValueError(f"backoff: max_ms must be a number from 0 to {_MAX_SAFE_INTEGER}, not {max_ms!r}")
    if not (math.isfinite(fac) and fac >= 1):
        raise ValueError(f"backoff: factor must be a finite number >= 1, not {factor!r}")
    if not (0 <= jit <= 1):
        raise ValueError(f"backoff: jitter must be from 0 to 1, not {jitter!r}")

    def policy(event_id: str, attempt: int) -> int:
        if not isinstance(event_id, str):
            raise TypeError("backoff: event_id must be a str")
        if isinstance(attempt, bool) or not isinstance(attempt, int) or not 1 <= attempt <= _MAX_SAFE_INTEGER:
            raise ValueError(f"backoff: attempt must be an integer >= 1, not {attempt!r}")
        delay = min(base, cap)
        # one multiplication per attempt, until max_ms (the TypeScript steps)
        if fac > 1 and delay > 0:
            i = 1
            while i < attempt and delay < cap:
                delay = min(delay * fac, cap)
                i += 1
        return math.floor(delay * (1 - jit * jitter_fraction(event_id, attempt)))

    return policy
