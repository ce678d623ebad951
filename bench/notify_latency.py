#!/usr/bin/python3
"""
notify_latency.py -- time from commit to delivery at a listener.

    notify_latency.py DBNAME WRITERS SECONDS

WRITERS processes append one event per transaction (autocommit) to their
own session for SECONDS seconds, recording for every append the wall-clock
time at which its COMMIT returned.  One listener process LISTENs on
a2_events and records when each announcement arrived.  The latency of an
append is the arrival of the first announcement of its session at an
index >= its own, minus its commit time (clamped at 0: an announcement can
beat the writer's clock reading by a few microseconds).  Prints one line:

    writers=4 appends=12345 announced=12345 p50_ms=0.61 p99_ms=2.10 max_ms=5.3 unannounced=0

Connection settings come from the PG* environment.  Uses Debian's
python3-psycopg.
"""

import json
import multiprocessing as mp
import select
import sys
import time

import psycopg


def writer(db, w, seconds, start, out):
    conn = psycopg.connect(dbname=db, autocommit=True)
    session = 'lat:%d:%d' % (int(start * 1000), w)
    rows = []
    while time.time() < start:
        time.sleep(0.001)
    end = start + seconds
    while time.time() < end:
        r = conn.execute("SELECT a2_append(%s, '[{\"type\": \"lat\"}]')", (session,)).fetchone()[0]
        rows.append((r['events'][0]['index'], time.time()))
    conn.close()
    out.put((session, rows))


def listener(db, stop_at, ready, out):
    conn = psycopg.connect(dbname=db, autocommit=True)
    got = []
    conn.add_notify_handler(lambda n: got.append((time.time(), n.payload)))
    conn.execute('LISTEN a2_events')
    ready.set()
    while time.time() < stop_at:
        select.select([conn.fileno()], [], [], 0.05)
        conn.execute('SELECT 1')
    out.put([(t, json.loads(p)) for t, p in got])
    conn.close()


def main():
    db, writers, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    ctx = mp.get_context('fork')
    q_w, q_l = ctx.Queue(), ctx.Queue()
    ready = ctx.Event()
    start = time.time() + 1.0
    lp = ctx.Process(target=listener, args=(db, start + seconds + 3.0, ready, q_l))
    lp.start()
    ready.wait(10)
    ws = [ctx.Process(target=writer, args=(db, w, seconds, start, q_w)) for w in range(writers)]
    for p in ws:
        p.start()
    results = [q_w.get() for _ in ws]
    heard = q_l.get()
    for p in ws + [lp]:
        p.join()

    by_session = {}
    for t, p in heard:
        by_session.setdefault(p['sessionId'], []).append((p['index'], t))
    lat = []
    missing = 0
    appends = 0
    for session, rows in results:
        notes = sorted(by_session.get(session, []), key=lambda x: x[1])
        for idx, t_commit in rows:
            appends += 1
            # the first announcement covering idx: indexes only grow, so
            # one at idx or above comes from this commit or a later one
            found = None
            for j in range(len(notes)):
                if notes[j][0] >= idx:
                    found = notes[j][1]
                    break
            if found is None:
                missing += 1
            else:
                lat.append(max(0.0, found - t_commit) * 1000.0)
    lat.sort()

    def pct(p):
        return lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float('nan')
    print('writers=%d appends=%d announcements=%d p50_ms=%.2f p99_ms=%.2f max_ms=%.2f unannounced=%d'
          % (writers, appends, len(heard), pct(0.50), pct(0.99), lat[-1] if lat else float('nan'), missing))


if __name__ == '__main__':
    main()
