#!/usr/bin/python3
"""
notify_fanout.py -- what idle listeners cost, on a2's channel or another.

    notify_fanout.py DBNAME LISTENERS CHANNEL -- PGBENCH ARGS...

LISTENERS processes each LISTEN on CHANNEL and drain whatever arrives
(libpq's consume_input and notifies: no query of their own).  Once all
listen, the pgbench command runs (W1 through the background notifier, which
announces on channel a2_events).  Prints one line:

    channel=a2_events listeners=16 tps=812.3 heard_per_listener=8123 listener_cpu_ms_per_s=41.2

tps is pgbench's (without initial connection time); heard_per_listener
the mean number of notifications a listener received; listener_cpu the
user+system CPU time of the listeners' server backends (/proc/PID/stat of
pg_backend_pid(), so the script must run beside the server) over the
pgbench run, per second of it.  Until PostgreSQL 19 a commit that sent a
NOTIFY signals every listening backend of the cluster whatever its
channels; 19 signals only the backends listening on the channels notified
(and moves the others' queue positions itself), so listeners on another
channel should cost the a2 workload nothing there.

Connection settings come from the PG* environment.  Uses Debian's
python3-psycopg.
"""

import multiprocessing as mp
import os
import re
import select
import subprocess
import sys
import time

import psycopg
from psycopg import sql

TICKS = os.sysconf('SC_CLK_TCK')


def cpu_ticks(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime, stime


def listener(db, channel, ready, stop, out):
    conn = psycopg.connect(dbname=db, autocommit=True)
    pid = conn.execute('SELECT pg_backend_pid()').fetchone()[0]
    conn.execute('LISTEN %s' % sql.Identifier(channel).as_string(conn))
    ready.put(pid)
    pq = conn.pgconn
    heard = 0
    while not stop.is_set():
        r, _, _ = select.select([pq.socket], [], [], 0.1)
        if r:
            pq.consume_input()
            while pq.notifies() is not None:
                heard += 1
    out.put(heard)
    conn.close()


def main():
    if len(sys.argv) < 5 or sys.argv[4] != '--':
        sys.exit(__doc__)
    db, n, channel = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    cmd = sys.argv[5:]
    ctx = mp.get_context('fork')
    ready, out, stop = ctx.Queue(), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=listener, args=(db, channel, ready, stop, out)) for _ in range(n)]
    for p in procs:
        p.start()
    pids = [ready.get(timeout=30) for _ in procs]
    before = sum(cpu_ticks(p) for p in pids)
    t0 = time.time()
    run = subprocess.run(cmd, check=True, capture_output=True, text=True)
    secs = time.time() - t0
    after = sum(cpu_ticks(p) for p in pids)
    time.sleep(0.5)  # let the listeners read the last announcements
    stop.set()
    heard = [out.get(timeout=30) for _ in procs]
    for p in procs:
        p.join()
    m = re.search(r'^tps = ([0-9.]+) \(without initial connection time\)', run.stdout, re.M)
    tps = float(m.group(1)) if m else float('nan')
    print('channel=%s listeners=%d tps=%.1f heard_per_listener=%.0f listener_cpu_ms_per_s=%.1f'
          % (channel, n, tps, sum(heard) / n if n else 0,
             (after - before) * 1000.0 / TICKS / secs if n else 0))


if __name__ == '__main__':
    main()
