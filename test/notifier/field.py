#!/usr/bin/python3
"""
field.py -- the notifier under field conditions, on a private cluster.

    field.py xids | restart | faults

The cluster is the one scripts/cluster.sh manages with the A2_PGDATA and
A2_PGPORT of the environment (the suite scripts make a throwaway one); this
script stops, restarts, crashes and pg_resetwal's it.  Run as root (or the
postgres user): it edits the data directory.

  xids     long uptime: transaction ids near and past 2^31 and 2^32
           (pg_resetwal -x on the cluster, with the pg_xact segment it needs
           zero-filled, and VACUUM FREEZE of every database between jumps),
           prepared transactions in flight across both boundaries, across
           restarts and across a billion xids; the worker's RecentXmin made
           2^31 stale with gdb (when gdb can attach); an entry whose clog was
           truncated while a2 was not preloaded.
  restart  prepared transactions decided after a clean restart and after a
           crash (kill -9 of the postmaster), heard by a listener that
           reconnected; durable records that do not fit the queue; a corrupt
           record.
  faults   pg_cancel_backend while idle and while a send waits (an ERROR
           inside the worker's transaction), pg_terminate_backend, SIGHUP
           with a changed setting, a listener that never reads, bad values
           of a2.notify_queue_size.  With A2_NOTIFY_FILL=1 also PostgreSQL's
           notification queue filled to the brim (8 GB, a few minutes).

Every check prints "ok - ..." or "not ok - ..."; the last line is
"N passed, N failed"; the exit status is 1 when any failed.
"""

import os
import pwd
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import notifier as base                     # noqa: E402  Listener, drained, status, append

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
passed = 0
failed = 0


def report(ok, label, detail=''):
    global passed, failed
    if ok:
        passed += 1
        print('ok - %s' % label)
    else:
        failed += 1
        print('not ok - %s%s' % (label, (': ' + detail) if detail else ''))
    sys.stdout.flush()


def connect(db, autocommit=True):
    return psycopg.connect(dbname=db, autocommit=autocommit)


def one(conn, q, args=None):
    return conn.execute(q, args).fetchone()[0]


class Cluster:
    def __init__(self):
        self.data = os.environ['A2_PGDATA']
        self.log = os.path.join(os.path.dirname(self.data), 'log')
        pg_config = os.environ.get('PG_CONFIG', '/usr/lib/postgresql/15/bin/pg_config')
        self.bindir = subprocess.check_output([pg_config, '--bindir'], text=True).strip()
        self.pg = pwd.getpwnam('postgres')

    def _script(self, cmd, preload=True, queue_size=None):
        env = dict(os.environ, A2_PRELOAD='1' if preload else '0')
        env.pop('A2_NOTIFY_QUEUE_SIZE', None)
        if queue_size is not None:
            env['A2_NOTIFY_QUEUE_SIZE'] = str(queue_size)
        subprocess.run(['bash', os.path.join(ROOT, 'scripts', 'cluster.sh'), cmd], env=env,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def start(self, preload=True, queue_size=None):
        self._script('start', preload, queue_size)

    def stop(self):
        self._script('stop')

    def as_postgres(self, *args, check=True):
        return subprocess.run(['runuser', '-u', 'postgres', '--', *args], cwd='/', text=True,
                              capture_output=True, check=check)

    def kill9(self):
        with open(os.path.join(self.data, 'postmaster.pid')) as f:
            pid = int(f.readline())
        os.kill(pid, signal.SIGKILL)

    def log_size(self):
        return os.path.getsize(self.log)

    def log_since(self, offset):
        with open(self.log, errors='replace') as f:
            f.seek(offset)
            return f.read()

    def resetwal(self, xid):
        """Stop, pg_resetwal -x xid, add the zero-filled pg_xact segment xid needs, start."""
        self.stop()
        self.as_postgres(os.path.join(self.bindir, 'pg_resetwal'), '-x', str(xid), '-D', self.data)
        seg = os.path.join(self.data, 'pg_xact', '%04X' % (xid >> 20))
        if not os.path.exists(seg):
            with open(seg, 'wb') as f:
                f.write(b'\0' * (32 * 8192))
            os.chown(seg, self.pg.pw_uid, self.pg.pw_gid)
            os.chmod(seg, 0o600)

    def freeze_all(self):
        """VACUUM FREEZE every database, template0 too: datfrozenxid moves up, clog is truncated."""
        admin = connect('postgres')
        admin.execute('ALTER DATABASE template0 WITH ALLOW_CONNECTIONS true')
        try:
            for (db,) in admin.execute('SELECT datname FROM pg_database ORDER BY 1').fetchall():
                with connect(db) as c:
                    c.execute('VACUUM (FREEZE)')
        finally:
            admin.execute('ALTER DATABASE template0 WITH ALLOW_CONNECTIONS false')
        admin.close()

    def record(self, fxid):
        return os.path.join(self.data, 'a2_notifier', '%08X%08X.prep' % (fxid >> 32, fxid & 0xffffffff))


def worker_pid(conn, wait=10.0):
    """The notifier's pid, waiting up to wait seconds for one to run."""
    deadline = time.time() + wait
    while True:
        row = conn.execute("SELECT pid FROM pg_stat_activity WHERE backend_type = 'a2 notifier'").fetchone()
        if row or time.time() > deadline:
            return row[0] if row else None
        time.sleep(0.05)


def current_xid(conn):
    return one(conn, 'SELECT pg_current_xact_id()::text::bigint')


def burn_past(conn, target):
    """Consume transaction ids until the next one is past target (a full xid)."""
    conn.execute('SET synchronous_commit = off')
    while current_xid(conn) <= target:
        n = min(max(target - current_xid(conn) + 10, 10), 5000)
        conn.execute('DO $$BEGIN FOR i IN 1..%d LOOP PERFORM pg_current_xact_id(); COMMIT; END LOOP; END$$' % n)
    conn.execute('RESET synchronous_commit')


def prepare(db, gid, session, n=1):
    """Append n events to session, PREPARE; returns (full xid, greatest index)."""
    c = connect(db)
    c.execute('BEGIN')
    idx = base.append(c, session, n)
    fxid = current_xid(c)
    c.execute("PREPARE TRANSACTION '%s'" % gid)
    c.close()
    return fxid, idx


def heard(ctl, lst):
    ok = base.drained(ctl, [lst])
    return ok, lst.take()


def setup_db(db):
    admin = connect('postgres')
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % db)
    admin.execute('CREATE DATABASE %s' % db)
    admin.close()
    with connect(db) as c:
        c.execute('CREATE EXTENSION a2')


