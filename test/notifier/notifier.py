#!/usr/bin/python3
"""
notifier.py -- announcements on a2_events, end to end, as a listener sees them.

    notifier.py --mode notifier|in-transaction [--queue-full] [--quick]

Connects with the PG* environment (scripts/cluster.sh env) and makes its own
databases a2_ntf_1 and a2_ntf_2.  --mode says which path the server runs:
'notifier' (a2 preloaded: the background worker announces after commit) or
'in-transaction' (not preloaded: the committing transaction notifies, as in
a2 0.1).  --queue-full: the server runs with a tiny a2.notify_queue_size;
run the load checks and require that transactions fell back.

Every check prints "ok - ..." or "not ok - ..."; the exit status is 1 when
any failed.  Delivery is asynchronous with the notifier, so a check that
something was NOT announced first waits with a2_notify_wait() until the
notifier owes nothing for the transactions that have finished, then makes
the listener's backend deliver what it has (one round trip): after that,
anything owed has arrived.
"""

import argparse
import os
import select
import sys
import threading
import time

import psycopg
from psycopg import sql

failures = 0


def report(ok, label, detail=''):
    global failures
    if ok:
        print('ok - %s' % label)
    else:
        failures += 1
        print('not ok - %s%s' % (label, (': ' + detail) if detail else ''))
    sys.stdout.flush()


def connect(db, autocommit=True):
    return psycopg.connect(dbname=db, autocommit=autocommit)


class Listener:
    """A connection that LISTENs on a2_events and keeps what it hears."""

    def __init__(self, db):
        self.conn = connect(db)
        self.got = []               # (time received, sessionId, index)
        self.lock = threading.Lock()
        self.conn.add_notify_handler(self._on)
        self.conn.execute('LISTEN a2_events')

    def _on(self, n):
        import json
        p = json.loads(n.payload)
        assert set(p) == {'sessionId', 'index'}, n.payload
        with self.lock:
            self.got.append((time.time(), p['sessionId'], p['index']))

    def pump(self, timeout):
        """Wait up to timeout seconds for traffic, then take what arrived."""
        select.select([self.conn.fileno()], [], [], timeout)
        self.conn.execute('SELECT 1')

    def take(self):
        with self.lock:
            got, self.got = self.got, []
        return sorted((s, i) for _, s, i in got)


def drained(conn, listeners):
    """Everything finished transactions are owed has reached the listeners."""
    ok = conn.execute('SELECT a2_notify_wait(30000)').fetchone()[0]
    for lst in listeners:
        lst.pump(0)
    return ok


def status(conn):
    cur = conn.execute('SELECT * FROM a2_notify_status()')
    names = [d.name for d in cur.description]
    return dict(zip(names, cur.fetchone()))


def append(conn, session, n=1, ids=None):
    events = []
    for k in range(n):
        e = '{"type": "t"}' if ids is None else '{"id": "%s", "type": "t"}' % ids[k]
        events.append(e)
    r = conn.execute('SELECT a2_append(%s, %s::jsonb)', (session, '[' + ', '.join(events) + ']')).fetchone()[0]
    return r['events'][-1]['index'] if r['events'] else None


# ---------------------------------------------------------------------------
# semantics: exactly one per session per committed transaction

def check_semantics(db, mode):
    c = connect(db)
    lst = Listener(db)
    drained(c, [lst])
    lst.take()

    st = status(c)
    report(st['mode'] == mode, 'a2_notify_status() reports mode %s' % mode, repr(st))

    # one transaction: a gets 1..2 then 3, b gets 1 in a released savepoint,
    # c only in a rolled-back savepoint
    c.execute('BEGIN')
    append(c, 'sem:a', 2)
    append(c, 'sem:a', 1)
    c.execute('SAVEPOINT s1')
    append(c, 'sem:b', 1)
    c.execute('RELEASE SAVEPOINT s1')
    c.execute('SAVEPOINT s2')
    append(c, 'sem:c', 1)
    c.execute('ROLLBACK TO SAVEPOINT s2')
    c.execute('COMMIT')
    report(drained(c, [lst]), 'the notifier catches up (a2_notify_wait)')
    got = lst.take()
    report(got == [('sem:a', 3), ('sem:b', 1)],
           'one transaction: one announcement per session at its greatest index, none for a rolled-back savepoint',
           repr(got))

    c.execute('BEGIN')
    append(c, 'sem:d', 2)
    c.execute('ROLLBACK')
    drained(c, [lst])
    got = lst.take()
    report(got == [], 'a rolled-back transaction announces nothing', repr(got))

    append(c, 'sem:e', 2, ids=['sem:e1', 'sem:e2'])
    drained(c, [lst])
    first = lst.take()
    append(c, 'sem:e', 2, ids=['sem:e1', 'sem:e2'])
    drained(c, [lst])
    got = lst.take()
    report(first == [('sem:e', 2)] and got == [], 'a replay announces nothing', repr((first, got)))

    c.execute("SELECT a2_append('sem:f', '[]')")
    drained(c, [lst])
    got = lst.take()
    report(got == [], 'an empty batch announces nothing', repr(got))

    # a completion's returned events are announced like an append
    c.execute("SELECT a2_claim('sem:a', 'w', 60000)")
    c.execute('''SELECT a2_complete('sem:a', 1, 1, '[{"id": "sem:child", "type": "c"}]')''')
    c.execute("SELECT a2_complete('sem:a', 2, 1)")
    drained(c, [lst])
    got = lst.take()
    report(got == [('sem:a', 4)], 'a completion announces its children only', repr(got))

    # sequential transactions on one session: one each
    for _ in range(3):
        append(c, 'sem:g', 1)
        drained(c, [lst])
    got = lst.take()
    report(got == [('sem:g', 1), ('sem:g', 2), ('sem:g', 3)],
           'three transactions, each waited for: three announcements', repr(got))

    c.execute('SET a2.notify = off')
    report(status(c)['mode'] == 'off', 'a2.notify = off: mode off')
    append(c, 'sem:h', 1)
    c.execute('RESET a2.notify')
    drained(c, [lst])
    got = lst.take()
    report(got == [], 'a2.notify = off announces nothing', repr(got))
    c.close()
    lst.conn.close()


