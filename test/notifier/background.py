#!/usr/bin/python3
"""
background.py -- "nothing lost by the background machinery" (issue 26), on
a private cluster: every due event and every committed prepared append is
announced, whatever happens to the store, the batches, the databases and
the worker slots.

    background.py store | batch | lifecycle | capacity

The cluster is the one scripts/cluster.sh manages with the A2_PGDATA and
A2_PGPORT of the environment (the suite scripts make a throwaway one); this
script stops and restarts it and edits its data directory.  Run as root (or
the postgres user).

  store      durable records of prepared transactions (counted by
             a2_notify_status: disk_records, disk_set_aside): one larger than the
             whole queue (announced at COMMIT PREPARED, before and after a
             restart, and the records after it too); unreadable (mode 000),
             oversized (65 MB), garbage and truncated files, each set aside
             with a WARNING while every other record is announced; a full
             disk (a small tmpfs, when this machine lets us mount one); a
             missing directory.
  batch      ties: 10,000, 10,001 and 20,001 events with one notBefore (the
             scheduler's batch is 10,000); an event due at each millisecond
             of a window (due times equal to a pass's own clock); a
             backed-off a2_fail committed after its retry time while other
             work is scheduled, and one whose retry time is already past
             (a2.now set back); an event due while its transaction is
             prepared, committed after.
  lifecycle  CREATE DATABASE ... TEMPLATE of a database with work scheduled
             (it succeeds; the copy's work is announced too), a DROP
             DATABASE that fails because a user is connected, ALTER
             DATABASE ... RENAME, DROP DATABASE, a restore with pg_dump into
             a new database, ALTER EXTENSION UPDATE, DROP EXTENSION and
             CREATE EXTENSION into another schema; a server restart after
             them, with a prepared append committed after it.
  capacity   more databases than worker slots: no WARNING at start for
             databases with nothing scheduled; 12 databases with work, more
             than the launcher's slots (8) and the free workers (2), wait
             and are each announced once one frees; one log line for the
             wait, and a2_notify_status().schedulers_waiting meanwhile; 65
             databases with work due at once all get a scheduler (0.3.0's
             limit was 64).

Waits are bounded polls of a condition (a listener heard X, a2_notify_wait).
Every check prints "ok - ..." or "not ok - ..."; the last line is
"N passed, N failed"; the exit status is 1 when any failed.
"""

import json
import os
import select
import shutil
import subprocess
import sys
import time

import psycopg

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import field as F                           # noqa: E402  Cluster, report, connect, prepare
import notifier as base                     # noqa: E402  Listener, drained, status, append

report = F.report
connect = F.connect
one = F.one


def iso(t):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(t)) + '.%03dZ' % (int(t * 1000) % 1000)


