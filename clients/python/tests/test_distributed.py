"""store.stream() in distributed mode, faked on the single-node cluster (the
port of distributed.test.ts).

The store under test uses the ``schema`` option to call, in schema
``fake``, an ``a2_is_distributed()`` that says true, an
``a2_notify_nodes()`` that lists three "nodes" (coord, w1, w2), and an
``a2_read`` that is the real one in ``public``. Its ``node_connection``
maps coord to the store's database and w1/w2 to two other databases.
Notifications are per database, so each "node" is a channel of its own: an
event is stored where the reads see it (database coord, written with
``a2.notify = off``, so it announces nothing) and announced only on one
"worker" (a ``pg_notify`` there), which is how a delegated append looks to
a consumer on Citus. The poll is off (60 s), so such an event arrives only
if the stream LISTENs on that node, or by a catch-up read.
"""

from __future__ import annotations

import itertools
import os
import unittest
from typing import Any, Dict, List, Optional

import psycopg
from psycopg.conninfo import conninfo_to_dict

from . import helpers as h
from a2_client import A2Store, Node
from a2_client._listen import node_settings

DB = "a2_py_dist"
W1 = "a2_py_dist_w1"
W2 = "a2_py_dist_w2"
NO_POLL = 60.0
DATABASES = {"coord": DB, "w1": W1, "w2": W2}
_n = itertools.count(1)


def session() -> str:
    return f"ds-{next(_n)}"


def fake_schema(schema: str, nodes: str) -> List[str]:
    return [
        f"CREATE SCHEMA {schema}",
        f"""CREATE FUNCTION {schema}.a2_read(text, bigint, bigint, integer) RETURNS jsonb
              LANGUAGE sql AS 'SELECT public.a2_read($1, $2, $3, $4)'""",
        f"CREATE FUNCTION {schema}.a2_is_distributed() RETURNS boolean LANGUAGE sql AS 'SELECT true'",
        f"""CREATE FUNCTION {schema}.a2_notify_nodes() RETURNS TABLE (node_name text, node_port integer)
              LANGUAGE sql AS $$ {nodes} $$""",
    ]


