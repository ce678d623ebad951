#!/usr/bin/env python3
"""Due announcements (SPEC 7.1), as a listener hears them.

With a2 preloaded, an event whose notBefore was in the future at commit is
announced again ({"sessionId", "index"}) once it is due, within 1 s of its
notBefore on the wall clock; not for an event completed or dropped before
it fell due; and after a restart of its database's scheduler or of the
whole server.

"Not announced" is checked deterministically: a sentinel event scheduled
after the one that must stay silent is announced only once the scheduler
has passed the silent one's due time (it announces in due-time order).

Usage: due.py [--server-restart CMD]   (PG* environment names the cluster;
CMD restarts it, e.g. "bash scripts/cluster.sh restart")
"""
import argparse
import json
import os
import select
import subprocess
import sys
import time

import psycopg

DB = 'a2_due'
LATE_S = 1.0            # SPEC 7.1: within 1 s of notBefore
failures = 0


def report(ok, label, detail=''):
    global failures
    print('%s - %s%s' % ('ok' if ok else 'not ok', label, '' if ok else ': ' + detail))
    if not ok:
        failures += 1


def iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%03dZ' % (int(t * 1000) % 1000)


class Listener:
    def __init__(self):
        self.got = []           # (time received, sessionId, index)
        self.connect()

    def connect(self):
        self.conn = psycopg.connect(dbname=DB, autocommit=True)
        self.conn.add_notify_handler(
            lambda n: self.got.append((time.time(),) + tuple(json.loads(n.payload)[k] for k in ('sessionId', 'index'))))
        self.conn.execute('LISTEN a2_events')

    def pump_until(self, pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if pred():
                return True
            select.select([self.conn.fileno()], [], [], 0.05)
            self.conn.execute('SELECT 1')
        return pred()

    def heard(self, sid, after=0.0):
        return [(t, i) for t, s, i in self.got if s == sid and t >= after]


def connect():
    return psycopg.connect(dbname=DB, autocommit=True)


def append(app, sid, events):
    return app.execute('SELECT a2_append(%s, %s::jsonb)', [sid, json.dumps(events)]).fetchone()[0]


def run(args):
    tag = str(os.getpid())
    admin = psycopg.connect(dbname='postgres', autocommit=True)
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    admin.execute('CREATE DATABASE %s' % DB)
    app = connect()
    app.execute('CREATE EXTENSION a2')
    lst = Listener()

    # 1. on time: 12 events in 6 sessions, due 1.5..2.6 s from now
    t0 = time.time()
    due = {}
    for k in range(6):
        sid = 'due-%s-%d' % (tag, k)
        t1, t2 = t0 + 1.5 + 0.2 * k, t0 + 1.6 + 0.2 * k
        append(app, sid, [{'type': 'a', 'notBefore': iso(t1)}, {'type': 'b', 'notBefore': iso(t2)}])
        due[(sid, 1)] = int(t1 * 1000) / 1000.0
        due[(sid, 2)] = int(t2 * 1000) / 1000.0
    after_commit = time.time() + 0.3   # the commits' own announcements come before this
    lst.pump_until(lambda: all(any(i == x for _, i in lst.heard(s, after_commit)) for s, x in due), 6)
    late, early, missing, dup = [], [], [], []
    for (sid, idx), t_due in due.items():
        hits = [t for t, i in lst.heard(sid, after_commit) if i == idx]
        if not hits:
            missing.append((sid, idx))
            continue
        if len(hits) > 1:
            dup.append((sid, idx))
        if hits[0] < t_due - 0.005:
            early.append((sid, idx, round(hits[0] - t_due, 3)))
        if hits[0] > t_due + LATE_S:
            late.append((sid, idx, round(hits[0] - t_due, 3)))
    lateness = sorted(round(min(t for t, i in lst.heard(s, after_commit) if i == x) - d, 3)
                      for (s, x), d in due.items() if (s, x) not in missing)
    report(not missing, '12 scheduled events are each announced when due', repr(missing))
    report(not early, 'none is announced before its notBefore', repr(early))
    report(not late, 'each within %.0f s of its notBefore (lateness %s)' % (LATE_S, lateness), repr(late))
    report(not dup, 'each due announcement comes once', repr(dup))

    # 2. completed (store clock ahead) and dropped before they fell due: silent
    t0 = time.time()
    done_sid, drop_sid, sentinel = 'due-%s-done' % tag, 'due-%s-drop' % tag, 'due-%s-sentinel' % tag
    append(app, done_sid, [{'type': 'x', 'notBefore': iso(t0 + 1.5)}])
    append(app, drop_sid, [{'type': 'x', 'notBefore': iso(t0 + 1.5)}])
    append(app, sentinel, [{'type': 'x', 'notBefore': iso(t0 + 2.0)}])
    with app.transaction():
        app.execute("SELECT set_config('a2.now', %s, true)", [iso(t0 + 60)])
        c = app.execute("SELECT a2_claim(%s, 'w', 60000)", [done_sid]).fetchone()[0]
        app.execute('SELECT a2_complete(%s, 1, 1)', [done_sid])
    app.execute('SELECT a2_drop_session(%s, true)', [drop_sid])
    report(c.get('outcome') == 'claimed', 'a worker ahead on the store clock completes one before it falls due', repr(c))
    after_commit = time.time() + 0.3
    heard_sentinel = lst.pump_until(lambda: lst.heard(sentinel, after_commit), 6)
    report(heard_sentinel, 'the sentinel due after them is announced')
    report(not lst.heard(done_sid, after_commit), 'an event completed before it fell due is not announced',
           repr(lst.heard(done_sid, after_commit)))
    report(not lst.heard(drop_sid, after_commit), 'an event dropped before it fell due is not announced',
           repr(lst.heard(drop_sid, after_commit)))

    # 3. a failed attempt with backoff is announced when the backoff ends
    bo = 'due-%s-backoff' % tag
    append(app, bo, [{'type': 'x'}])
    app.execute("SELECT a2_claim(%s, 'w', 60000)", [bo])
    t_fail = time.time()
    app.execute("SELECT a2_fail(%s, 1, 1, 'busy', 5, 1500)", [bo])
    mark = time.time() + 0.3
    lst.pump_until(lambda: lst.heard(bo, mark), 5)
    hits = lst.heard(bo, mark)
    report(bool(hits) and t_fail + 1.5 - 0.05 <= hits[0][0] <= t_fail + 1.5 + LATE_S,
           'a backoff (retry_after_ms 1500) is announced when it ends',
           repr([round(t - t_fail, 3) for t, _ in hits]))

    # 4. the database's scheduler is terminated before the event falls due
    wr = 'due-%s-worker-restart' % tag
    t_due = time.time() + 2.5
    append(app, wr, [{'type': 'x', 'notBefore': iso(t_due)}])
    # the commit woke the launcher, which starts the scheduler: wait for it
    n = 0
    for _ in range(100):
        n = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                          " WHERE backend_type = 'a2 scheduler' AND datname = %s", [DB]).fetchone()[0]
        if n:
            break
        time.sleep(0.02)
    report(n == 1, "the database's scheduler was running and is terminated", 'terminated %d' % n)
    mark = time.time() + 0.3
    lst.pump_until(lambda: lst.heard(wr, mark), 6)
    hits = lst.heard(wr, mark)
    report(bool(hits) and hits[0][0] <= t_due + LATE_S,
           'after a scheduler restart the event is announced on time',
           repr([round(t - t_due, 3) for t, _ in hits]))

    # 5. the server restarts before the event falls due
    if args.server_restart:
        sr = 'due-%s-server-restart' % tag
        t_due = time.time() + 8
        append(app, sr, [{'type': 'x', 'notBefore': iso(t_due)}])
        app.close()
        lst.conn.close()
        admin.close()
        subprocess.run(args.server_restart, shell=True, check=True, stdout=subprocess.DEVNULL)
        lst.connect()
        report(time.time() < t_due, 'the server was back before the event fell due',
               'back %.1f s after' % (time.time() - t_due))
        lst.pump_until(lambda: lst.heard(sr), 12)
        hits = lst.heard(sr)
        report(bool(hits) and t_due - 0.005 <= hits[0][0] <= t_due + LATE_S,
               'after a server restart the event is announced on time',
               repr([round(t - t_due, 3) for t, _ in hits]))
        admin = psycopg.connect(dbname='postgres', autocommit=True)

    lst.conn.close()
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % DB)
    print('due announcements: %d failed' % failures)
    return 1 if failures else 0


if __name__ == '__main__':
    p = argparse.ArgumentParser()
    p.add_argument('--server-restart', help='shell command that restarts the server')
    sys.exit(run(p.parse_args()))