# ---------------------------------------------------------------------------
# two-phase commit

def check_prepared(db, mode):
    c = connect(db)
    other = connect(db)
    lst = Listener(db)
    for gid in ('a2_ntf_p1', 'a2_ntf_p2'):
        if other.execute('SELECT 1 FROM pg_prepared_xacts WHERE gid = %s', (gid,)).fetchone():
            other.execute(sql.SQL('ROLLBACK PREPARED {}').format(sql.Literal(gid)))
    drained(c, [lst])
    lst.take()

    c.execute('BEGIN')
    append(c, 'tpc:a', 2)
    if mode == 'in-transaction':
        try:
            c.execute("PREPARE TRANSACTION 'a2_ntf_p1'")
            report(False, 'without the notifier PREPARE after an append is refused (0A000)', 'it succeeded')
            other.execute("ROLLBACK PREPARED 'a2_ntf_p1'")
        except psycopg.errors.FeatureNotSupported:
            c.rollback()
            report(True, 'without the notifier PREPARE after an append is refused (0A000)')
        return

    c.execute("PREPARE TRANSACTION 'a2_ntf_p1'")
    report(True, 'PREPARE TRANSACTION after an append succeeds')
    drained(c, [lst])
    got = lst.take()
    st = status(c)
    report(got == [] and st['waiting'] >= 1,
           'a prepared transaction is not announced yet, its entry waits', repr((got, st)))
    other.execute("COMMIT PREPARED 'a2_ntf_p1'")
    drained(c, [lst])
    got = lst.take()
    report(got == [('tpc:a', 2)], 'COMMIT PREPARED from another session announces it', repr(got))
    n = other.execute("SELECT count(*) FROM a2_read('tpc:a')").fetchone()[0]
    report(n == 1, '... and the events are there')

    dropped = status(c)['dropped']
    c.execute('BEGIN')
    append(c, 'tpc:b', 1)
    c.execute("PREPARE TRANSACTION 'a2_ntf_p2'")
    other.execute("ROLLBACK PREPARED 'a2_ntf_p2'")
    drained(c, [lst])
    got = lst.take()
    st = status(c)
    report(got == [] and st['dropped'] == dropped + 1,
           'ROLLBACK PREPARED announces nothing and drops the entry', repr((got, st)))
    c.close()
    other.close()


# ---------------------------------------------------------------------------
# databases

def check_databases(db1, db2):
    c1, c2 = connect(db1), connect(db2)
    l1, l2 = Listener(db1), Listener(db2)
    drained(c1, [l1, l2])
    l1.take()
    l2.take()
    append(c1, 'db:same', 1)
    append(c2, 'db:same', 3)
    append(c2, 'db:only2', 1)
    drained(c1, [l1, l2])
    g1, g2 = l1.take(), l2.take()
    report(g1 == [('db:same', 1)] and g2 == [('db:only2', 1), ('db:same', 3)],
           "two databases: each one's listeners hear only their own sessions", repr((g1, g2)))
    for c in (c1, c2, l1.conn, l2.conn):
        c.close()


# ---------------------------------------------------------------------------
# load: visibility on receipt, nothing lost (optionally with the notifier
# terminated under it, or with a queue too small for it)