def datname_of(pid: Optional[int]) -> Optional[str]:
    with h.admin() as c:
        row = c.execute("SELECT datname FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone()
    return None if row is None else str(row[0])


class DistributedTest(unittest.TestCase):
    writer: A2Store
    quiet_conn: "psycopg.Connection[Any]"

    @classmethod
    def setUpClass(cls) -> None:
        h.fresh_database(DB)
        for db in (W1, W2):
            h.drop_database(db)
            with h.admin() as c:
                c.execute(f"CREATE DATABASE {db}")
        cls.writer = h.store_on(DB)
        info = conninfo_to_dict(h.direct(DB))
        host = str(info.get("host") or os.environ.get("PGHOST") or "localhost").replace("'", "''")
        port = int(info.get("port") or os.environ.get("PGPORT") or 5432)
        with h.admin(DB) as c:
            for stmt in [
                *fake_schema("fake", "VALUES ('coord', 1), ('w1', 2), ('w2', 3)"),
                # One node at the cluster's real address: the default settings path.
                *fake_schema("fake_one", f"VALUES ('{host}', {port})"),
                # Distributed, but no node listed: the store's own LISTEN stays.
                *fake_schema("fake_none", "SELECT NULL::text, NULL::integer WHERE false"),
                # An a2 0.1.0 install: no a2_is_distributed().
                "CREATE SCHEMA old",
                """CREATE FUNCTION old.a2_read(text, bigint, bigint, integer) RETURNS jsonb
                     LANGUAGE sql AS 'SELECT public.a2_read($1, $2, $3, $4)'""",
            ]:
                c.execute(stmt)
        cls.quiet_conn = psycopg.connect(h.direct(DB), autocommit=True)
        cls.quiet_conn.execute("SET a2.notify = 'off'")

    @classmethod
    def tearDownClass(cls) -> None:
        cls.quiet_conn.close()
        cls.writer.close()
        for db in (DB, W1, W2):
            h.drop_database(db)

    def append_quietly(self, s: str) -> int:
        """Store an event without announcing it anywhere."""
        row = self.quiet_conn.execute(
            """SELECT public.a2_append(%s, '[{"type": "q"}]') -> 'events' -> 0 ->> 'index'""", [s]).fetchone()
        assert row is not None
        return int(row[0])

    def announce_on(self, db: str, s: str, index: int) -> None:
        """Announce ``s`` at ``index`` on database ``db`` only, as a worker's notifier would."""
        with h.admin(db) as c:
            c.execute("SELECT pg_notify('a2_events', json_build_object('sessionId', %s::text, "
                      "'index', %s::bigint)::text)", [s, index])

    def test_listens_on_every_node(self) -> None:
        store = h.store_on(DB, schema="fake", poll_interval=NO_POLL,
                           node_connection=lambda node: h.direct(DATABASES[node.host]))
        single = h.store_on(DB, poll_interval=NO_POLL)  # control: hears only its own database
        try:
            s1, s2 = session(), session()
            self.writer.append(s1, [{"type": "before"}])
            it1, it2, control = store.stream(s1), store.stream(s2), single.stream(s1)
            self.assertEqual([e.index for e in h.take(it1, 1, 5, "catch-up")], [1])
            self.assertEqual([e.index for e in h.take(control, 1, 5, "control catch-up")], [1])
            listener = store.listener
            h.wait_until(lambda: len(listener.nodes) == 3 and all(x.listening for x in listener.nodes), 5,
                         "three LISTENs")
            self.assertIs(listener.distributed, True)
            self.assertIs(single.listener.distributed, False)
            self.assertIsNone(listener.backend_pid)
            self.assertEqual([(x.host, x.port, x.listens) for x in listener.nodes],
                             [("coord", 1, 1), ("w1", 2, 1), ("w2", 3, 1)])
            for x in listener.nodes:
                self.assertEqual(datname_of(x.backend_pid), DATABASES[x.host])

            # Announced only on w1: the distributed store hears it, the control does not.
            nxt1 = h.take_async(it1, 1)
            control_next = h.take_async(control, 1)
            h.sleep(0.05)
            self.announce_on(W1, s1, self.append_quietly(s1))
            self.assertEqual([(e.index, e.type) for e in h.within(nxt1, 5, "s1: announced on w1", it1)], [(2, "q")])
            self.assertEqual([x.notifications for x in listener.nodes], [0, 1, 0])
            self.assertTrue(h.not_within(control_next, 0.7), "the single-node store heard w1")

            # Announced only on w2, for the other session.
            nxt2 = h.take_async(it2, 1)
            h.sleep(0.05)
            self.announce_on(W2, s2, self.append_quietly(s2))
            self.assertEqual([(e.session_id, e.index) for e in h.within(nxt2, 5, "s2: on w2", it2)], [(s2, 1)])
            self.assertEqual([x.notifications for x in listener.nodes], [0, 1, 1])

            # An ordinary append, announced by a2 on the store's own database.
            nxt3 = h.take_async(it1, 1)
            h.sleep(0.05)
            self.writer.append(s1, [{"type": "c"}])
            self.assertEqual([(e.index, e.type) for e in h.within(nxt3, 5, "s1: on coord", it1)], [(3, "c")])
            self.assertEqual([x.notifications for x in listener.nodes], [1, 1, 1])
            self.assertEqual(listener.listens, 3)
        finally:
            store.close()
            single.close()
        # close() ended every node's connection.
        h.wait_until(lambda: h.count_backends(W1) + h.count_backends(W2) == 0, 3, "node connections closed")

    def test_catches_up_when_a_node_listens_and_reconnects_one_node(self) -> None:
        w2_up = [False]

        def nodes(node: Node) -> str:
            # w2 is unreachable (a database that does not exist) until w2_up.
            db = "a2_py_dist_nowhere" if node.host == "w2" and not w2_up[0] else DATABASES[node.host]
            return h.direct(db)

        with h.store_on(DB, schema="fake", poll_interval=NO_POLL, node_connection=nodes) as store:
            s = session()
            it = store.stream(s)
            listener = store.listener
            first = h.take_async(it, 1)
            h.wait_until(lambda: len(listener.nodes) == 3 and listener.nodes[0].listening
                         and listener.nodes[1].listening, 5, "coord and w1")
            h.sleep(0.1)  # the stream's first (empty) read is done
            # Stored while w2 is down, and announced on w2 only: the announcement is lost.
            self.announce_on(W2, s, self.append_quietly(s))
            self.assertTrue(h.not_within(first, 0.5), "delivered before w2 listened")
            self.assertFalse(listener.nodes[2].listening)
            w2_up[0] = True
            # Only the catch-up after w2's LISTEN can find it.
            self.assertEqual([e.index for e in h.within(first, 10, "the catch-up after w2's LISTEN", it)], [1])
            self.assertEqual(listener.nodes[2].listens, 1)

            # Terminate w1's listener: only w1 reconnects.
            before = listener.nodes
            with h.admin() as c:
                self.assertEqual(c.execute("SELECT pg_terminate_backend(%s)", [before[1].backend_pid]).fetchone(),
                                 (True,))
            h.wait_until(lambda: listener.nodes[1].listens == 2 and listener.nodes[1].listening, 10,
                         "w1 LISTENs again")
            now = listener.nodes
            self.assertNotEqual(now[1].backend_pid, before[1].backend_pid)
            self.assertEqual((now[0].listens, now[0].backend_pid), (1, before[0].backend_pid))
            self.assertEqual((now[2].listens, now[2].backend_pid), (1, before[2].backend_pid))
            live = h.take_async(it, 1)
            h.sleep(0.05)
            self.announce_on(W1, s, self.append_quietly(s))
            self.assertEqual([e.index for e in h.within(live, 5, "announced on w1 after its reconnect", it)], [2])

    def test_default_node_settings_are_the_stores_at_the_nodes_address(self) -> None:
        # PGDATABASE names another database: the store's own dbname must be the one used.
        self.assertNotEqual(os.environ.get("PGDATABASE", "postgres"), DB)
        with h.store_on(DB, schema="fake_one", poll_interval=NO_POLL) as store:
            s = session()
            it = store.stream(s)
            listener = store.listener
            h.wait_until(lambda: len(listener.nodes) == 1 and listener.nodes[0].listening, 5, "one node LISTENs")
            self.assertEqual(datname_of(listener.nodes[0].backend_pid), DB)
            live = h.take_async(it, 1)
            h.sleep(0.05)
            self.writer.append(s, [{"type": "x"}])
            self.assertEqual([e.index for e in h.within(live, 5, "announced by a2 on the node", it)], [1])

    def test_no_a2_is_distributed_means_one_node(self) -> None:
        with h.store_on(DB, schema="old", poll_interval=NO_POLL) as store:
            s = session()
            it = store.stream(s)
            listener = store.listener
            h.wait_until(lambda: listener.listening, 5, "LISTEN")
            self.assertIs(listener.distributed, False)
            self.assertEqual(listener.nodes, [])
            self.assertIsNotNone(listener.backend_pid)
            live = h.take_async(it, 1)
            h.sleep(0.05)
            self.writer.append(s, [{"type": "x"}])
            self.assertEqual([e.index for e in h.within(live, 5, "announced", it)], [1])

    def test_no_node_listed_keeps_the_own_listen(self) -> None:
        with h.store_on(DB, schema="fake_none", poll_interval=NO_POLL) as store:
            s = session()
            it = store.stream(s)
            listener = store.listener
            h.wait_until(lambda: listener.listening, 5, "LISTEN")
            self.assertIs(listener.distributed, True)
            self.assertEqual(listener.nodes, [])
            live = h.take_async(it, 1)
            h.sleep(0.05)
            self.writer.append(s, [{"type": "x"}])
            self.assertEqual([e.index for e in h.within(live, 5, "announced", it)], [1])
            self.assertEqual(listener.listens, 1)

    def test_node_settings(self) -> None:
        def kv(base: str, host: str, port: int) -> Dict[str, Any]:
            return conninfo_to_dict(node_settings(base, Node(host, port), None)["conninfo"])

        self.assertEqual(kv("postgres://u:p%40ss@coord:5432/db?sslmode=require", "w1", 5433),
                         {"user": "u", "password": "p@ss", "host": "w1", "port": "5433", "dbname": "db",
                          "sslmode": "require"})
        self.assertEqual(kv("postgresql://u@/db?host=%2Fsock&port=1", "10.0.0.3", 7),
                         {"user": "u", "host": "10.0.0.3", "port": "7", "dbname": "db"})
        self.assertEqual(kv("host=coord dbname=db user=app", "/run/pg", 7),
                         {"host": "/run/pg", "port": "7", "dbname": "db", "user": "app"})
        self.assertEqual(node_settings("dbname=x", Node("w", 1), lambda n: {"conninfo": "", "host": n.host}),
                         {"conninfo": "", "host": "w"})
        self.assertEqual(node_settings("dbname=x", Node("w", 1), lambda n: f"host={n.host} port={n.port}"),
                         {"conninfo": "host=w port=1"})


if __name__ == "__main__":
    unittest.main()
