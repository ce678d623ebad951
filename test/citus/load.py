#!/usr/bin/python3
"""test/citus/load.py: the client load of test/citus/moves.sh and
node_restart.sh, and the checks after it.

  load.py run    --sessions S1,S2,... [--pairs A:B,...] --prefix P
                 --log FILE --progress FILE --stop FILE [--clients 4]
                 [--max-seconds 600] [--retry-seconds 120]
  load.py verify --sessions ... [--pairs ...] --log FILE [--summary FILE]

run: CLIENTS threads, each with its own connection to the coordinator
(libpq's environment: PGHOST, PGPORT, ...), loop over the operations
append, append, cycle (and pair when --pairs is given) until the file
--stop exists, rotating over the sessions:
  append  a2_append of two events with supplied ids
  cycle   a2_claim of a session, then a2_complete of every claimed event
          with one child of a supplied id (settled, so that children do
          not become work)
  pair    one transaction appending one event (supplied id) to each of
          two sessions on different workers: Citus commits it with
          two-phase commit
Each client calls a2 its own way: clients 0 and 1 send literal SQL
(delegated to the shard's node), client 2 sends parameters (extended
protocol, prepared after five calls; delegated too), client 3 wraps the
call in an expression (`... || '{}'`), so the coordinator runs a2 and
routes each of its statements.

A call that fails with a retryable SQLSTATE is retried with the same
arguments (so with the same event ids) until it is acknowledged or
--retry-seconds have passed; any other error ends the call. Every call
is written to --log as one JSON line: its operation, arguments (session,
ids), outcome ("ok", "error": a non-retryable error, "gave-up"), the
result an acknowledged call returned (indexes, ids, attempts) and every
error on the way (SQLSTATE, message, phase, time), with the warnings the
server sent. --progress holds the number of acknowledged calls and of
errors so far, rewritten after each call and error, so that a
controller can wait for progress instead of sleeping, and the number of
clients retrying a call at that moment ("acked errors retrying").

The retryable set is the one docs/distributed.md documents: 40001,
40P01, 57P01 and the connection class 08 (08006, 08000, 08003, ...), and
XX000 when Citus lost a node while it committed (at the COMMIT of a
transaction block, or "could not commit transaction ..." at the end of
an autocommit call; anywhere else XX000 is not retryable); a
connection lost without a SQLSTATE from the server counts as 08006 and
is marked client-side.

verify: reads the log and the sessions' events (through the coordinator)
and checks
  dense      every session's indexes are 1..n
  appends    every acknowledged append's events are stored at the
             indexes it returned, with its ids and payloads
  completes  every acknowledged completion's event is processed by that
             attempt and its children are stored at the returned indexes
  no phantom every stored event is one a call of the log sent
  errors     every SQLSTATE seen is in the retryable set
  resolved   no call gave up
  XX000      no transaction whose COMMIT failed with XX000 had committed
and reports, for the record, each SQLSTATE with its count (per operation
and phase), the calls that failed but had committed (ambiguous outcomes:
their ids are stored although no attempt was acknowledged), and the calls
acknowledged on a retry whose events an earlier, failed attempt had
already written (created_at before the last error: the retry was an
exact replay). Exits 1 when a check fails.
"""

import argparse
import collections
import json
import os
import sys
import threading
import time

import psycopg
from psycopg.types.json import Jsonb

RETRYABLE = {'40001', '40P01', '57P01'}


# Citus's report that it lost a node while it committed: at the COMMIT of
# a transaction block, or at the end of an autocommit call (which commits
# inside the statement)
COMMIT_LOST = ('could not commit transaction', 'failed to commit transaction')


def retryable(state, phase, message=''):
    """The documented set; XX000 only when Citus lost a node while it
    committed: at a COMMIT, or with its commit-failure message."""
    return (state in RETRYABLE or (state or '').startswith('08')
            or (state == 'XX000' and (phase == 'commit'
                                      or any(m in (message or '') for m in COMMIT_LOST))))


def now_ms():
    return int(time.time() * 1000)


