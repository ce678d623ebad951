#!/usr/bin/env python3
"""W10: a scheduled workload (issue 17).

N events fall due uniformly over D seconds, each its own session.  They are
appended before the first falls due (A appender connections in parallel,
1,000 a2_append calls per statement, one transaction each); the schedule
starts LEAD seconds after the append began, so the append must finish
first (the run stops with an error otherwise).  W worker processes then
process them, each in this loop:

  1. SELECT a2_claim_next(holder, 60000, BATCH): one transaction, one round
     trip; claims every due event of up to BATCH sessions
  2. if it claimed anything: complete all the claimed events in one
     statement, SELECT count(a2_complete(s, i, a)) FROM unnest(...): one
     transaction, one round trip; back to 1
  3. if it claimed nothing, sleep:
       announce  on LISTEN a2_events (the scheduler's due announcements)
                 until a notification or claim_next's retryAt (the next due
                 time), at most 5 s
       poll      1 s

The workers start IDLE seconds before the first event falls due; that
phase measures the CPU of waiting with nothing due.  They stop when every
event is processed or GRACE seconds after the last due time.

Reported per mode (one JSON line): events processed, the time from the
first due time to the last completion and the rate over it, lateness (claim
time minus notBefore) p50/p99/max, CPU seconds of the workers' server
backends, of the worker (client) processes and of the server's background
processes (notifier, scheduler, autovacuum, checkpointer, ...), for the
idle phase and for the run; round trips of the workers.

Usage: w10.py --mode announce|poll [--events N] [--seconds D] [--workers W]
              [--batch B] [--lead S] [--idle S] [--grace S] [--appenders A]
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
TICK = os.sysconf('SC_CLK_TCK')


def epoch(iso_z):
    return datetime.datetime.fromisoformat(iso_z.replace('Z', '+00:00')).timestamp()


def proc_cpu(pid):
    """utime + stime of a process in seconds."""
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def background_cpu(admin):
    """CPU seconds so far of each of the server's background processes,
    {pid: (backend_type, seconds)}."""
    total = {}
    for pid, kind in admin.execute(
            "SELECT pid, backend_type FROM pg_stat_activity WHERE backend_type <> 'client backend'").fetchall():
        try:
            total[pid] = (kind, proc_cpu(pid))
        except OSError:
            pass
    return total


def bg_delta(a, b):
    """CPU per backend type between two background_cpu() samples (a process
    that started in between counts from 0)."""
    out = {}
    for pid, (kind, c) in b.items():
        out[kind] = out.get(kind, 0.0) + c - (a[pid][1] if pid in a else 0.0)
    return out


def appender(part, parts, n, t0, seconds, q):
    conn = psycopg.connect(dbname=DB, autocommit=True)
    conn.execute('SET synchronous_commit = off')  # setup, not measured
    batch = 1000
    mine = list(range(part * batch, n, parts * batch))
    for start in mine:
        conn.execute(
            "SELECT count(a2_append('w10-' || i, jsonb_build_array(jsonb_build_object("
            " 'type', 'due', 'notBefore', to_char(to_timestamp(%s::float8 + (i::float8 / %s) * %s::float8) AT TIME ZONE 'UTC',"
            "   'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')))))"
            " FROM generate_series(%s::int, %s::int) i",
            [t0, n, seconds, start, min(start + batch, n) - 1])
    conn.close()
    q.put(part)


def worker(mode, batch, n, t0, end_at, done, out, wid):
    conn = psycopg.connect(dbname=DB, autocommit=True)
    backend = conn.execute('SELECT pg_backend_pid()').fetchone()[0]
    if mode == 'announce':
        conn.execute('LISTEN a2_events')
    out.put(('pids', wid, os.getpid(), backend))
    late = []
    holder = 'w%d' % wid
    # round trips before the first due time (idle) and after it (run)
    counts = {ph: {'claim_next': 0, 'empty': 0, 'complete_statements': 0, 'sleeps': 0} for ph in ('idle', 'run')}
    last_done = None
    while time.time() < end_at and done.value < n:
        k = counts['idle' if time.time() < t0 else 'run']
        r = conn.execute('SELECT a2_claim_next(%s, 60000, %s)', [holder, batch]).fetchone()[0]
        k['claim_next'] += 1
        now = time.time()
        sessions, indexes, attempts = [], [], []
        for c in r['claims']:
            for e in c['events']:
                nb = e.get('notBefore')
                if nb:
                    late.append(now - epoch(nb))
                sessions.append(c['sessionId'])
                indexes.append(e['index'])
                attempts.append(e['attemptCount'])
        if sessions:
            conn.execute('SELECT count(a2_complete(s, i, a))'
                         '  FROM unnest(%s::text[], %s::bigint[], %s::int[]) AS t(s, i, a)',
                         [sessions, indexes, attempts])
            k['complete_statements'] += 1
            last_done = time.time()
            with done.get_lock():
                done.value += len(sessions)
            continue
        k['empty'] += 1
        left = end_at - time.time()
        if left <= 0:
            break
        if mode == 'poll':
            time.sleep(min(1.0, left))
            k['sleeps'] += 1
            continue
        # announce: sleep until a notification or the retryAt
        timeout = 5.0
        if r.get('retryAt'):
            timeout = max(0.0, min(timeout, epoch(r['retryAt']) - time.time()))
        select.select([conn.fileno()], [], [], min(timeout, left))
        k['sleeps'] += 1
        conn.execute('SELECT 1')  # takes what arrived
    t = os.times()
    out.put(('result', wid, late, proc_cpu(backend), t.user + t.system,
             counts,
             last_done))
    conn.close()


def main():
    p = argparse.ArgumentParser()
    p.add_argument('--mode', choices=['announce', 'poll'], required=True)
    p.add_argument('--events', type=int, default=100000)
    p.add_argument('--seconds', type=float, default=60)
    p.add_argument('--workers', type=int, default=4)
    p.add_argument('--batch', type=int, default=100, help='max_sessions of a2_claim_next')
    p.add_argument('--lead', type=float, default=None,
                   help="seconds from the start of the append to the first due time [idle + 15 + events/2000]")
    p.add_argument('--idle', type=float, default=30, help='seconds the workers wait before the first due time')
    p.add_argument('--grace', type=float, default=5, help='seconds after the last due time before the workers stop')
    p.add_argument('--appenders', type=int, default=2)
    a = p.parse_args()
    lead = a.lead if a.lead is not None else a.idle + 15 + a.events / 2000

    admin = psycopg.connect(dbname='postgres', autocommit=True)
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    admin.execute('CREATE DATABASE %s' % DB)
    app = psycopg.connect(dbname=DB, autocommit=True)
    app.execute('CREATE EXTENSION a2')
    begin = time.time()
    t0 = begin + lead
    q = mp.Queue()
    aps = [mp.Process(target=appender, args=(i, a.appenders, a.events, t0, a.seconds, q))
           for i in range(a.appenders)]
    for pr in aps:
        pr.start()
    for pr in aps:
        pr.join()
        if pr.exitcode != 0:
            raise SystemExit('an appender failed')
    append_s = time.time() - begin
    app.execute('VACUUM ANALYZE a2_events')
    app.execute('CHECKPOINT')
    if time.time() > t0 - a.idle - 1:
        raise SystemExit('appending took %.1f s, longer than the %.0f s lead minus the idle phase' % (append_s, lead))
    time.sleep(max(0.0, t0 - a.idle - time.time()))

    end_at = t0 + a.seconds + a.grace
    done = mp.Value('l', 0)
    out = mp.Queue()
    procs = [mp.Process(target=worker, args=(a.mode, a.batch, a.events, t0, end_at, done, out, w))
             for w in range(a.workers)]
    for pr in procs:
        pr.start()
    pids = {}
    while len(pids) < a.workers:
        _, wid, cpid, bpid = out.get()
        pids[wid] = (cpid, bpid)
    start = {w: (proc_cpu(c), proc_cpu(b)) for w, (c, b) in pids.items()}
    bg_start = background_cpu(admin)
    time.sleep(max(0.0, t0 - time.time()))
    at_t0 = {w: (proc_cpu(c), proc_cpu(b)) for w, (c, b) in pids.items()}
    bg_t0 = background_cpu(admin)
    results = [out.get() for _ in procs]
    for pr in procs:
        pr.join()
    bg_end = background_cpu(admin)

    late = sorted(x for r in results for x in r[2])
    run_backend = sum(r[3] - at_t0[r[1]][1] for r in results)
    run_client = sum(r[4] - at_t0[r[1]][0] for r in results)
    idle_backend = sum(at_t0[w][1] - start[w][1] for w in pids)
    idle_client = sum(at_t0[w][0] - start[w][0] for w in pids)
    bg_idle = bg_delta(bg_start, bg_t0)
    bg_run = bg_delta(bg_t0, bg_end)
    counts = {}
    for r in results:
        for ph, kv in r[5].items():
            for k, v in kv.items():
                counts.setdefault(ph, {})[k] = counts.get(ph, {}).get(k, 0) + v
    last = max((r[6] for r in results if r[6]), default=None)
    processed = app.execute('SELECT count(*) FROM a2_events WHERE processed_at IS NOT NULL').fetchone()[0]
    q = statistics.quantiles(late, n=100) if len(late) > 1 else [0] * 99
    span = (last - t0) if last else None
    print(json.dumps({
        'mode': a.mode, 'events': a.events, 'seconds': a.seconds, 'workers': a.workers, 'batch': a.batch,
        'append_s': round(append_s, 1), 'lead_s': lead,
        'processed': processed, 'first_due_to_last_done_s': round(span, 2) if span else None,
        'events_per_s': round(processed / span, 1) if span else None,
        'lateness_p50_ms': round(q[49] * 1000, 1), 'lateness_p99_ms': round(q[98] * 1000, 1),
        'lateness_max_ms': round(late[-1] * 1000, 1) if late else None,
        'run_worker_backends_cpu_s': round(run_backend, 2), 'run_client_cpu_s': round(run_client, 2),
        'run_background_cpu_s': round(sum(bg_run.values()), 2),
        'run_background_by_type': {k: round(v, 2) for k, v in sorted(bg_run.items()) if v >= 0.01},
        'idle_s': a.idle, 'idle_worker_backends_cpu_s': round(idle_backend, 3),
        'idle_client_cpu_s': round(idle_client, 3), 'idle_background_cpu_s': round(sum(bg_idle.values()), 3),
        'round_trips': counts,
        'load_avg': open('/proc/loadavg').read().split()[:3]}))
    app.close()
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)


if __name__ == '__main__':
    main()