def rollback_prepared_all(conn):
    for (gid,) in conn.execute('SELECT gid FROM pg_prepared_xacts').fetchall():
        conn.execute("ROLLBACK PREPARED '%s'" % gid)


# ---------------------------------------------------------------------------
# long uptime

def fmt_xid(fxid):
    return '%d:%d' % (fxid >> 32, fxid & 0xffffffff)


def gdb_stale_horizon(cl, db, ctl, lst):
    """Make the worker's RecentXmin 2^31 + 1000 transactions old, as after a
    long uptime without a snapshot, then check nothing is misjudged."""
    if shutil.which('gdb') is None:
        print('ok - # SKIP gdb is not installed: stale RecentXmin not simulated')
        return
    pid = worker_pid(ctl)
    cur = current_xid(ctl) & 0xffffffff
    stale = (cur - 2 ** 31 - 1000) % 2 ** 32
    r = subprocess.run(['gdb', '-p', str(pid), '-batch', '-nx',
                        '-ex', 'set var *(unsigned int *)&RecentXmin = %d' % stale,
                        '-ex', 'print *(unsigned int *)&RecentXmin'],
                       capture_output=True, text=True)
    if '= %d' % stale not in r.stdout:
        print('ok - # SKIP gdb could not set the worker\'s RecentXmin: %s' % r.stderr.strip()[-200:])
        return
    dropped = base.status(ctl)['dropped']
    fxid, idx = prepare(db, 'x_stale', 'x:stale:p')
    for k in range(20):
        base.append(ctl, 'x:stale:plain', 1)
    ctl.execute("COMMIT PREPARED 'x_stale'")
    ok, got = heard(ctl, lst)
    st = base.status(ctl)
    report(ok and ('x:stale:p', idx) in got and ('x:stale:plain', 20) in got and st['dropped'] == dropped
           and worker_pid(ctl) == pid,
           'RecentXmin of the worker set 2^31 + 1000 xids back (gdb, xid %s): a COMMIT PREPARED and 20 commits '
           'are announced, nothing dropped' % fmt_xid(fxid), repr((got, st)))