def iso_ms(ms):
    return time.strftime('%Y-%m-%dT%H:%M:%S', time.gmtime(ms // 1000)) + '.%03dZ' % (ms % 1000)


class Heard:
    """A listener that keeps every (sessionId, index) with the time it arrived."""

    def __init__(self, db):
        self.db = db
        self.got = []
        self.conn = psycopg.connect(dbname=db, autocommit=True)
        self.conn.add_notify_handler(self._on)
        self.conn.execute('LISTEN a2_events')

    def _on(self, n):
        p = json.loads(n.payload)
        self.got.append((time.time(), p['sessionId'], p['index']))

    def pump(self, timeout=0.05):
        select.select([self.conn.fileno()], [], [], timeout)
        self.conn.execute('SELECT 1')

    def has(self, sid, idx=None, after=0.0):
        return any(s == sid and (idx is None or i == idx) and t >= after for t, s, i in self.got)

    def indexes(self, sid, after=0.0):
        return {i for t, s, i in self.got if s == sid and t >= after}

    def until(self, pred, timeout):
        end = time.time() + timeout
        while time.time() < end:
            if pred():
                return True
            self.pump(0.1)
        return pred()

    def close(self):
        self.conn.close()


def schedule(conn, sid, due, n=1):
    """Append n events to sid, all with notBefore due (epoch seconds), in one transaction."""
    with conn.transaction():
        while n > 0:
            k = min(n, 5000)            # a2_append takes up to 10,000 events a call
            ev = json.dumps([{'type': 't', 'notBefore': iso(due)} for _ in range(k)])
            conn.execute('SELECT a2_append(%s, %s::jsonb)', [sid, ev])
            n -= k


def new_db(db, ext=True):
    admin = connect('postgres')
    admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % db)
    admin.execute('CREATE DATABASE %s' % db)
    admin.close()
    if ext:
        with connect(db) as c:
            c.execute('CREATE EXTENSION a2')


def record_files(cl):
    d = os.path.join(cl.data, 'a2_notifier')
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def prepare_many(db, gid, sessions):
    """One transaction appending one event to each session, prepared."""
    c = connect(db)
    c.execute('BEGIN')
    c.execute("SELECT a2_append(s, '[{\"type\": \"t\"}]'::jsonb) FROM unnest(%s::text[]) s", [sessions])
    fxid = F.current_xid(c)
    c.execute("PREPARE TRANSACTION '%s'" % gid)
    c.close()
    return fxid


def drained_heard(ctl, lst, want, timeout=30):
    """a2_notify_wait, then poll the listener until it heard every (sid, idx) in want."""
    ok = one(ctl, 'SELECT a2_notify_wait(30000)')
    got = lst.until(lambda: all(lst.has(s, i) for s, i in want), timeout)
    return ok and got


# ---------------------------------------------------------------------------
# the durable store

def run_store(cl):
    db = 'bg_store'
    cl.start(queue_size=8)
    new_db(db)
    ctl = connect(db)
    lst = Heard(db)

    # finding 1: one prepared transaction naming more sessions than the queue
    big = ['big:%02d' % k for k in range(10)]
    fxid = prepare_many(db, 'bg_big', big)
    st = base.status(ctl)
    report(st['queue_size'] == 8 and os.path.exists(cl.record(fxid)),
           'a prepared transaction of 10 sessions with a queue of 8: its record is written', repr(st))
    report(st['disk_records'] == 1, 'a2_notify_status() counts it on disk (disk_records)', repr(st))
    ctl.execute("COMMIT PREPARED 'bg_big'")
    ok = drained_heard(ctl, lst, [(s, 1) for s in big])
    report(ok, 'COMMIT PREPARED announces all 10 of its sessions (straight from the record)',
           repr(sorted({s for _, s, _ in lst.got})))
    report(F.wait_for(lambda: not os.path.exists(cl.record(fxid))), 'and its record is removed',
           repr(record_files(cl)))

    # ... and after a restart, with 6 smaller ones beside it
    big2 = ['big2:%02d' % k for k in range(10)]
    prepare_many(db, 'bg_big2', big2)
    small = []
    for k in range(6):
        prepare_many(db, 'bg_small%d' % k, ['small:%d' % k])
        small.append('small:%d' % k)
    ctl.close()
    lst.close()
    cl.stop()
    cl.start(queue_size=8)
    ctl = connect(db)
    lst = Heard(db)
    for gid in ['bg_big2'] + ['bg_small%d' % k for k in range(6)]:
        ctl.execute("COMMIT PREPARED '%s'" % gid)
    want = [(s, 1) for s in big2 + small]
    ok = drained_heard(ctl, lst, want)
    missing = [w for w in want if not lst.has(*w)]
    report(ok and not missing, 'after a restart: the oversized record and the 6 beside it are all announced',
           repr(missing))
    report(F.wait_for(lambda: record_files(cl) == []), 'and every record is removed', repr(record_files(cl)))

    # finding 2: unreadable, oversized, garbage and truncated files
    gids = ['bg_f%d' % k for k in range(8)]
    for k, gid in enumerate(gids):
        prepare_many(db, gid, ['f:%d' % k])
    valid = cl.record(prepare_many(db, 'bg_trunc_src', ['f:src']))
    ctl.execute("ROLLBACK PREPARED 'bg_trunc_src'")
    ctl.close()
    lst.close()
    cl.stop()
    if os.path.exists(valid):
        os.unlink(valid)
    bad = {'unreadable': cl.record(0xf0), 'oversized': cl.record(0xf1),
           'garbage': cl.record(0xf2), 'truncated': cl.record(0xf3)}
    with open(bad['unreadable'], 'wb') as f:
        f.write(b'x' * 100)
    os.chmod(bad['unreadable'], 0)
    with open(bad['oversized'], 'wb') as f:
        f.truncate(65 * 1024 * 1024)        # sparse: 65 MB of zeros
    with open(bad['garbage'], 'wb') as f:
        f.write(os.urandom(4096))
    with open(cl.record(0xf3), 'wb') as f:
        # a record's first bytes: magic "A2NR", version 1, kind 1, then cut
        f.write(b'A2NR\x01\x00\x01\x00' + (0xf3).to_bytes(8, 'little'))
    for p in bad.values():
        os.chown(p, cl.pg.pw_uid, cl.pg.pw_gid)
    off = cl.log_size()
    cl.start(queue_size=8)
    ctl = connect(db)
    lst = Heard(db)
    for gid in gids:
        ctl.execute("COMMIT PREPARED '%s'" % gid)
    want = [('f:%d' % k, 1) for k in range(8)]
    ok = drained_heard(ctl, lst, want)
    missing = [w for w in want if not lst.has(*w)]
    report(ok and not missing, 'with 4 bad files beside them, all 8 prepared transactions are announced',
           repr(missing))
    log = cl.log_since(off)
    for what, p in bad.items():
        report(os.path.exists(p + '.bad') and not os.path.exists(p) and os.path.basename(p) in log,
               'the %s file is set aside (.bad) with a WARNING' % what,
               repr((record_files(cl), [ln for ln in log.splitlines() if 'WARNING' in ln][-4:])))
    report(log.count('WARNING') >= 4 and 'ERROR' not in log, 'warnings, not errors', log[-600:])
    st = base.status(ctl)
    report(st['disk_set_aside'] == 4, 'a2_notify_status() counts the 4 set aside (disk_set_aside)', repr(st))
    for p in bad.values():
        if os.path.exists(p + '.bad'):
            os.unlink(p + '.bad')

    # a full disk: a tmpfs of 64 kB over the store's directory
    store = os.path.join(cl.data, 'a2_notifier')
    mounted = subprocess.run(['mount', '-t', 'tmpfs', '-o', 'size=64k,mode=0700', 'tmpfs', store],
                             capture_output=True).returncode == 0
    if not mounted:
        print('# skipped: a full disk (this machine does not let us mount a tmpfs)')
    else:
        try:
            os.chown(store, cl.pg.pw_uid, cl.pg.pw_gid)
            fd = os.open(os.path.join(store, 'filler'), os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                while os.write(fd, b'\0' * 512) > 0:
                    pass
            except OSError:
                pass                        # full
            os.close(fd)
            c = connect(db)
            c.execute('BEGIN')
            base.append(c, 'disk:full')
            err = None
            try:
                c.execute("PREPARE TRANSACTION 'bg_full'")
            except psycopg.Error as e:
                err = e
            c.close()
            gone = one(ctl, "SELECT count(*) FROM pg_prepared_xacts WHERE gid = 'bg_full'") == 0
            report(err is not None and gone and ('could not write' in str(err) or 'could not create' in str(err)),
                   'a full disk fails the PREPARE with an error (the transaction aborts: nothing owed)', repr(err))
            base.append(ctl, 'disk:plain')
            ok = drained_heard(ctl, lst, [('disk:plain', 1)])
            report(ok, 'a plain commit is announced meanwhile')
            os.unlink(os.path.join(store, 'filler'))
            prepare_many(db, 'bg_after_full', ['disk:after'])
            ctl.execute("COMMIT PREPARED 'bg_after_full'")
            report(drained_heard(ctl, lst, [('disk:after', 1)]), 'with room again, a prepared append is announced')
        finally:
            subprocess.run(['umount', store], check=False)

    # a missing directory: removed while running, and while stopped
    shutil.rmtree(store, ignore_errors=True)
    prepare_many(db, 'bg_nodir1', ['nodir:1'])
    ctl.execute("COMMIT PREPARED 'bg_nodir1'")
    report(drained_heard(ctl, lst, [('nodir:1', 1)]), 'the directory removed while running: made again, announced')
    ctl.close()
    lst.close()
    cl.stop()
    shutil.rmtree(store, ignore_errors=True)
    cl.start(queue_size=8)
    ctl = connect(db)
    lst = Heard(db)
    prepare_many(db, 'bg_nodir2', ['nodir:2'])
    ctl.execute("COMMIT PREPARED 'bg_nodir2'")
    report(drained_heard(ctl, lst, [('nodir:2', 1)]), 'the directory missing at start: made again, announced')
    report(F.worker_pid(ctl) is not None, 'the notifier runs throughout')
    ctl.close()
    lst.close()
    cl.stop()


# ---------------------------------------------------------------------------
# batch boundaries

def run_batch(cl):
    db = 'bg_batch'
    cl.start()
    new_db(db)
    app = connect(db)
    lst = Heard(db)

    # finding 3: ties at the batch size (10,000) and past it
    for n in (10000, 10001, 20001):
        sid = 'tie:%d' % n
        due = time.time() + 4 + n / 5000.0
        schedule(app, sid, due, n)
        committed = time.time()
        report(committed < due - 0.5, '%d events with one notBefore appended before it falls due' % n,
               '%.1f s late' % (committed - due))
        lst.until(lambda: len(lst.indexes(sid, due - 0.01)) >= n, (due - time.time()) + 20)
        got = lst.indexes(sid, due - 0.01)
        report(got == set(range(1, n + 1)), 'all %d tied events are announced when due' % n,
               '%d of %d' % (len(got), n))

    # finding 7: a backed-off a2_fail committed after its retry time, other work scheduled
    for other in (True, False):
        tag = 'busy' if other else 'idle'
        bo = 'backoff:%s' % tag
        if other:
            schedule(app, 'keep:%s' % tag, time.time() + 600)
        base.append(app, bo)
        one(app, "SELECT a2_claim(%s, 'w', 60000)", [bo])
        app.execute('BEGIN')
        t_fail = time.time()
        one(app, "SELECT a2_fail(%s, 1, 1, 'busy', 5, 1000)", [bo])
        # hold the transaction until its retry time has passed (and a pass or two ran)
        while time.time() < t_fail + 2.5:
            lst.pump(0.1)
        app.execute('COMMIT')
        t_commit = time.time()
        heard = lst.until(lambda: lst.has(bo, 1, t_commit), 5)
        report(heard, 'a2_fail with retry 1 s committed 2.5 s later is announced after its commit (%s)'
               % ('other work scheduled' if other else 'nothing else scheduled'))

    # due times equal to a pass's own clock: an event due at every
    # millisecond of a 2-second window, so whatever millisecond a pass's
    # clock reads inside it, an event is due exactly then (the pass takes
    # due <= now, the next one due > now: the boundary belongs to one of
    # them, never to neither)
    sid = 'edge:every-ms'
    base_ms = int((time.time() + 3) * 1000)
    width = 2000
    with app.transaction():
        for lo in range(0, width, 1000):
            ev = json.dumps([{'type': 't', 'notBefore': iso_ms(base_ms + k)} for k in range(lo, min(lo + 1000, width))])
            app.execute('SELECT a2_append(%s, %s::jsonb)', [sid, ev])
    committed = time.time()
    report(committed * 1000 < base_ms - 500, '%d events due at each millisecond of a window, appended before it opens' % width,
           '%.1f s late' % (committed - base_ms / 1000.0))
    lst.until(lambda: len(lst.indexes(sid, base_ms / 1000.0 - 0.01)) >= width, (base_ms / 1000.0 - time.time()) + width / 1000.0 + 20)
    got = lst.indexes(sid, base_ms / 1000.0 - 0.01)
    report(got == set(range(1, width + 1)), 'every event due at a pass\'s own clock is announced (each millisecond of the window)',
           '%d of %d; missing %s' % (len(got), width, sorted(set(range(1, width + 1)) - got)[:10]))

    # a backed-off a2_fail whose retry time is already past by the wall
    # clock, because the failing session set a2.now back: the scheduler
    # never looks that far back, so the commit announces it at once, and a
    # claimer on the wall clock gets it at once
    bw = 'backoff:backward-clock'
    c = connect(db)
    c.execute("SET a2.now = '%s'" % iso(time.time() - 3600))
    base.append(c, bw)
    one(c, "SELECT a2_claim(%s, 'w', 60000)", [bw])
    one(c, 'SELECT a2_notify_wait(30000)')
    lst.until(lambda: lst.has(bw, 1), 5)        # the append's own announcement
    t_fail = time.time()
    r = one(c, "SELECT a2_fail(%s, 1, 1, 'busy', 5, 1000)", [bw])
    report(r['outcome'] == 'failed', 'a2_fail with retry 1 s under a2.now one hour back: failed', repr(r))
    heard = lst.until(lambda: lst.has(bw, 1, t_fail), 5)
    report(heard, 'a2_fail whose retry time is already past by the wall clock (a2.now set back) is announced at its commit',
           repr([(round(t - t_fail, 2), s, i) for t, s, i in lst.got if s == bw]))
    r = one(app, "SELECT a2_claim(%s, 'w2', 60000)", [bw])
    report([(e['index'], e['attemptCount']) for e in r['events']] == [(1, 2)],
           '... and a claimer on the wall clock claims it at once (attempt 2)', repr(r))
    c.close()

    # an event that falls due while its transaction is prepared
    sid = 'prep:due'
    c = connect(db)
    c.execute('BEGIN')
    due = time.time() + 1.0
    c.execute('SELECT a2_append(%s, %s::jsonb)',
              [sid, json.dumps([{'type': 't', 'notBefore': iso(due)}, {'type': 't'}])])
    c.execute("PREPARE TRANSACTION 'bg_prep_due'")
    c.close()
    while time.time() < due + 1.5:
        lst.pump(0.1)
    app.execute("COMMIT PREPARED 'bg_prep_due'")
    t_commit = time.time()
    heard = lst.until(lambda: lst.has(sid, 1, t_commit), 5)
    report(heard, 'an event due while its transaction was prepared is announced after COMMIT PREPARED',
           repr([(round(t - t_commit, 2), s, i) for t, s, i in lst.got if s == sid]))
    app.close()
    lst.close()
    cl.stop()


# ---------------------------------------------------------------------------
# database lifecycle

def due_heard(db, sid, due, timeout=25):
    lst = Heard(db)
    try:
        return lst.until(lambda: lst.has(sid, 1), max(due - time.time(), 0) + timeout)
    finally:
        lst.close()


def scheduler_in(admin, db, timeout=15):
    """Bounded poll: db's scheduler is connected (so the command after this must deal with it)."""
    return F.wait_for(lambda: one(admin, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = "
                                         "'a2 scheduler' AND datname = %s", [db]) > 0, timeout)


def run_lifecycle(cl):
    cl.start()
    admin = connect('postgres')
    for d in ('bg_a', 'bg_b', 'bg_c', 'bg_d', 'bg_e'):
        admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % d)
    new_db('bg_a')
    pgbin = cl.bindir

    # finding 10 / 6: CREATE DATABASE ... TEMPLATE of a database with work scheduled
    with connect('bg_a') as c:
        due = time.time() + 25
        schedule(c, 'tmpl', due)
    report(scheduler_in(admin, 'bg_a'), 'bg_a\'s scheduler runs')
    t0 = time.time()
    err = None
    try:
        admin.execute('CREATE DATABASE bg_b TEMPLATE bg_a')
    except psycopg.Error as e:
        err = e
    report(err is None, 'CREATE DATABASE bg_b TEMPLATE bg_a succeeds while bg_a has work scheduled (%.1f s)'
           % (time.time() - t0), repr(err))
    la, lb = Heard('bg_a'), (Heard('bg_b') if err is None else None)
    ok_a = la.until(lambda: la.has('tmpl', 1), due - time.time() + 15)
    ok_b = lb is not None and lb.until(lambda: lb.has('tmpl', 1), due - time.time() + 15)
    report(ok_a, 'the template\'s scheduled event is announced')
    report(ok_b, 'the copy\'s scheduled event is announced too (its scheduler was started)')
    la.close()
    if lb:
        lb.close()

    # finding 5: a DROP DATABASE that fails because a user is connected
    user = connect('bg_a')
    due = time.time() + 12
    schedule(user, 'faildrop', due)
    scheduler_in(admin, 'bg_a')
    err = None
    try:
        admin.execute('DROP DATABASE bg_a')
    except psycopg.Error as e:
        err = e
    report(err is not None and 'being accessed by other users' in str(err),
           'DROP DATABASE fails while a user is connected', repr(err))
    user.close()
    report(due_heard('bg_a', 'faildrop', due), 'the event scheduled there is still announced')

    # finding 5: ALTER DATABASE ... RENAME
    if lb is not None:
        with connect('bg_b') as c:
            due = time.time() + 12
            schedule(c, 'rename', due)
        report(scheduler_in(admin, 'bg_b'), 'bg_b\'s scheduler runs')
        err = None
        try:
            admin.execute('ALTER DATABASE bg_b RENAME TO bg_c')
        except psycopg.Error as e:
            err = e
        report(err is None, 'ALTER DATABASE bg_b RENAME TO bg_c succeeds with work scheduled', repr(err))
        report(err is None and due_heard('bg_c', 'rename', due),
               'the event scheduled there is announced under the new name')

        # DROP DATABASE with work scheduled
        with connect('bg_c') as c:
            schedule(c, 'dropped', time.time() + 600)
        scheduler_in(admin, 'bg_c')
        err = None
        try:
            admin.execute('DROP DATABASE bg_c')
        except psycopg.Error as e:
            err = e
        report(err is None, 'DROP DATABASE succeeds with work scheduled', repr(err))

    # finding 6: a restore with pg_dump into a new database
    with connect('bg_a') as c:
        due = time.time() + 20
        schedule(c, 'restored', due)
    dump = subprocess.run([os.path.join(pgbin, 'pg_dump'), '-d', 'bg_a'], capture_output=True, text=True)
    admin.execute('CREATE DATABASE bg_d')
    res = subprocess.run([os.path.join(pgbin, 'psql'), '-X', '-q', '-v', 'ON_ERROR_STOP=1', '-d', 'bg_d'],
                         input=dump.stdout, capture_output=True, text=True)
    report(dump.returncode == 0 and res.returncode == 0, 'pg_dump bg_a | psql bg_d', dump.stderr + res.stderr)
    ld, la = Heard('bg_d'), Heard('bg_a')
    report(ld.until(lambda: ld.has('restored', 1), due - time.time() + 25),
           'the restored database\'s scheduled event is announced')
    report(la.until(lambda: la.has('restored', 1), due - time.time() + 5), 'and the original\'s')
    ld.close()
    la.close()

    # ALTER EXTENSION UPDATE from 0.2.0 (no due times) to the current version
    new_db('bg_e', ext=False)
    with connect('bg_e') as c:
        c.execute("CREATE EXTENSION a2 VERSION '0.2.0'")
        c.execute('ALTER EXTENSION a2 UPDATE')
        due = time.time() + 3
        schedule(c, 'updated', due)
    report(due_heard('bg_e', 'updated', due), 'after ALTER EXTENSION UPDATE a scheduled event is announced')

    # DROP EXTENSION, then CREATE EXTENSION into another schema
    with connect('bg_e') as c:
        schedule(c, 'before-drop', time.time() + 600)
        c.execute('DROP EXTENSION a2')
        c.execute('CREATE SCHEMA other')
        c.execute('CREATE EXTENSION a2 SCHEMA other')
        due = time.time() + 3
        c.execute('SET search_path = other')
        schedule(c, 'other-schema', due)
    report(due_heard('bg_e', 'other-schema', due),
           'after DROP EXTENSION and CREATE EXTENSION a2 SCHEMA other, a scheduled event is announced')

    # a server restart: due events and a prepared append committed after it
    due = time.time() + 15
    for d, search in (('bg_a', 'public'), ('bg_d', 'public'), ('bg_e', 'other')):
        with connect(d) as c:
            c.execute('SET search_path = %s' % search)
            schedule(c, 'after-restart', due)
    c = connect('bg_e')
    c.execute('BEGIN')
    c.execute('SET LOCAL search_path = other')
    base.append(c, 'prepared:restart')
    c.execute("PREPARE TRANSACTION 'bg_restart'")
    c.close()
    admin.close()
    cl.stop()
    cl.start()
    heard = {d: Heard(d) for d in ('bg_a', 'bg_d', 'bg_e')}
    for d, lst in heard.items():
        report(lst.until(lambda: lst.has('after-restart', 1), due - time.time() + 20),
               'after a restart, %s\'s due event is announced' % d)
        lst.close()
    ctl = connect('bg_e')
    ctl.execute('SET search_path = other')
    lst = Heard('bg_e')
    ctl.execute("COMMIT PREPARED 'bg_restart'")
    report(drained_heard(ctl, lst, [('prepared:restart', 1)]),
           'after a restart, a prepared append committed is announced')
    ctl.close()
    lst.close()
    cl.stop()


# ---------------------------------------------------------------------------
# capacity

def scheduler_count(admin):
    return one(admin, "SELECT count(*) FROM pg_stat_activity WHERE backend_type = 'a2 scheduler'")


def run_capacity(cl):
    cl.start()
    admin = connect('postgres')
    names = ['bg_cap%02d' % k for k in range(12)]
    for d in names:
        admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % d)
    # half with a2, half without; nothing scheduled anywhere
    for k, d in enumerate(names):
        new_db(d, ext=k % 2 == 0)

    # finding 13: a start with the default max_worker_processes (8)
    admin.close()
    cl.stop()
    off = cl.log_size()
    cl.start()
    admin = connect('postgres')
    # bounded poll: the launcher has looked at every database once none runs for 2 s
    quiet = 0
    end = time.time() + 60
    while time.time() < end and quiet < 20:
        quiet = quiet + 1 if scheduler_count(admin) == 0 else 0
        time.sleep(0.1)
    log = cl.log_since(off)
    report(quiet >= 20, 'after a start, the schedulers that looked at 14 databases have all left')
    report('could not start a background worker' not in log and 'WARNING' not in log,
           'no WARNING at start for databases with nothing scheduled (max_worker_processes = 8)',
           '\n'.join(ln for ln in log.splitlines() if 'WARNING' in ln)[:600])

    # finding 4: more databases with work than workers: each announced once one frees
    admin.execute('ALTER SYSTEM SET max_worker_processes = 5')    # 2 left for schedulers
    admin.close()
    cl.stop()
    cl.start()
    admin = connect('postgres')
    off = cl.log_size()
    for d in names[1::2]:
        with connect(d) as c:
            c.execute('CREATE EXTENSION a2')
    # 12 databases want a scheduler at once: more than the launcher's 8 slots
    with_a2 = names
    due = time.time() + 3
    for d in with_a2:
        with connect(d) as c:
            schedule(c, 'cap', due)
    listeners = {d: Heard(d) for d in with_a2}
    end = due + 60
    max_waiting = [0]
    while time.time() < end and not all(lst.has('cap', 1) for lst in listeners.values()):
        max_waiting[0] = max(max_waiting[0], notify_status(with_a2[0])['schedulers_waiting'] or 0)
        for lst in listeners.values():
            lst.pump(0.02)
    missing = [d for d, lst in listeners.items() if not lst.has('cap', 1)]
    report(not missing, '12 databases with work, 8 slots and 2 free workers: each one\'s event is announced once a worker frees',
           repr(missing))
    report(max_waiting[0] > 0, 'a2_notify_status() showed databases waiting for a worker meanwhile (schedulers_waiting, at most %d)'
           % max_waiting[0])
    report(F.wait_for(lambda: notify_status(with_a2[0])['schedulers_waiting'] == 0, 10),
           '... and none once every one was served', repr(notify_status(with_a2[0])))
    log = cl.log_since(off)
    waits = [ln for ln in log.splitlines() if 'waiting for a background worker' in ln]
    report(1 <= len(waits) <= 2, 'the wait is said in one log line, not one per round',
           '\n'.join(waits)[:600])
    for lst in listeners.values():
        lst.close()
    for d in names:
        admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % d)

    # finding 4, literally: 65 databases with work due at one time (0.3.0
    # had 64 slots in its code, so the 65th never got a scheduler); with
    # max_worker_processes = 72 the launcher keeps 72 slots, and all 65
    # schedulers run at once
    admin.execute('ALTER SYSTEM SET max_worker_processes = 72')
    admin.close()
    cl.stop()
    cl.start()
    admin = connect('postgres')
    many = ['bg_many%02d' % k for k in range(65)]
    for d in many:
        new_db(d)
    due = time.time() + 15 + 0.2 * len(many)
    for d in many:
        with connect(d) as c:
            schedule(c, 'many', due)
    peak = 0
    while time.time() < due - 1:
        peak = max(peak, notify_status(many[0])['schedulers'] or 0)
        if peak >= len(many):
            break
        time.sleep(0.1)
    report(peak >= len(many), '65 databases with work due: 65 schedulers run at once (a2_notify_status().schedulers reached %d)' % peak)
    listeners = {d: Heard(d) for d in many}
    end = due + 30
    while time.time() < end and not all(lst.has('many', 1) for lst in listeners.values()):
        for lst in listeners.values():
            lst.pump(0.01)
    missing = [d for d, lst in listeners.items() if not lst.has('many', 1)]
    report(not missing, 'each of the 65 databases\' events is announced when due, the 65th too', repr(missing))
    for lst in listeners.values():
        lst.close()
    for d in many:
        admin.execute('DROP DATABASE IF EXISTS %s WITH (FORCE)' % d)
    admin.execute('ALTER SYSTEM RESET max_worker_processes')
    admin.close()
    cl.stop()


def notify_status(db):
    """a2_notify_status() as a dict, asked in db (a database with a2)."""
    with connect(db) as c:
        cur = c.execute('SELECT * FROM a2_notify_status()')
        return dict(zip([d.name for d in cur.description], cur.fetchone()))


def main():
    modes = {'store': run_store, 'batch': run_batch, 'lifecycle': run_lifecycle, 'capacity': run_capacity}
    if len(sys.argv) != 2 or sys.argv[1] not in modes:
        print(__doc__)
        return 2
    cl = F.Cluster()
    t0 = time.time()
    try:
        modes[sys.argv[1]](cl)
    except Exception as e:          # noqa: BLE001 -- one failed check, then the summary
        import traceback
        traceback.print_exc()
        report(False, 'background %s ran to the end' % sys.argv[1], repr(e))
    print('# background %s: %.0f s' % (sys.argv[1], time.time() - t0))
    print('%d passed, %d failed' % (F.passed, F.failed))
    return 1 if F.failed else 0


if __name__ == '__main__':
    sys.exit(main())