def run_load(db, writers, appends, sessions_per_txn, kill_notifier, label):
    lst = Listener(db)
    reader = connect(db)
    ctl = connect(db)
    drained(ctl, [lst])
    lst.take()
    before = status(ctl)
    stop = threading.Event()
    committed = []                  # (time after commit, session, index)
    errors = []
    invisible = []
    checked = [0]

    def writer(w):
        c = connect(db)
        k = 0
        try:
            # with the killer: go on until it has terminated the notifier
            # three times (bounded), so the kills land under load
            while k < appends or (kill_notifier and not stop.is_set() and k < 50 * appends):
                c.execute('BEGIN')
                last = []
                for s in range(sessions_per_txn):
                    # a new session every few transactions, so that many
                    # sessions have a last append that must be announced
                    session = 'load:%s:w%d:s%d' % (label, w, (k + s) // 4)
                    last.append((session, append(c, session, 1 + k % 2)))
                c.execute('COMMIT')
                t = time.time()
                committed.extend((t, s, i) for s, i in last)
                k += 1
            done_appends.append(k)
        except Exception as e:      # noqa: BLE001 -- reported below
            errors.append(repr(e))
        finally:
            c.close()

    def killer():
        pids = set()
        while len(pids) < 3 and any(t.is_alive() for t in threads):
            time.sleep(0.15)
            pid = ctl.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'a2 notifier'").fetchone()
            if pid and pid[0] not in pids:
                pids.add(pid[0])
                ctl.execute('SELECT pg_terminate_backend(%s)', (pid[0],))
        killed.extend(pids)
        time.sleep(0.3)     # some load after the last kill, too
        stop.set()

    killed = []
    done_appends = []
    threads = [threading.Thread(target=writer, args=(w,)) for w in range(writers)]
    kt = threading.Thread(target=killer) if kill_notifier else None
    for t in threads:
        t.start()
    if kt:
        kt.start()
    heard = []
    # on receipt, read at once: the announced index must be visible
    while any(t.is_alive() for t in threads):
        lst.pump(0.05)
        with lst.lock:
            batch, lst.got = lst.got, []
        for t_recv, s, i in batch:
            heard.append((t_recv, s, i))
            rows = reader.execute("SELECT a2_read(%s, %s, %s)", (s, i - 1, i)).fetchone()[0]
            checked[0] += 1
            if len(rows) != 1 or rows[0]['index'] != i:
                invisible.append((s, i))
    for t in threads:
        t.join()
    stop.set()
    if kt:
        kt.join()
    ok = drained(ctl, [lst])
    with lst.lock:
        heard.extend(lst.got)
        lst.got = []
    after = status(ctl)

    report(not errors, '%s: writers ran without errors' % label, '; '.join(errors[:3]))
    report(ok, '%s: the notifier caught up after the load' % label)
    report(not invisible and checked[0] > 0,
           '%s: a listener that reads on receipt always sees the announced index (%d reads)' % (label, checked[0]),
           repr(invisible[:5]))
    # nothing lost: every commit is covered by an announcement of that
    # session at an index at least as great (indexes only grow, so that one
    # came from this transaction or a later one)
    greatest = {}
    for _, s, i in heard:
        greatest[s] = max(greatest.get(s, 0), i)
    lost = [(s, i) for _, s, i in committed if greatest.get(s, 0) < i]
    report(not lost and len(committed) == sum(done_appends) * sessions_per_txn and len(done_appends) == writers,
           '%s: nothing lost: every one of %d committed appends was announced (at its index or a later one)'
           % (label, len(committed)), repr(lost[:5]))
    if kill_notifier:
        now_pid = ctl.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'a2 notifier'").fetchone()
        report(len(killed) >= 3 and now_pid is not None and now_pid[0] not in killed,
               '%s: the notifier was terminated %d times and came back each time' % (label, len(killed)),
               repr((killed, now_pid)))
    if before['announced'] is not None:
        report(after['announced'] > before['announced'], '%s: counters moved' % label, repr((before, after)))
    lst.conn.close()
    reader.close()
    ctl.close()
    return before, after


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--mode', required=True, choices=['notifier', 'in-transaction'])
    ap.add_argument('--queue-full', action='store_true')
    ap.add_argument('--quick', action='store_true')
    args = ap.parse_args()

    admin = connect('postgres')
    for db in ('a2_ntf_1', 'a2_ntf_2'):
        admin.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(db)))
        admin.execute(sql.SQL('CREATE DATABASE {}').format(sql.Identifier(db)))
        with connect(db) as c:
            c.execute('CREATE EXTENSION a2')
    admin.close()

    appends = 60 if args.quick else 250
    if args.queue_full:
        before, after = run_load('a2_ntf_1', 4, appends, 3, False, 'queue full')
        report(after['queue_size'] <= 4 and after['fallbacks'] > before['fallbacks'],
               'queue full: transactions that found no room fell back (%s fallbacks)'
               % (after['fallbacks'] - before['fallbacks']), repr(after))
    else:
        check_semantics('a2_ntf_1', args.mode)
        check_prepared('a2_ntf_1', args.mode)
        check_databases('a2_ntf_1', 'a2_ntf_2')
        run_load('a2_ntf_1', 4, appends, 1, False, 'load')
        run_load('a2_ntf_1', 4, appends, 2, False, 'load, two sessions per transaction')
        if args.mode == 'notifier':
            run_load('a2_ntf_1', 4, appends, 1, True, 'notifier terminated under load')

    admin = connect('postgres')
    for db in ('a2_ntf_1', 'a2_ntf_2'):
        admin.execute(sql.SQL('DROP DATABASE IF EXISTS {} WITH (FORCE)').format(sql.Identifier(db)))
    admin.close()
    print('notifier (%s%s): %d failed' % (args.mode, ', queue full' if args.queue_full else '', failures))
    return 1 if failures else 0


if __name__ == '__main__':
    sys.exit(main())