def run_xids(cl):
    db = 'a2_x'
    cl.start()
    setup_db(db)
    ctl = connect(db)
    covered = []

    # two jumps to 2^31 - 600: no single jump may pass the wraparound stop limit
    for target in (1100000000, 2 ** 31 - 600):
        ctl.close()
        cl.resetwal(target)
        cl.start()
        ctl = connect(db)
        cl.freeze_all()
    start = current_xid(ctl)
    report(2 ** 31 - 600 <= start < 2 ** 31, 'next xid is just below 2^31 (%s)' % fmt_xid(start))

    lst = base.Listener(db)
    heard(ctl, lst)
    p1 = prepare(db, 'x_p1', 'x:a:p1', 2)
    p5 = prepare(db, 'x_p5', 'x:a:p5')
    base.append(ctl, 'x:a:before', 1)
    ok, got = heard(ctl, lst)
    report(ok and got == [('x:a:before', 1)], 'below 2^31: a commit is announced, two prepared wait', repr(got))
    burn_past(ctl, 2 ** 31 + 500)
    p2 = prepare(db, 'x_p2', 'x:a:p2')
    p3 = prepare(db, 'x_p3', 'x:a:p3')
    base.append(ctl, 'x:a:after', 1)
    dropped = base.status(ctl)['dropped']
    ctl.execute("COMMIT PREPARED 'x_p1'")
    ctl.execute("ROLLBACK PREPARED 'x_p2'")
    ok, got = heard(ctl, lst)
    st = base.status(ctl)
    report(ok and got == [('x:a:after', 1), ('x:a:p1', 2)] and st['dropped'] == dropped + 1,
           'past 2^31 (xid %s): a commit and a COMMIT PREPARED of xid %s are announced, a ROLLBACK PREPARED of '
           'xid %s is not' % (fmt_xid(current_xid(ctl)), fmt_xid(p1[0]), fmt_xid(p2[0])), repr((got, st)))
    covered.append((start, current_xid(ctl)))
    gdb_stale_horizon(cl, db, ctl, lst)
    lst.conn.close()

    # p5: committed while a2 is not preloaded, then its clog is truncated
    ctl.close()
    cl.stop()
    cl.start(preload=False)
    ctl = connect(db)
    ctl.execute("COMMIT PREPARED 'x_p5'")
    ctl.close()
    cl.resetwal(3200000000)
    cl.start(preload=False)
    ctl = connect(db)
    cl.freeze_all()
    gone = ctl.execute('SELECT pg_xact_status(%s::text::xid8) IS NULL', (str(p5[0]),)).fetchone()[0]
    report(gone and os.path.exists(cl.record(p5[0])),
           "xid %s's clog is truncated (pg_xact_status is null) and its record is still on disk" % fmt_xid(p5[0]))
    ctl.close()
    cl.stop()
    off = cl.log_size()
    cl.start()
    ctl = connect(db)
    ok = one(ctl, 'SELECT a2_notify_wait(30000)')
    st = base.status(ctl)
    log = cl.log_since(off)
    report(ok and st['announced'] == 1 and st['dropped'] == 0 and st['waiting'] == 1
           and not os.path.exists(cl.record(p5[0])) and os.path.exists(cl.record(p3[0]))
           and 'before clog\'s horizon' in log and 'could not access status' not in log
           and 'background worker "a2 notifier"' not in log,
           'after the restart the entry whose clog is gone is announced once, without an error; '
           'the prepared one waits', repr((st, log[-600:])))

    lst = base.Listener(db)
    ctl.execute("COMMIT PREPARED 'x_p3'")
    ok, got = heard(ctl, lst)
    report(ok and got == [('x:a:p3', 1)] and not os.path.exists(cl.record(p3[0])),
           'prepared at xid %s, committed at %s after a restart: announced, record removed'
           % (fmt_xid(p3[0]), fmt_xid(current_xid(ctl))), repr(got))
    lst.conn.close()
    covered.append((3200000000, current_xid(ctl)))

    # near 2^32: the xid counter wraps to the next epoch
    cl.freeze_all()
    ctl.close()
    cl.resetwal(2 ** 32 - 600)
    cl.start()
    ctl = connect(db)
    cl.freeze_all()
    start = current_xid(ctl)
    lst = base.Listener(db)
    heard(ctl, lst)
    p6 = prepare(db, 'x_p6', 'x:b:p6', 3)
    p8 = prepare(db, 'x_p8', 'x:b:p8')
    base.append(ctl, 'x:b:before', 1)
    burn_past(ctl, 2 ** 32 + 500)
    p7 = prepare(db, 'x_p7', 'x:b:p7')
    base.append(ctl, 'x:b:after', 1)
    dropped = base.status(ctl)['dropped']
    ctl.execute("COMMIT PREPARED 'x_p6'")
    ctl.execute("ROLLBACK PREPARED 'x_p7'")
    ok, got = heard(ctl, lst)
    st = base.status(ctl)
    report(ok and got == [('x:b:after', 1), ('x:b:before', 1), ('x:b:p6', 3)] and st['dropped'] == dropped + 1
           and p6[0] < 2 ** 32 <= p7[0],
           'across 2^32 (epoch 0 -> 1): commits on both sides and a COMMIT PREPARED of xid %s are announced, '
           'a ROLLBACK PREPARED of xid %s is not' % (fmt_xid(p6[0]), fmt_xid(p7[0])), repr((got, st)))
    lst.conn.close()
    ctl.close()
    cl.kill9()
    cl.start()
    ctl = connect(db)
    lst = base.Listener(db)
    ctl.execute("COMMIT PREPARED 'x_p8'")
    ok, got = heard(ctl, lst)
    report(ok and got == [('x:b:p8', 1)],
           'prepared at xid %s, crash, committed at xid %s: announced' % (fmt_xid(p8[0]), fmt_xid(current_xid(ctl))),
           repr(got))
    covered.append((start, current_xid(ctl)))
    lst.conn.close()
    ctl.close()
    cl.stop()
    print('# xid ranges covered: %s' % ', '.join('%s..%s' % (fmt_xid(a), fmt_xid(b)) for a, b in covered))