class Client:
    """One client thread: its connection, its way of calling a2."""

    def __init__(self, n, args, shared):
        self.n = n
        self.args = args
        self.shared = shared
        self.conn = None
        self.notices = []
        self.style = ('literal', 'literal', 'params', 'coordinator')[n % 4]
        self.holder = '%sh%d' % (args.prefix, n)

    # -- connection ----------------------------------------------------------
    def connection(self):
        if self.conn is not None and (self.conn.closed or self.conn.broken):
            self.conn = None
        if self.conn is None:
            cursor = psycopg.ClientCursor if self.style == 'literal' else psycopg.Cursor
            conn = psycopg.connect('', autocommit=True, cursor_factory=cursor,
                                   application_name='a2-citus-load-%d' % self.n)
            conn.add_notice_handler(self.on_notice)
            self.conn = conn
        return self.conn

    def on_notice(self, diag):
        if diag.severity_nonlocalized in ('WARNING', 'ERROR'):
            self.notices.append('%s %s: %s' % (diag.severity_nonlocalized, diag.sqlstate,
                                                diag.message_primary))

    def a2(self, conn, fn, *params):
        """SELECT fn(params) the client's way; returns the jsonb result."""
        ph = ', '.join(['%s'] * len(params))
        if self.style == 'coordinator':
            q = "SELECT %s(%s) || '{}'::jsonb" % (fn, ph)
        else:
            q = 'SELECT %s(%s)' % (fn, ph)
        return conn.execute(q, params).fetchone()[0]

    # -- one call, retried ----------------------------------------------------
    def call(self, rec, body):
        """Run body(conn, rec) until acknowledged, a non-retryable error or
        the retry budget; fills rec's outcome and errors."""
        try:
            return self.try_call(rec, body)
        finally:
            self.shared.retrying(self.n, False)

    def try_call(self, rec, body):
        start = time.monotonic()
        backoff = 0.01
        rec['errors'] = []
        while True:
            self.notices = []
            rec['phase'] = 'connect'
            conn = None
            try:
                conn = self.connection()
                result = body(conn, rec)
                rec['outcome'] = 'ok'
                rec['attempts'] = len(rec['errors']) + 1
                if self.notices:
                    rec['notices'] = self.notices
                return result
            except psycopg.Error as e:
                state = e.sqlstate
                client_side = False
                if state is None:
                    # no SQLSTATE from the server: the connection was lost
                    # (or could not be made)
                    state = '08001' if rec['phase'] == 'connect' else '08006'
                    client_side = True
                err = {'sqlstate': state, 'phase': rec['phase'], 'at': now_ms(),
                       'message': (str(e).splitlines() or [''])[0][:300]}
                if client_side:
                    err['clientSide'] = True
                if self.notices:
                    err['notices'] = self.notices
                rec['errors'].append(err)
                self.shared.error()
                if conn is not None and (conn.closed or conn.broken):
                    self.conn = None
                elif conn is not None and conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    try:
                        conn.rollback()
                    except psycopg.Error:
                        self.conn = None
                if not retryable(state, rec['phase'], err['message']):
                    rec['outcome'] = 'error'
                    return None
                if time.monotonic() - start > self.args.retry_seconds:
                    rec['outcome'] = 'gave-up'
                    return None
                self.shared.retrying(self.n, True)
                time.sleep(backoff)
                backoff = min(backoff * 2, 0.25)

    # -- operations -------------------------------------------------------------
    def op_append(self, seq, session):
        ids = ['%s%d-%d-%d' % (self.args.prefix, self.n, seq, k) for k in range(2)]
        events = [{'id': i, 'type': 'load', 'payload': {'c': self.n, 'n': seq, 'k': k}}
                  for k, i in enumerate(ids)]
        rec = {'op': 'append', 'client': self.n, 'seq': seq, 'session': session, 'ids': ids}

        def body(conn, rec):
            rec['phase'] = 'append'
            r = self.a2(conn, 'a2_append', session, Jsonb(events))
            return [(e['index'], e['id']) for e in r['events']]
        r = self.call(rec, body)
        if r is not None:
            rec['stored'] = r
        return rec

    def op_pair(self, seq, a, b):
        ids = ['%s%d-%d-p%d' % (self.args.prefix, self.n, seq, k) for k in range(2)]
        rec = {'op': 'pair', 'client': self.n, 'seq': seq, 'sessions': [a, b], 'ids': ids}

        def body(conn, rec):
            out = []
            with conn.transaction():
                for k, s in enumerate((a, b)):
                    rec['phase'] = 'append %d' % (k + 1)
                    ev = [{'id': ids[k], 'type': 'pair', 'payload': {'c': self.n, 'n': seq}}]
                    r = self.a2(conn, 'a2_append', s, Jsonb(ev))
                    out.append((s, r['events'][0]['index'], r['events'][0]['id']))
                rec['phase'] = 'commit'
            return out
        r = self.call(rec, body)
        if r is not None:
            rec['stored'] = r
        return rec

    def op_cycle(self, seq, session):
        recs = []
        rec = {'op': 'claim', 'client': self.n, 'seq': seq, 'session': session}

        def claim(conn, rec):
            rec['phase'] = 'claim'
            return self.a2(conn, 'a2_claim', session, self.holder, 60000)
        r = self.call(rec, claim)
        recs.append(rec)
        if r is None:
            return recs
        rec['result'] = r['outcome']
        if r['outcome'] != 'claimed':
            return recs
        rec['claimed'] = [(e['index'], e['attemptCount']) for e in r['events']]
        for e in r['events']:
            idx, attempt = e['index'], e['attemptCount']
            cid = '%sc%d-%d-%d' % (self.args.prefix, self.n, seq, idx)
            children = [{'id': cid, 'type': 'child', 'payload': {'of': idx}, 'settled': True}]
            crec = {'op': 'complete', 'client': self.n, 'seq': seq, 'session': session,
                    'index': idx, 'attempt': attempt, 'ids': [cid]}

            def complete(conn, rec, idx=idx, attempt=attempt, children=children):
                rec['phase'] = 'complete'
                return self.a2(conn, 'a2_complete', session, idx, attempt, Jsonb(children))
            c = self.call(crec, complete)
            if c is not None:
                crec['result'] = c['outcome']
                if c['outcome'] == 'completed':
                    crec['stored'] = [(x['index'], x['id']) for x in c['events']]
            recs.append(crec)
            if self.shared.stopped():
                break
        return recs

    def run(self):
        ops = ['append', 'append', 'cycle'] + (['pair'] if self.args.pairs else [])
        sessions = self.args.sessions
        i = 0
        while not self.shared.stopped():
            op = ops[i % len(ops)]
            seq = i
            if op == 'append':
                recs = [self.op_append(seq, sessions[(self.n + i) % len(sessions)])]
            elif op == 'cycle':
                recs = self.op_cycle(seq, sessions[(self.n * 3 + i) % len(sessions)])
            else:
                a, b = self.args.pairs[(self.n + i) % len(self.args.pairs)]
                recs = [self.op_pair(seq, a, b)]
            for rec in recs:
                rec['style'] = self.style
                self.shared.record(rec)
            i += 1
        if self.conn is not None:
            self.conn.close()


