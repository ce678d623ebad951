"""Recurring schedules (a2 0.4.0, docs/time.md "Schedules"): the calls and their results.

``ScheduleOperations`` and ``AsyncScheduleOperations`` are mixed into
``Operations`` and ``AsyncOperations``, so the store, a transaction and
``store.using(conn)`` all have ``schedule``, ``unschedule``,
``list_schedules``, ``pause_schedule``, ``resume_schedule`` and
``fire_schedules``. Each is one statement; an injected clock is a
transaction-local ``a2.now`` made in a FROM subquery, which the call's
expression refers to so that it runs after the setting (``_calls.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, TypeVar

from . import _codec as c
from ._calls import Call, Statements

T = TypeVar("T")

#: What ``fire_schedules`` and the background scheduler do with missed ticks.
MISSED_TICKS = ("skip", "latest", "backfill")


@dataclass(frozen=True)
class ScheduleInfo:
    """One row of ``a2_list_schedules()``."""

    name: str
    spec: str
    timezone: str
    session_id: str
    event: Dict[str, Any]
    missed: str
    backfill_limit: int
    grace_ms: int
    paused: bool
    next_tick_at: datetime
    last_tick_at: Optional[datetime]
    fired_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True)
class FiredTick:
    """One event a fire pass appended."""

    name: str
    tick_at: datetime
    session_id: str
    index: int
    event_id: str


def _rows(r: Any) -> List[Dict[str, Any]]:
    rows: List[Dict[str, Any]] = json.loads(r) if isinstance(r, str) else r
    return rows


def _info(s: Dict[str, Any]) -> ScheduleInfo:
    return ScheduleInfo(
        name=s["name"], spec=s["spec"], timezone=s["timezone"], session_id=s["session_id"], event=s["event"],
        missed=s["missed"], backfill_limit=int(s["backfill_limit"]), grace_ms=int(s["grace_ms"]),
        paused=s["paused"] is True, next_tick_at=c.when(s["next_tick_at"]),
        last_tick_at=c.when_or_none(s["last_tick_at"]), fired_count=int(s["fired_count"]),
        created_at=c.when(s["created_at"]), updated_at=c.when(s["updated_at"]))


def _fired(f: Dict[str, Any]) -> FiredTick:
    return FiredTick(name=f["name"], tick_at=c.when(f["tick_at"]), session_id=f["session_id"],
                     index=int(f["event_index"]), event_id=f["event_id"])


def _call(st: Statements, inner: Callable[[str], str], params: Sequence[Any], decode: Callable[[Any], T],
          clock: bool = True) -> Call[T]:
    values = list(params)
    if clock and st.clock is not None:
        values.append(c.iso(st.clock(), "clock()"))
        text = (f"SELECT {inner('a2_clock.c IS NOT NULL')} AS r"
                " FROM (SELECT pg_catalog.set_config('a2.now', %s::text, true) AS c) AS a2_clock")
    else:
        text = f"SELECT {inner('true')} AS r"
    return Call(text, values, decode)


def _schedule(st: Statements, name: str, spec: str, session_id: str, event: Mapping[str, Any],
              options: Dict[str, Any]) -> Call[datetime]:
    if not isinstance(event, Mapping):
        raise c.InvalidPayloadError(f"event must be a mapping, not {type(event).__name__}")
    opts = {k: v for k, v in options.items() if v is not None}
    return _call(st, lambda _: f"{st.fn('a2_schedule')}(%s::text, %s::text, %s::text, %s::jsonb, %s::jsonb)",
                 [name, spec, session_id, c.json_text(dict(event)), c.json_text(opts)], c.when)


def _options(timezone: Optional[str], missed: Optional[str], backfill_limit: Optional[int],
             grace_ms: Optional[int], paused: Optional[bool]) -> Dict[str, Any]:
    return {"timezone": timezone, "missed": missed, "backfillLimit": backfill_limit, "graceMs": grace_ms,
            "paused": paused}


def _unschedule(st: Statements, name: str) -> Call[bool]:
    return _call(st, lambda _: f"{st.fn('a2_unschedule')}(%s::text)", [name], lambda r: r is True, clock=False)


def _list(st: Statements) -> Call[List[ScheduleInfo]]:
    return _call(st, lambda _: f"(SELECT COALESCE(pg_catalog.json_agg(s), '[]'::json) FROM {st.fn('a2_list_schedules')}() s)",
                 [], lambda r: [_info(s) for s in _rows(r)], clock=False)


def _pause(st: Statements, name: str, pause: bool) -> Call[datetime]:
    fn = "a2_pause_schedule" if pause else "a2_resume_schedule"
    return _call(st, lambda _: f"{st.fn(fn)}(%s::text)", [name], c.when)


def _fire(st: Statements) -> Call[List[FiredTick]]:
    return _call(st, lambda after: (f"(SELECT COALESCE(pg_catalog.json_agg(f), '[]'::json)"
                                    f" FROM {st.fn('a2_fire_schedules')}() f WHERE {after})"),
                 [], lambda r: [_fired(f) for f in _rows(r)])


class ScheduleOperations:
    """The schedule calls of ``Operations`` (sync)."""

    _st: Statements
    _run_call: Callable[[Call[Any]], Any]

    def schedule(self, name: str, spec: str, session_id: str, event: Mapping[str, Any], *,
                 timezone: Optional[str] = None, missed: Optional[str] = None,
                 backfill_limit: Optional[int] = None, grace_ms: Optional[int] = None,
                 paused: Optional[bool] = None) -> datetime:
        """Create or replace the schedule ``name`` (``a2_schedule``); returns its next tick."""
        opts = _options(timezone, missed, backfill_limit, grace_ms, paused)
        result: datetime = self._run_call(_schedule(self._st, name, spec, session_id, event, opts))
        return result

    def unschedule(self, name: str) -> bool:
        """Remove a schedule; False when there was none (``a2_unschedule``)."""
        result: bool = self._run_call(_unschedule(self._st, name))
        return result

    def list_schedules(self) -> List[ScheduleInfo]:
        """Every schedule by name, with its next and last tick (``a2_list_schedules``)."""
        result: List[ScheduleInfo] = self._run_call(_list(self._st))
        return result

    def pause_schedule(self, name: str) -> datetime:
        """Pause a schedule (NotFoundError when there is none); returns its next tick."""
        result: datetime = self._run_call(_pause(self._st, name, True))
        return result

    def resume_schedule(self, name: str) -> datetime:
        """Resume a schedule; its missed ticks follow its policy at the next fire pass."""
        result: datetime = self._run_call(_pause(self._st, name, False))
        return result

    def fire_schedules(self) -> List[FiredTick]:
        """Fire every tick due at the store clock (``a2_fire_schedules``)."""
        result: List[FiredTick] = self._run_call(_fire(self._st))
        return result


class AsyncScheduleOperations:
    """The schedule calls of ``AsyncOperations``."""

    _st: Statements
    _run_call: Callable[[Call[Any]], Awaitable[Any]]

    async def schedule(self, name: str, spec: str, session_id: str, event: Mapping[str, Any], *,
                       timezone: Optional[str] = None, missed: Optional[str] = None,
                       backfill_limit: Optional[int] = None, grace_ms: Optional[int] = None,
                       paused: Optional[bool] = None) -> datetime:
        """Create or replace the schedule ``name`` (``a2_schedule``); returns its next tick."""
        opts = _options(timezone, missed, backfill_limit, grace_ms, paused)
        result: datetime = await self._run_call(_schedule(self._st, name, spec, session_id, event, opts))
        return result

    async def unschedule(self, name: str) -> bool:
        """Remove a schedule; False when there was none (``a2_unschedule``)."""
        result: bool = await self._run_call(_unschedule(self._st, name))
        return result

    async def list_schedules(self) -> List[ScheduleInfo]:
        """Every schedule by name, with its next and last tick (``a2_list_schedules``)."""
        result: List[ScheduleInfo] = await self._run_call(_list(self._st))
        return result

    async def pause_schedule(self, name: str) -> datetime:
        """Pause a schedule (NotFoundError when there is none); returns its next tick."""
        result: datetime = await self._run_call(_pause(self._st, name, True))
        return result

    async def resume_schedule(self, name: str) -> datetime:
        """Resume a schedule; its missed ticks follow its policy at the next fire pass."""
        result: datetime = await self._run_call(_pause(self._st, name, False))
        return result

    async def fire_schedules(self) -> List[FiredTick]:
        """Fire every tick due at the store clock (``a2_fire_schedules``)."""
        result: List[FiredTick] = await self._run_call(_fire(self._st))
        return result