# ---------------------------------------------------------------------------
# restarts

def run_restart(cl):
    db = 'a2_r'
    cl.start()
    setup_db(db)
    ctl = connect(db)
    rollback_prepared_all(ctl)
    restarts = 0

    for how in ('clean restart', 'crash restart'):
        tag = 'c' if how.startswith('clean') else 'k'
        pc = prepare(db, 'r_%s_commit' % tag, 'r:%s:commit' % tag, 2)
        c = connect(db)
        c.execute('BEGIN')
        base.append(c, 'r:%s:two-a' % tag, 1)
        base.append(c, 'r:%s:two-b' % tag, 4)
        c.execute("PREPARE TRANSACTION 'r_%s_two'" % tag)
        c.close()
        pr = prepare(db, 'r_%s_rollback' % tag, 'r:%s:rollback' % tag)
        ctl.close()
        if tag == 'c':
            cl.stop()
        else:
            cl.kill9()
        cl.start()
        restarts += 1
        ctl = connect(db)
        lst = base.Listener(db)
        ok = one(ctl, 'SELECT a2_notify_wait(30000)')
        st = base.status(ctl)
        report(ok and st['queue_depth'] == 4 and st['waiting'] == 4,
               '%s: the prepared transactions\' 4 entries are queued again and wait' % how, repr(st))
        ctl.execute("COMMIT PREPARED 'r_%s_commit'" % tag)
        ctl.execute("COMMIT PREPARED 'r_%s_two'" % tag)
        ok, got = heard(ctl, lst)
        report(ok and got == [('r:%s:commit' % tag, 2), ('r:%s:two-a' % tag, 1), ('r:%s:two-b' % tag, 4)],
               '%s: COMMIT PREPARED is announced to a listener that reconnected' % how, repr(got))
        dropped = base.status(ctl)['dropped']
        ctl.execute("ROLLBACK PREPARED 'r_%s_rollback'" % tag)
        ok, got = heard(ctl, lst)
        st = base.status(ctl)
        report(ok and got == [] and st['dropped'] == dropped + 1 and st['queue_depth'] == 0,
               '%s: ROLLBACK PREPARED announces nothing' % how, repr((got, st)))
        report(not os.path.exists(cl.record(pc[0])) and not os.path.exists(cl.record(pr[0]))
               and os.listdir(os.path.join(cl.data, 'a2_notifier')) == [],
               '%s: the durable records are removed once decided' % how)
        lst.conn.close()

    # more prepared entries than the queue holds, before and after a restart
    ctl.close()
    cl.start(queue_size=2)
    restarts += 1
    ctl = connect(db)
    lst = base.Listener(db)
    gids = []
    for k in range(4):
        prepare(db, 'r_q%d' % k, 'r:q%d' % k)
        gids.append('r_q%d' % k)
    st = base.status(ctl)
    report(st['queue_size'] == 2 and st['queue_depth'] == 2, 'a queue of 2 slots holds 2 of 4 prepared entries', repr(st))
    ctl.close()
    cl.stop()
    cl.start(queue_size=2)
    restarts += 1
    ctl = connect(db)
    lst.conn.close()
    lst = base.Listener(db)
    for gid in gids:
        ctl.execute("COMMIT PREPARED '%s'" % gid)
    ok, got = heard(ctl, lst)
    report(ok and got == [('r:q%d' % k, 1) for k in range(4)],
           'after a restart with that queue, all 4 COMMIT PREPARED are announced (records read as room frees)',
           repr(got))

    # a corrupt record is set aside, and nothing else suffers
    ctl.close()
    cl.stop()
    bad = cl.record(0xff)
    with open(bad, 'wb') as f:
        f.write(b'not a record')
    os.chown(bad, cl.pg.pw_uid, cl.pg.pw_gid)
    p = None
    off = cl.log_size()
    cl.start()
    restarts += 1
    ctl = connect(db)
    lst.conn.close()
    lst = base.Listener(db)
    p = prepare(db, 'r_after_bad', 'r:after-bad')
    ctl.execute("COMMIT PREPARED 'r_after_bad'")
    ok, got = heard(ctl, lst)
    log = cl.log_since(off)
    report(ok and got == [('r:after-bad', 1)] and os.path.exists(bad + '.bad') and not os.path.exists(bad)
           and 'is not valid' in log and worker_pid(ctl) is not None,
           'a corrupt record is renamed to .bad with a WARNING; announcements go on', repr((got, log[-400:])))
    lst.conn.close()
    ctl.close()
    cl.stop()
    print('# server restarts: %d (one of them a crash)' % restarts)