class Shared:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.log = open(args.log, 'w')
        self.acked = 0
        self.errors = 0
        self.in_retry = set()
        self.deadline = time.monotonic() + args.max_seconds
        self.timed_out = False

    def stopped(self):
        if os.path.exists(self.args.stop):
            return True
        if time.monotonic() > self.deadline:
            self.timed_out = True
            return True
        return False

    def error(self):
        with self.lock:
            self.errors += 1
            self.progress()

    def retrying(self, client, yes):
        with self.lock:
            if yes != (client in self.in_retry):
                if yes:
                    self.in_retry.add(client)
                else:
                    self.in_retry.discard(client)
                self.progress()

    def record(self, rec):
        with self.lock:
            self.log.write(json.dumps(rec) + '\n')
            self.log.flush()
            if rec.get('outcome') == 'ok':
                self.acked += 1
            self.progress()

    def progress(self):
        tmp = self.args.progress + '.tmp'
        with open(tmp, 'w') as f:
            f.write('%d %d %d\n' % (self.acked, self.errors, len(self.in_retry)))
        os.replace(tmp, self.args.progress)


def run(args):
    shared = Shared(args)
    shared.progress()
    threads = [threading.Thread(target=Client(n, args, shared).run, name='client-%d' % n)
               for n in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    shared.log.close()
    if shared.timed_out:
        print('load: stopped by --max-seconds, not by the stop file', file=sys.stderr)
        return 1
    return 0


# -- verify ----------------------------------------------------------------------

def verify(args):
    recs = [json.loads(line) for line in open(args.log)]
    sessions = set(args.sessions)
    for a, b in args.pairs:
        sessions.update((a, b))
    with psycopg.connect('', autocommit=True) as conn:
        rows = conn.execute(
            'SELECT session_id, idx, event_id, payload, created_at, processed_by_attempt'
            '  FROM a2_events WHERE session_id = ANY(%s)', (sorted(sessions),)).fetchall()
    stored = {}          # (session, idx) -> row
    by_id = {}           # (session, event_id) -> row
    for r in rows:
        stored[(r[0], r[1])] = r
        by_id[(r[0], r[2])] = r
    failures = []
    info = []

    # dense
    per = collections.defaultdict(list)
    for s, i in stored:
        per[s].append(i)
    gaps = [s for s, idx in per.items() if sorted(idx) != list(range(1, len(idx) + 1))]
    if gaps:
        failures.append('dense: %d session(s) with a gap or duplicate: %s' % (len(gaps), ', '.join(sorted(gaps)[:5])))

    # what the calls sent: (session, id) -> the record
    sent = {}
    for rec in recs:
        if rec['op'] == 'append':
            for i in rec['ids']:
                sent[(rec['session'], i)] = rec
        elif rec['op'] == 'pair':
            for s, i in zip(rec['sessions'], rec['ids']):
                sent[(s, i)] = rec
        elif rec['op'] == 'complete':
            sent[(rec['session'], rec['ids'][0])] = rec

    bad_ack = []
    acked_events = 0
    for rec in recs:
        if rec.get('outcome') != 'ok' or 'stored' not in rec:
            continue
        if rec['op'] == 'pair':
            triples = rec['stored']
        else:
            triples = [(rec['session'], idx, i) for idx, i in rec['stored']]
        for s, idx, i in triples:
            row = stored.get((s, idx))
            acked_events += 1
            if row is None or row[2] != i:
                bad_ack.append('%s %s#%d (%s): stored %s' % (rec['op'], s, idx, i, row and row[2]))
        if rec['op'] == 'append':
            if [i for _, i in rec['stored']] != rec['ids']:
                bad_ack.append('append %s: returned ids %s, sent %s' % (rec['session'], rec['stored'], rec['ids']))
            for k, (idx, i) in enumerate(rec['stored']):
                row = stored.get((rec['session'], idx))
                if row is not None and row[3] != {'c': rec['client'], 'n': rec['seq'], 'k': k}:
                    bad_ack.append('append %s#%d: payload %s' % (rec['session'], idx, row[3]))
        if rec['op'] == 'complete':
            row = stored.get((rec['session'], rec['index']))
            if row is None or row[5] != rec['attempt']:
                bad_ack.append('complete %s#%d attempt %d: processed_by_attempt %s'
                               % (rec['session'], rec['index'], rec['attempt'], row and row[5]))
    if bad_ack:
        failures.append('acknowledged calls not stored as returned (%d): %s' % (len(bad_ack), '; '.join(bad_ack[:5])))

    phantom = [k for k in by_id if k not in sent]
    if phantom:
        failures.append('%d stored event(s) no call sent: %s' % (len(phantom), phantom[:5]))

    # outcomes, errors, ambiguity
    outcomes = collections.Counter((r['op'], r.get('outcome')) for r in recs)
    states = collections.Counter()     # (SQLSTATE, op, phase) -> count
    samples = {}                        # (SQLSTATE, op, phase) -> a message
    unlisted = collections.Counter()   # the same keys, errors outside the set
    for rec in recs:
        for e in rec.get('errors', []):
            key = (e['sqlstate'] + ('(client)' if e.get('clientSide') else ''), rec['op'], e['phase'])
            states[key] += 1
            samples.setdefault(key, e['message'])
            if not retryable(e['sqlstate'], e['phase'], e['message']):
                unlisted[key] += 1
                samples[key] = e['message']
    for key, c in sorted(unlisted.items()):
        st, op, phase = key
        failures.append('SQLSTATE %s seen %d time(s) (%s at %s) is not retryable-documented (%s)'
                            % (st, c, op, phase, samples[key]))
    gave_up = [r for r in recs if r.get('outcome') == 'gave-up']
    if gave_up:
        failures.append('%d call(s) still failing after --retry-seconds: %s' % (len(gave_up), gave_up[0]['errors'][-1]))

    ambiguous_failed = []   # not acknowledged, but written
    lost_failed = 0         # not acknowledged, not written
    replayed = []           # acknowledged on a retry that replayed an earlier attempt's write
    for rec in recs:
        if rec['op'] not in ('append', 'pair', 'complete'):
            continue
        keys = list(zip(rec['sessions'], rec['ids'])) if rec['op'] == 'pair' else \
            [(rec['session'], i) for i in rec['ids']]
        have = [by_id.get(k) for k in keys]
        if rec.get('outcome') != 'ok':
            if all(h is not None for h in have):
                ambiguous_failed.append(rec)
            elif any(h is not None for h in have):
                failures.append('%s: a part of one call is stored: %s' % (rec['op'], keys))
            else:
                lost_failed += 1
        elif rec['errors'] and all(h is not None for h in have):
            last_error = rec['errors'][-1]['at']
            if all(h[4] < last_error for h in have):
                replayed.append(rec)
                # the documentation says such a COMMIT rolled back
                if any(e['sqlstate'] == 'XX000' and e['phase'] == 'commit' for e in rec['errors']):
                    failures.append('%s %s: COMMIT failed with XX000, but had committed' % (rec['op'], keys))
    errors_total = sum(states.values())
    report = {
        'calls': len(recs),
        'outcomes': {'%s %s' % k: v for k, v in sorted(outcomes.items())},
        'sessions': len(per),
        'events': len(rows),
        'ackedEvents': acked_events,
        'errors': errors_total,
        'sqlstates': {'%s %s/%s' % k: v for k, v in sorted(states.items())},
        'retriedAndAcked': sum(1 for r in recs if r.get('outcome') == 'ok' and r['errors']),
        'replayedAfterAmbiguousFailure': [(r['op'], r.get('session') or r.get('sessions'), r['errors'][-1]['sqlstate'],
                                           r['errors'][-1]['phase']) for r in replayed],
        'failedButCommitted': [(r['op'], r.get('session') or r.get('sessions'), r['errors'][-1]['sqlstate'])
                               for r in ambiguous_failed],
        'failedNotCommitted': lost_failed,
        'warnings': collections.Counter(n for r in recs for n in r.get('notices', [])).most_common(5),
        'failures': failures,
    }
    if args.summary:
        with open(args.summary, 'w') as f:
            json.dump(report, f, indent=1)
    print('load: %d calls (%s), %d sessions dense=%s, %d events, %d acknowledged events'
          % (report['calls'], ', '.join('%s=%d' % kv for kv in report['outcomes'].items()),
             report['sessions'], not gaps, report['events'], acked_events))
    print('load: %d errors: %s' % (errors_total, ', '.join('%s=%d' % kv for kv in report['sqlstates'].items()) or 'none'))
    for key, msg in sorted(samples.items()):
        print('load:   %s %s/%s e.g. %s' % (key + (msg,)))
    print('load: %d call(s) acknowledged after a retry, %d of them exact replays of a failed attempt\'s write; '
          '%d failed call(s) had committed, %d had not'
          % (report['retriedAndAcked'], len(replayed), len(ambiguous_failed), lost_failed))
    for r in replayed:
        print('load:   replay: %s %s after %s at %s' % (r['op'], r.get('session') or r.get('sessions'),
                                                       r['errors'][-1]['sqlstate'], r['errors'][-1]['phase']))
    for w, c in report['warnings']:
        print('load:   warning x%d: %s' % (c, w))
    for f in failures:
        print('load: FAIL %s' % f)
    return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description='a2 load under Citus operations')
    p.add_argument('mode', choices=('run', 'verify'))
    p.add_argument('--sessions', required=True)
    p.add_argument('--pairs', default='')
    p.add_argument('--prefix', default='L')
    p.add_argument('--clients', type=int, default=4)
    p.add_argument('--log', required=True)
    p.add_argument('--progress')
    p.add_argument('--stop')
    p.add_argument('--summary')
    p.add_argument('--max-seconds', type=float, default=600)
    p.add_argument('--retry-seconds', type=float, default=120)
    args = p.parse_args()
    args.sessions = [s for s in args.sessions.split(',') if s]
    args.pairs = [tuple(x.split(':')) for x in args.pairs.split(',') if x]
    if args.mode == 'run':
        if not args.progress or not args.stop:
            p.error('run needs --progress and --stop')
        return run(args)
    return verify(args)


if __name__ == '__main__':
    sys.exit(main())
