"""Test helpers: a fresh database with the extension per test module, on the
cluster that PGHOST/PGPORT/PGUSER name (scripts/test.sh exports them; libpq
reads them itself).

With A2_PY_VIA_PGBOUNCER=1 the stores under test connect through the
transaction-mode pgbouncer at A2_PGBOUNCER_URL (test/suites/85-python-client.sh
runs every test file both ways); their LISTEN and the tests' own admin
connections stay direct, as the README says a stream's must.
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, TypeVar

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT / "src") not in sys.path:
    sys.path.insert(0, str(ROOT / "src"))

import psycopg  # noqa: E402
from psycopg.conninfo import make_conninfo  # noqa: E402

from a2_client import A2Store, StoredEvent  # noqa: E402

T = TypeVar("T")

BOUNCER_URL = os.environ.get("A2_PGBOUNCER_URL") or None
VIA_BOUNCER = os.environ.get("A2_PY_VIA_PGBOUNCER") == "1"
if VIA_BOUNCER and BOUNCER_URL is None:
    raise RuntimeError("A2_PY_VIA_PGBOUNCER=1 needs A2_PGBOUNCER_URL")


def direct(db: str, **kwargs: Any) -> str:
    """A direct connection to ``db`` (host, port and user from the environment)."""
    return make_conninfo("", dbname=db, **kwargs)


def through_bouncer(db: str) -> str:
    assert BOUNCER_URL is not None
    return make_conninfo(BOUNCER_URL, dbname=db)


def target(db: str) -> str:
    """Where the stores under test connect: direct, or through pgbouncer."""
    return through_bouncer(db) if VIA_BOUNCER else direct(db)


def admin(db: str = "postgres") -> "psycopg.Connection[Any]":
    return psycopg.connect(direct(db), autocommit=True)


def fresh_database(name: str, schema: Optional[str] = None) -> None:
    """Drop and create ``name`` with a2 installed (in ``schema`` when given)."""
    with admin() as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {name}")
    with admin(name) as c:
        if schema:
            c.execute(f"CREATE SCHEMA {schema}")
            c.execute(f"CREATE EXTENSION a2 SCHEMA {schema}")
        else:
            c.execute("CREATE EXTENSION a2")


def drop_database(name: str) -> None:
    with admin() as c:
        c.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def store_on(db: str, **options: Any) -> A2Store:
    """A store on ``db`` (through pgbouncer when the run says so; LISTEN direct)."""
    options.setdefault("listen_conninfo", direct(db))
    return A2Store(target(db), **options)


class ManualClock:
    """A clock the test moves by hand."""

    def __init__(self, iso: str = "2026-01-01T00:00:00.000+00:00") -> None:
        self.at = datetime.fromisoformat(iso)

    def __call__(self) -> datetime:
        return self.at

    def advance(self, ms: int) -> None:
        self.at += timedelta(milliseconds=ms)


def utc(iso: str) -> datetime:
    return datetime.fromisoformat(iso).astimezone(timezone.utc)


def ms(d: datetime, n: int) -> datetime:
    return d + timedelta(milliseconds=n)


def wait_until(cond: Callable[[], bool], seconds: float, what: str) -> None:
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"timed out after {seconds} s: {what}")
        time.sleep(0.01)


_pool = ThreadPoolExecutor(max_workers=16, thread_name_prefix="a2-test")


def take_async(stream: Iterator[StoredEvent], n: int) -> "Future[List[StoredEvent]]":
    """Start taking the next ``n`` events of a stream in a thread."""

    def run() -> List[StoredEvent]:
        out: List[StoredEvent] = []
        while len(out) < n:
            try:
                out.append(next(stream))
            except StopIteration:
                break
        return out

    return _pool.submit(run)


def within(f: "Future[T]", seconds: float, what: str, stream: Any = None) -> T:
    """The future's result, or a failure after ``seconds`` (closing ``stream`` to free the thread)."""
    try:
        return f.result(timeout=seconds)
    except FutureTimeout:
        pass
    if stream is not None:
        stream.close()
    raise AssertionError(f"timed out after {seconds} s: {what}")


def not_within(f: "Future[Any]", seconds: float) -> bool:
    """True when ``f`` has not finished after ``seconds``."""
    try:
        f.result(timeout=seconds)
    except FutureTimeout:
        return True
    except Exception:
        return False
    return False


def take(stream: Any, n: int, seconds: float, what: str) -> List[StoredEvent]:
    return within(take_async(stream, n), seconds, what, stream)


def count_backends(db: str, where: str = "true") -> int:
    with admin() as c:
        row = c.execute(f"SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid() "
                        f"AND {where}", [db]).fetchone()
        assert row is not None
        return int(row[0])


def background(fn: Callable[[], T]) -> "Future[T]":
    return _pool.submit(fn)


def sleep(seconds: float) -> None:
    time.sleep(seconds)