# ---------------------------------------------------------------------------
# faults

def wait_for(pred, timeout=10.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    return pred()


def run_faults(cl):
    db = 'a2_f'
    cl.start()
    setup_db(db)
    ctl = connect(db)
    admin = connect('postgres')
    lst = base.Listener(db)
    heard(ctl, lst)

    # cancel while idle: nothing to cancel
    pid = worker_pid(ctl)
    report(one(ctl, 'SELECT pg_cancel_backend(%s)', (pid,)), 'pg_cancel_backend reaches the worker')
    base.append(ctl, 'f:idle', 1)
    ok, got = heard(ctl, lst)
    report(ok and got == [('f:idle', 1)] and worker_pid(ctl) == pid,
           'after a cancel while idle the same worker announces', repr((got, pid, worker_pid(ctl))))

    # cancel while a send waits: an ERROR inside the worker's transaction,
    # at the point where PostgreSQL's "too many notifications" would be
    # raised.  A transaction that wrote, NOTIFYs and then waits for a
    # synchronous standby that does not exist holds the lock that
    # serializes NOTIFY commits, so the worker's commit waits for it.
    admin.execute("ALTER SYSTEM SET synchronous_standby_names = 'a2_nobody'")
    admin.execute('SELECT pg_reload_conf()')
    holder = connect(db)
    hpid = one(holder, 'SELECT pg_backend_pid()')
    ctl.execute("SET synchronous_commit = local")
    ctl.execute('CREATE TABLE f_hold (x int)')
    done = threading.Event()

    def hold():
        try:
            holder.execute('BEGIN')
            holder.execute('INSERT INTO f_hold VALUES (1)')     # a commit without WAL does not wait
            holder.execute('NOTIFY a2_f_hold')
            holder.execute('COMMIT')
        except Exception:       # noqa: BLE001 -- the cancel ends its wait
            pass
        done.set()

    # the checkpointer takes up the new setting a moment after the reload:
    # until then a commit does not wait, and we try again
    waits = False
    for attempt in range(50):
        done.clear()
        t = threading.Thread(target=hold, daemon=True)
        t.start()
        waits = wait_for(lambda: one(ctl, "SELECT count(*) FROM pg_stat_activity WHERE pid = %s "
                                          "AND wait_event = 'SyncRep'", (hpid,)) == 1, 1.0)
        if waits:
            break
        t.join()
    try:
        off = cl.log_size()
        base.append(ctl, 'f:mid', 2)
        blocked = wait_for(lambda: ctl.execute("SELECT wait_event_type FROM pg_stat_activity WHERE pid = %s",
                                               (pid,)).fetchone() == ('Lock',))
        report(waits and blocked, 'the worker waits for the NOTIFY lock inside its sending transaction')
        one(ctl, 'SELECT pg_cancel_backend(%s)', (pid,))
        recovered = wait_for(lambda: 'a2 notifier: pass failed' in cl.log_since(off))
        st = base.status(ctl)
        report(recovered and worker_pid(ctl) == pid and st['queue_depth'] == 1,
               'a cancel there aborts the send, is logged, and the same worker keeps the entry', repr(st))
        one(ctl, 'SELECT pg_cancel_backend(%s)', (hpid,))
        done.wait(10)
        admin.execute('ALTER SYSTEM RESET synchronous_standby_names')
        admin.execute('SELECT pg_reload_conf()')
        ok, got = heard(ctl, lst)
        log = cl.log_since(off)
        report(ok and got == [('f:mid', 2)] and worker_pid(ctl) == pid
               and log.count('a2 notifier: pass failed') <= 4 and 'exited with exit code' not in log,
               'once the lock is free the entry is announced once, by the same worker, after at most a few retries',
               repr((got, log.count('a2 notifier: pass failed'))))
    finally:
        # whatever happened above, release the NOTIFY lock and the setting
        admin.execute('SELECT pg_cancel_backend(%s)', (hpid,))
        admin.execute('ALTER SYSTEM RESET synchronous_standby_names')
        admin.execute('SELECT pg_reload_conf()')
    holder.close()
    ctl.execute('RESET synchronous_commit')

    # terminate: the postmaster starts a new worker, queued entries survive
    p = prepare(db, 'f_term', 'f:term')
    one(ctl, 'SELECT pg_terminate_backend(%s)', (pid,))
    newpid = wait_for(lambda: (worker_pid(ctl) or pid) != pid and worker_pid(ctl))
    ctl.execute("COMMIT PREPARED 'f_term'")
    ok, got = heard(ctl, lst)
    report(ok and newpid and got == [('f:term', 1)],
           'pg_terminate_backend: a new worker (pid %s) announces the entry queued before' % newpid, repr(got))
    pid = worker_pid(ctl)

    # SIGHUP: a changed setting reaches the worker
    off = cl.log_size()
    admin.execute('ALTER SYSTEM SET log_min_messages = debug1')
    admin.execute('SELECT pg_reload_conf()')
    line = re.compile(r'\[%d\] DEBUG:  a2 notifier: announced 1 session\(s\) in database' % pid)

    def announced_at_debug1():
        base.append(ctl, 'f:hup', 1)
        heard(ctl, lst)
        return line.search(cl.log_since(off))
    seen = wait_for(announced_at_debug1)
    admin.execute('ALTER SYSTEM RESET log_min_messages')
    admin.execute('SELECT pg_reload_conf()')
    report(seen and worker_pid(ctl) == pid,
           'SIGHUP: after log_min_messages = debug1 and a reload the same worker logs at DEBUG1')

    # a listener that never reads: the others still hear everything, and it
    # hears everything once it reads again
    stuck = base.Listener(db)
    stuck.conn.execute('BEGIN')
    stuck.conn.execute('SELECT 1')
    fill = connect(db)
    fill.execute("SELECT count(pg_notify('a2_f_fill', repeat('x', 7900) || i)) FROM generate_series(1, 2000) i")
    usage = one(ctl, 'SELECT pg_notification_queue_usage()')
    expect = []
    for k in range(50):
        expect.append(('f:stuck:%d' % (k % 5), base.append(ctl, 'f:stuck:%d' % (k % 5), 1)))
    ok, got = heard(ctl, lst)
    want = sorted(set((s, max(i for s2, i in expect if s2 == s)) for s, _ in expect))
    greatest = {}
    for s, i in got:
        greatest[s] = max(greatest.get(s, 0), i)
    report(ok and usage > 0 and all(greatest.get(s, 0) >= i for s, i in want) and worker_pid(ctl) == pid,
           'a listener that never reads (queue usage %.4f%%): the others hear all 50 commits' % (usage * 100),
           repr(got[-5:]))
    stuck.conn.execute('COMMIT')
    stuck.pump(1)
    got = stuck.take()
    greatest = {}
    for s, i in got:
        greatest[s] = max(greatest.get(s, 0), i)
    report(all(greatest.get(s, 0) >= i for s, i in want), 'and the one that did not read hears them when it reads')
    stuck.conn.close()
    fill.close()

    if os.environ.get('A2_NOTIFY_FILL') == '1':
        run_fill(cl, db, ctl, lst, pid)

    lst.conn.close()
    ctl.close()
    admin.close()
    cl.stop()

    # bad values of a2.notify_queue_size: the server refuses to start
    postgres = os.path.join(cl.bindir, 'postgres')
    for value in ('0', 'abc', '2000000', '-5', ''):
        r = cl.as_postgres(postgres, '-D', cl.data, '-C', 'shared_memory_size',
                           '-c', 'a2.notify_queue_size=%s' % value, check=False)
        report(r.returncode != 0 and 'invalid value for parameter "a2.notify_queue_size"' in r.stderr,
               'a2.notify_queue_size = %s: the server refuses to start' % value, (r.stdout + r.stderr)[-300:])
    r = cl.as_postgres(postgres, '-D', cl.data, '-C', 'shared_memory_size', '-c', 'a2.notify_queue_size=64',
                       check=False)
    report(r.returncode == 0 and 'WARNING' not in r.stderr, 'a2.notify_queue_size = 64 is taken',
           (r.stdout + r.stderr)[-300:])


def run_fill(cl, db, ctl, lst, pid):
    """PostgreSQL's notification queue full (8 GB): the worker backs off, keeps its entries."""
    stuck = base.Listener(db)
    spid = one(stuck.conn, 'SELECT pg_backend_pid()')
    stuck.conn.execute('BEGIN')
    stuck.conn.execute('SELECT 1')
    t0 = time.time()

    def filler(k):
        c = connect(db)
        c.execute('SET synchronous_commit = off')
        i = 0
        try:
            while True:
                c.execute("SELECT count(pg_notify('a2_f_fill', repeat('x', 7900) || i || '-' || %s)) "
                          "FROM generate_series(%s::int, %s::int) i", (k, i, i + 9999))
                i += 10000
        except psycopg.errors.ProgramLimitExceeded:
            pass
        c.close()
    threads = [threading.Thread(target=filler, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    usage = one(ctl, 'SELECT pg_notification_queue_usage()')
    print('# filled the notification queue to %.1f%% in %.0f s' % (usage * 100, time.time() - t0))
    off = cl.log_size()
    base.append(ctl, 'f:full', 1)
    report(True, 'with the queue full an append still commits (the notifier path)')
    time.sleep(8)       # the worker's retries over 8 s: 1 + 2 + 4 s apart
    log = cl.log_since(off)
    fails = log.count('a2 notifier: pass failed')
    st = base.status(ctl)
    report('too many notifications in the NOTIFY queue' in log and 1 <= fails <= 4 and worker_pid(ctl) == pid
           and st['queue_depth'] == 1,
           'the worker backs off (%d failed passes in 8 s), keeps its entry, is not restarted' % fails, repr(st))
    # The listener that reads may itself lag 8 GB behind by now, and an idle
    # listener reads on only when some commit's NOTIFY signals it, which a
    # full queue prevents: it reconnects, as a client whose listener fell
    # behind does.  With both gone the queue is empty.
    lpid = one(lst.conn, 'SELECT pg_backend_pid()')
    one(ctl, 'SELECT pg_terminate_backend(%s)', (spid,))
    lst.conn.close()
    wait_for(lambda: one(ctl, 'SELECT count(*) FROM pg_stat_activity WHERE pid IN (%s, %s)', (spid, lpid)) == 0, 60)
    fresh = base.Listener(db)
    ok = one(ctl, 'SELECT a2_notify_wait(120000)')
    fresh.pump(1)
    got = fresh.take()
    report(ok and got == [('f:full', 1)] and worker_pid(ctl) == pid,
           'once the listener that never read is gone the entry is announced, by the same worker', repr(got[-3:]))
    fresh.conn.close()


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in ('xids', 'restart', 'faults'):
        print(__doc__)
        return 2
    cl = Cluster()
    t0 = time.time()
    try:
        {'xids': run_xids, 'restart': run_restart, 'faults': run_faults}[sys.argv[1]](cl)
    except Exception as e:          # noqa: BLE001 -- one failed check, then the summary
        import traceback
        traceback.print_exc()
        report(False, 'field %s ran to the end' % sys.argv[1], repr(e))
    print('# field %s: %.0f s' % (sys.argv[1], time.time() - t0))
    print('%d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
