"""examples/worker.py, run as a user would, in a fresh database: it must
ship the four good demo orders and dead-letter the bad one after three
attempts (what test/suites/80-node-client.sh checks of the Node example).
"""

from __future__ import annotations

import os
import subprocess
import sys
import unittest

from . import helpers as h
from a2_client import A2Store

DB = "a2_py_example"
WORKER = h.ROOT / "examples" / "worker.py"


class ExampleTest(unittest.TestCase):
    def setUp(self) -> None:
        h.fresh_database(DB)

    def tearDown(self) -> None:
        h.drop_database(DB)

    def test_the_worker_ships_four_orders_and_dead_letters_one(self) -> None:
        # The example finds the package itself (PYTHONPATH is kept for psycopg).
        env = dict(os.environ, A2_DATABASE_URL=h.target(DB), A2_LISTEN_URL=h.direct(DB))
        done = subprocess.run([sys.executable, str(WORKER)], env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        lines = done.stdout.splitlines()
        self.assertEqual(lines[0], "appended #1..#5 to order-42")
        self.assertIn("shipments of order-42: 2 tea, 6 cups, 1 sugar, 4 spoons", lines)
        self.assertIn("#3 order.placed: failed (1/3): order 3 has no item or quantity", lines)
        self.assertIn("#3 order.placed: dead_lettered (3/3): order 3 has no item or quantity", lines)
        self.assertEqual(sum(line.endswith(": completed") for line in lines), 4)
        with A2Store(h.direct(DB)) as store:
            log = store.read("order-42")
        self.assertEqual([e.type for e in log], ["order.placed"] * 5 + ["order.shipped"] * 4)
        self.assertEqual([e.index for e in log if e.failed_at is not None], [3])
        self.assertTrue(all(e.processed_at is not None for e in log if e.index != 3))


if __name__ == "__main__":
    unittest.main()
