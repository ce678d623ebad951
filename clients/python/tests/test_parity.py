"""The sync and asyncio clients cannot drift apart.

The two are written by hand as twins (the README says why). For each pair
of classes this compares every public method and property, and the
constructor: the same names, and for each the same parameters (names,
kinds, defaults, annotations) and return annotation, once the asyncio
side's spelling is mapped to the sync one's: ``AsyncX`` is ``X``,
``Awaitable[T]`` is ``T``, ``async def`` is ``def``, ``__aenter__`` is
``__enter__`` and so on. Needs no database.
"""

from __future__ import annotations

import inspect
import re
import unittest
from typing import Any, Awaitable, Callable, Dict, List, Tuple

from . import helpers  # noqa: F401  (puts src on sys.path)
from a2_client import (
    A2Store,
    AsyncA2Store,
    AsyncListener,
    AsyncOperations,
    AsyncStream,
    AsyncTransaction,
    Listener,
    Operations,
    Stream,
    Transaction,
)

PAIRS: List[Tuple[type, type]] = [
    (Operations, AsyncOperations),
    (A2Store, AsyncA2Store),
    (Transaction, AsyncTransaction),
    (Stream, AsyncStream),
    (Listener, AsyncListener),
]

#: The asyncio protocol's names for the sync protocol's.
DUNDERS = {"__aenter__": "__enter__", "__aexit__": "__exit__", "__aiter__": "__iter__", "__anext__": "__next__"}

#: Same name on both sides, signatures different by design, with the reason.
#: (The listener's documented surface, ``listening``, ``backend_pid`` and
#: ``nodes``, is compared like everything else.)
SHAPES_DIFFER = {
    (Listener, "wait_ready"): "the stream's wait for the LISTEN: a thread polls its own done flag, a task is cancelled",
    (Listener, "close"): "the store's shutdown of the listener: a thread is joined with a timeout, a task is awaited",
}

#: Public only on the asyncio side, with the reason.
ASYNC_ONLY = {
    (AsyncStream, "aclose"): "the async-iterator protocol's close (awaitable); close() is the twin of Stream.close",
}


def members(cls: type) -> Dict[str, Any]:
    """The public methods and properties of ``cls`` and of its a2_client bases, plus ``__init__``
    and the context-manager and iterator protocols (asyncio names mapped to the sync ones)."""
    out: Dict[str, Any] = {}
    for klass in reversed(cls.__mro__):
        if not klass.__module__.startswith("a2_client"):
            continue
        for name, value in vars(klass).items():
            name = DUNDERS.get(name, name)
            if name.startswith("_") and name not in ("__init__", *DUNDERS.values()):
                continue
            if (cls, name) in ASYNC_ONLY:
                continue
            if isinstance(value, (staticmethod, classmethod)):
                value = value.__func__
            if callable(value) or isinstance(value, property):
                out[name] = value
    return out


def strip_wrapper(text: str, wrapper: str) -> str:
    """``text`` with every ``wrapper[X]`` replaced by ``X``."""
    while True:
        start = text.find(wrapper + "[")
        if start < 0:
            return text
        depth, i = 0, start + len(wrapper)
        for i in range(start + len(wrapper), len(text)):
            depth += {"[": 1, "]": -1}.get(text[i], 0)
            if depth == 0:
                break
        text = text[:start] + text[start + len(wrapper) + 1:i] + text[i + 1:]


def spelled_sync(annotation: Any) -> str:
    """An annotation as the sync side would write it."""
    if annotation is inspect.Parameter.empty:
        return ""
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    text = text.replace("'", "").replace('"', "")
    text = strip_wrapper(text, "Awaitable")
    text = re.sub(r"\bAsync(?=[A-Z])", "", text)  # AsyncA2Store, AsyncIterator, psycopg.AsyncConnection, ...
    text = re.sub(r"\baclose\b", "close", text)
    return text


def shape(member: Any) -> Tuple[Any, ...]:
    if isinstance(member, property):
        assert member.fget is not None
        return ("property", spelled_sync(inspect.signature(member.fget).return_annotation))
    sig = inspect.signature(member)
    params = tuple((p.name, p.kind.name, repr(p.default), spelled_sync(p.annotation))
                   for p in sig.parameters.values())
    return ("function", params, spelled_sync(sig.return_annotation),
            "context manager" if hasattr(member, "__wrapped__") else "plain")


class SignatureParityTest(unittest.TestCase):
    def test_every_public_member_has_the_same_signature_on_both_sides(self) -> None:
        for sync_cls, async_cls in PAIRS:
            sync, aio = members(sync_cls), members(async_cls)
            with self.subTest(pair=async_cls.__name__):
                self.assertEqual(sorted(sync), sorted(aio), "the same public names")
                for name in sync:
                    if (sync_cls, name) in SHAPES_DIFFER:
                        continue
                    self.assertEqual(shape(sync[name]), shape(aio[name]), f"{sync_cls.__name__}.{name}")

    def test_what_is_awaited_on_one_side_is_plain_on_the_other(self) -> None:
        for sync_cls, async_cls in PAIRS:
            sync, aio = members(sync_cls), members(async_cls)
            for name, member in sync.items():
                func: Callable[..., Any] = getattr(member, "__wrapped__", member)
                if not isinstance(member, property):
                    self.assertFalse(inspect.iscoroutinefunction(func), f"{sync_cls.__name__}.{name} is async")
            # Every call of the store is awaited on the asyncio side.
            if async_cls in (AsyncOperations, AsyncA2Store, AsyncTransaction):
                for name in members(Operations):
                    if name != "__init__":
                        self.assertTrue(inspect.iscoroutinefunction(aio[name]), f"{async_cls.__name__}.{name}")

    def test_the_comparison_sees_a_difference(self) -> None:
        # The check itself can fail: a changed default, annotation or name is seen.
        def a(self: Any, x: int = 1) -> "Awaitable[List[str]]":
            raise NotImplementedError

        def b(self: Any, x: int = 1) -> List[str]:
            return []

        def c(self: Any, x: int = 2) -> List[str]:
            return []

        def d(self: Any, x: str = "1") -> List[str]:
            return []

        def e(self: Any, y: int = 1) -> List[str]:
            return []

        def f(self: Any, x: int = 1) -> List[int]:
            return []

        self.assertEqual(shape(a), shape(b))
        for other in (c, d, e, f):
            self.assertNotEqual(shape(b), shape(other), other.__name__)
        self.assertEqual(spelled_sync("Optional[psycopg.AsyncConnection[Any]]"), "Optional[psycopg.Connection[Any]]")
        self.assertEqual(spelled_sync("Callable[[Call[Any]], Awaitable[Any]]"), "Callable[[Call[Any]], Any]")
        self.assertEqual(spelled_sync("AsyncIterator['AsyncTransaction']"), "Iterator[Transaction]")


if __name__ == "__main__":
    unittest.main()
