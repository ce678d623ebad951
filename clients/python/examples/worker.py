#!/usr/bin/env python3
"""A stream-driven a2 worker in Python: claim, run the handler's own SQL and
the completion in ONE transaction, fail (retry, then dead-letter) when the
handler raises.

Run it against the demo cluster (see clients/python/README.md):

    A2_KEEP_CLUSTER=1 bash scripts/demo.sh                    # leaves a2_demo on /tmp/a2-pg
    PYTHONPATH=clients/python/src python3 clients/python/examples/worker.py
    PYTHONPATH=clients/python/src python3 clients/python/examples/worker.py --forever order-43
    bash scripts/cluster.sh stop

A2_DATABASE_URL overrides the connection (default: the demo cluster's
socket /tmp/a2-pg/sock, port 54329, database a2_demo). Behind a
transaction-mode pooler, point A2_DATABASE_URL at the pooler and
A2_LISTEN_URL at the database itself: the stream's LISTEN needs a direct
connection (without one it falls back to polling every second).
"""

from __future__ import annotations

import os
import socket
import sys
import time
from pathlib import Path
from typing import List

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from a2_client import (  # noqa: E402
    A2Store,
    Claimed,
    NewEvent,
    ReturnedEvent,
    StoredEvent,
    SupersededError,
    Transaction,
)

LEASE_MS = 30_000
MAX_FAILURES = 3


def ship(tx: Transaction, event: StoredEvent) -> List[ReturnedEvent]:
    """The handler: its own write, in the transaction the completion joins."""
    payload = event.payload if isinstance(event.payload, dict) else {}
    item, qty = payload.get("item"), payload.get("qty")
    if not item or not isinstance(qty, int) or qty <= 0:
        raise ValueError(f"order {event.index} has no item or quantity")
    tx.execute("INSERT INTO shipments (session_id, event_index, item, qty) VALUES (%s, %s, %s, %s)",
               [event.session_id, event.index, item, qty])
    return [ReturnedEvent(id=f"{event.id}/shipped", type="order.shipped", payload={"item": item, "qty": qty},
                          settled=True)]


def work(store: A2Store, session_id: str, holder: str) -> str:
    """One claim and its events; returns the claim's outcome."""
    claim = store.claim(session_id, holder, LEASE_MS)
    if not isinstance(claim, Claimed):
        return claim.outcome
    for event in claim.events:
        attempt = event.attempt_count
        try:
            with store.transaction() as tx:
                children = ship(tx, event)
                tx.complete(session_id, event.index, attempt, children)
            print(f"#{event.index} {event.type}: completed", flush=True)
        except SupersededError:
            # Another attempt owns the event now: nothing of ours was committed.
            print(f"#{event.index} {event.type}: superseded", flush=True)
        except Exception as err:
            # The transaction rolled back: no shipment row, event not completed.
            try:
                failed = store.fail(session_id, event.index, attempt, str(err), MAX_FAILURES)
            except SupersededError:
                continue
            print(f"#{event.index} {event.type}: {failed.outcome} ({failed.failure_count}/{MAX_FAILURES}): {err}",
                  flush=True)
    return "claimed"


def main(argv: List[str]) -> int:
    forever = "--forever" in argv
    names = [a for a in argv if not a.startswith("--")]
    session_id = names[0] if names else "order-42"
    url = os.environ.get("A2_DATABASE_URL",
                         "postgresql://postgres@/a2_demo?host=%2Ftmp%2Fa2-pg%2Fsock&port=54329")
    holder = f"{socket.gethostname()}:{os.getpid()}"
    with A2Store(url, listen_conninfo=os.environ.get("A2_LISTEN_URL")) as store:
        with store.transaction() as tx:
            tx.execute("""CREATE TABLE IF NOT EXISTS shipments (
                            session_id text, event_index bigint, item text, qty int,
                            PRIMARY KEY (session_id, event_index))""")
        if not forever:
            orders = [
                {"item": "tea", "qty": 2},
                {"item": "cups", "qty": 6},
                {"item": "kettle", "qty": 0},  # the handler refuses it: failed, then dead-lettered
                {"item": "sugar", "qty": 1},
                {"item": "spoons", "qty": 4},
            ]
            appended = store.append(session_id, [NewEvent(type="order.placed", payload=o) for o in orders])
            print(f"appended #{appended.events[0].index}..#{appended.events[-1].index} to {session_id}", flush=True)

        # The stream wakes the worker; claim decides what is eligible.
        for event in store.stream(session_id):
            if event.finished:
                continue
            outcome = work(store, session_id, holder)
            while outcome == "claimed":
                outcome = work(store, session_id, holder)
            if not forever and outcome == "settled":
                break
            if outcome == "busy":
                time.sleep(0.2)  # other leases belong to other workers

        with store.transaction() as tx:
            rows = tx.execute("SELECT item, qty FROM shipments WHERE session_id = %s ORDER BY event_index",
                              [session_id]).fetchall()
        print(f"shipments of {session_id}: {', '.join(f'{qty} {item}' for item, qty in rows)}", flush=True)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:
        sys.exit(130)
