#!/usr/bin/env python3
"""W10: a scheduled workload (issue 17).

N events fall due uniformly over D seconds (each its own session, appended
in batches before the first is due).  W workers process them with
a2_claim_next + a2_complete, in one of two modes:

  announce  each worker LISTENs on a2_events and sleeps until an
            announcement (the scheduler's due announcement) or claim_next's
            retryAt, whichever comes first
  poll      each worker sleeps 1 s whenever claim_next finds nothing

Reported per mode: events per second over the run, lateness (claim time
minus notBefore) p50/p99/max, and CPU seconds the workers' server backends
used (from /proc: the idle cost of waking up) plus the client processes'.

Usage: w10.py --mode announce|poll [--events N] [--seconds D] [--workers W]
(PG* environment names the cluster; the database a2_w10 is recreated.)
"""
import argparse
import datetime
import json
import multiprocessing as mp
import os
import select
import statistics
import time

import psycopg

DB = 'a2_w10'


def iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%03dZ' % (int(t * 1000) % 1000)


def epoch(iso_z):
    return datetime.datetime.fromisoformat(iso_z.replace('Z', '+00:00')).timestamp()


def background_cpu(admin):
    """CPU seconds so far of the server's background processes (notifier,
    scheduler launcher and schedulers, autovacuum launcher, ...)."""
    pids = [r[0] for r in admin.execute(
        "SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'").fetchall()]
    total = {}
    for pid in pids:
        try:
            total[pid] = proc_cpu(pid)
        except OSError:
            pass
    return total


def proc_cpu(pid):
    """utime + stime of a process in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def worker(mode, end_at, out, wid):
    conn = psycopg.connect(dbname=DB, autocommit=True)
    backend = conn.execute('SELECT pg_backend_pid()').fetchone()[0]
    cpu0 = proc_cpu(backend)
    if mode == 'announce':
        conn.execute('LISTEN a2_events')
    late = []
    holder = 'w%d' % wid
    while time.time() < end_at:
        r = conn.execute('SELECT a2_claim_next(%s, 60000, 20)', [holder]).fetchone()[0]
        now = time.time()
        for c in r['claims']:
            for e in c['events']:
                nb = e.get('notBefore')
                if nb:
                    late.append(now - epoch(nb))
                conn.execute('SELECT a2_complete(%s, %s, %s)', [c['sessionId'], e['index'], e['attemptCount']])
        if r['claims']:
            continue
        if mode == 'poll':
            time.sleep(1.0)
            continue
        # announce: sleep until a notification or the retryAt
        timeout = 5.0
        if r.get('retryAt'):
            timeout = max(0.0, min(timeout, epoch(r['retryAt']) - time.time()))
        select.select([conn.fileno()], [], [], min(timeout, max(0.0, end_at - time.time())))
        conn.execute('SELECT 1')  # takes what arrived
    cpu1 = proc_cpu(backend)
    out.put((late, cpu1 - cpu0))
    conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--mode', choices=['announce', 'poll'], required=True)
    p.add_argument('--events', type=int, default=100000)
    p.add_argument('--seconds', type=float, default=60)
    p.add_argument('--workers', type=int, default=4)
    a = p.parse_args()

    admin = psycopg.connect(dbname='postgres', autocommit=True)
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    admin.execute('CREATE DATABASE %s' % DB)
    app = psycopg.connect(dbname=DB, autocommit=True)
    app.execute('CREATE EXTENSION a2')
    lead = 15.0
    t0 = time.time() + lead
    batch = 1000
    for start in range(0, a.events, batch):
        app.execute(
            "SELECT count(a2_append('w10-' || i, jsonb_build_array(jsonb_build_object("
            " 'type', 'due', 'notBefore', to_char(to_timestamp(%s::float8 + (i::float8 / %s) * %s::float8) AT TIME ZONE 'UTC',"
            "   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')))))"
            " FROM generate_series(%s::int, %s::int) i",
            [t0, a.events, a.seconds, start, min(start + batch, a.events) - 1])
    if time.time() > t0:
        raise SystemExit('appending took longer than the %.0f s lead' % lead)
    app.execute('VACUUM ANALYZE a2_events')

    end_at = t0 + a.seconds + 5
    bg0 = background_cpu(admin)
    out = mp.Queue()
    cpu_client0 = os.times()
    procs = [mp.Process(target=worker, args=(a.mode, end_at, out, w)) for w in range(a.workers)]
    for pr in procs:
        pr.start()
    results = [out.get() for _ in procs]
    for pr in procs:
        pr.join()
    cpu_client = os.times()
    bg1 = background_cpu(admin)
    bg_cpu = sum(c - bg0.get(pid, 0.0) for pid, c in bg1.items())
    late = sorted(x for r, _ in results for x in r)
    server_cpu = sum(c for _, c in results)
    client_cpu = (cpu_client.children_user + cpu_client.children_system
                  - cpu_client0.children_user - cpu_client0.children_system)
    done = app.execute('SELECT count(*) FROM a2_events WHERE processed_at IS NOT NULL').fetchone()[0]
    q = statistics.quantiles(late, n=100) if len(late) > 1 else [0] * 99
    print(json.dumps({
        'mode': a.mode, 'events': a.events, 'seconds': a.seconds, 'workers': a.workers,
        'processed': done, 'events_per_s': round(done / a.seconds, 1),
        'lateness_p50_ms': round(q[49] * 1000, 1), 'lateness_p99_ms': round(q[98] * 1000, 1),
        'lateness_max_ms': round(late[-1] * 1000, 1) if late else None,
        'worker_backends_cpu_s': round(server_cpu, 2), 'background_cpu_s': round(bg_cpu, 2),
        'client_cpu_s': round(client_cpu, 2)}))
    app.close()
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)


if __name__ == '__main__':
    main()
