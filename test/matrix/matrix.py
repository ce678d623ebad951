#!/usr/bin/python3
"""test/matrix/matrix.py: the generated isolation matrix (SPEC 7.2, issue 15).

Every ordered pair of a2 operations runs in two concurrent transactions T1
and T2 under READ COMMITTED, REPEATABLE READ and SERIALIZABLE, the steps
interleaved T1 step 1, T2 step 1, T1 step 2, T2 step 2, then the commits:
in either order under SERIALIZABLE; under READ COMMITTED and REPEATABLE
READ only T1 first (--both-orders for both), because there a commit cannot
fail and every statement has finished or waits for the other transaction
when the commits start, so the other order runs the very same case.  Two
layouts:

  same   both transactions work on session A; each optionally first holds a
         claim of A, so a transaction is [op] or [claim, op]; T1 also holds
         one taken with a2_claim_next ([claim_next, op]).
  cross  sessions A and B with the locks crossing: T1 = [p1 on A, op1 on B],
         T2 = [p2 on B, op2 on A], p = the op itself or a claim, for every
         pair in which at least one op is a read that must never wait
         (read_state, presence_read, claim_next).  Two writers are left
         out: transactions that write A and B in opposite orders deadlock on
         the session locks by their own choice.

Every case starts from the fixture of test/matrix/fixture.sql (per session:
event 1 leased at attempt 1 and expired, event 2 behind it in its lane, a
dead letter at 3, a snapshot head, a pinned history checkpoint, a live and
an expired presence participant) at a2.now = NOW.  The operations' arguments
(op_sql) make the pairs meet: both transactions append the same ids (a
retry racing the original), complete/fail/renew/caused-append event 1 at
the attempt their own claim took or else the stale attempt 1, write the
same snapshot index and the same presence participant.

A step that blocks is detected (pg_blocking_pids names the other
transaction's backend) and the schedule goes on with the other
transaction, as isolationtester does; deadlock_timeout is 50ms, so a real
deadlock surfaces at once as 40P01.  Nothing relies on timing.

The oracle runs the same operations one at a time, in the orders that keep
each transaction's program order, on fresh copies of the fixture inside a
transaction it rolls back (each operation in a savepoint).  A case passes
when
  - no 40P01; no 40001 under READ COMMITTED, nor for an exact replay of an
    append (SPEC 7.2; under SERIALIZABLE when it is the transaction's first
    step); any other error (a contract error
    Z2001/Z2002/Z2003 included) only where a serial order gives it too;
  - every result (JSON, session ids normalized) is what one serial order
    gives, an order that respects real time: a step that waited for the
    other transaction's commit (any level), that started after it (READ
    COMMITTED) or whose whole transaction started after it (REPEATABLE
    READ, SERIALIZABLE) comes after all of the other's steps; when a
    transaction failed (40001 under REPEATABLE READ/SERIALIZABLE, or an
    error a serial order explains) the other one's results are its results
    alone; under REPEATABLE READ and SERIALIZABLE a plain read
    (read_state, presence_read) may also answer from a transaction snapshot
    taken before the other transaction committed;
  - the sessions' final state is that serial order's final state (so a
    failed transaction wrote nothing; presence that has expired by then is
    left out), and the invariants of
    test/stress/invariants.sql hold.
a2_claim_next passes over rows other transactions hold (SKIP LOCKED, as
documented): when its result is explained no other way, the oracle lets it
skip sessions (an empty answer, or one session claimed with a2_claim).

Usage: matrix.py [--levels rc,rr,ser] [--filter SUBSTR] [--trace] [--limit N] [--both-orders]
Connects with the libpq environment (PGHOST, PGPORT, PGDATABASE, ...); the
database needs a2 and test/matrix/fixture.sql (matrix_prepare() done).
Prints one FAIL line per failing case (with what happened, step by step),
the number of cases per level and a summary of the causes; exits 1 on any
failure.
"""
import argparse
import itertools
import json
import os
import select
import sys
import time

from psycopg import pq

NOW = '2026-01-01T01:00:00.000Z'
NOW_MS = 1767229200000				# NOW in epoch milliseconds
LEVELS = {'rc': 'READ COMMITTED', 'rr': 'REPEATABLE READ', 'ser': 'SERIALIZABLE'}
OPS = ['append', 'caused_append', 'claim', 'claim_next', 'renew', 'complete', 'fail',
       'redrive', 'cancel', 'put_snapshots', 'read_state', 'presence_set', 'presence_read',
       'drop_session', 'claim_queues']
READERS = {'read_state', 'presence_read', 'claim_next'}
SNAPSHOT_READS = {'read_state', 'presence_read'}
RETRY = '40001'
STUCK_AFTER = 30.0			# seconds: no step resolves this slowly unless hung


def lit(s):
	return "'" + s.replace("'", "''") + "'"


def jlit(v):
	return lit(json.dumps(v))


# --- connections -------------------------------------------------------------

class Result:
	__slots__ = ('sqlstate', 'message', 'values')

	def __init__(self):
		self.sqlstate = None
		self.message = None
		self.values = []			# the first column of each statement's first row

	@property
	def value(self):
		return self.values[-1] if self.values else None


class Conn:
	"""A libpq connection driven without blocking (psycopg.pq)."""

	def __init__(self, setup=()):
		self.pg = pq.PGconn.connect(b'')
		if self.pg.status != pq.ConnStatus.OK:
			sys.exit('matrix: cannot connect: %s'
					 % self.pg.error_message.decode(errors='replace'))
		self.pid = self.pg.backend_pid
		for sql in setup:
			self.must(sql)

	def send(self, sql):
		self.pg.send_query(sql.encode())
		while self.pg.flush() == 1:
			select.select([], [self.pg.socket], [], 1.0)

	def ready(self):
		self.pg.consume_input()
		return not self.pg.is_busy()

	def wait(self, timeout=None):
		"""Wait for the query in flight; True once its results are in."""
		deadline = None if timeout is None else time.monotonic() + timeout
		while not self.ready():
			left = None if deadline is None else deadline - time.monotonic()
			if left is not None and left <= 0:
				return False
			select.select([self.pg.socket], [], [], left)
		return True

	def collect(self):
		"""The results of the finished query: its first error, if any."""
		out = Result()
		while True:
			res = self.pg.get_result()
			if res is None:
				return out
			if res.status == pq.ExecStatus.FATAL_ERROR:
				if out.sqlstate is None:
					out.sqlstate = (res.error_field(pq.DiagnosticField.SQLSTATE) or b'?').decode()
					out.message = (res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
								   or b'').decode(errors='replace')
			elif res.status == pq.ExecStatus.TUPLES_OK:
				v = res.get_value(0, 0) if res.ntuples > 0 else None
				out.values.append(None if v is None else v.decode())

	def run(self, sql):
		self.send(sql)
		self.wait()
		return self.collect()

	def must(self, sql):
		r = self.run(sql)
		if r.sqlstate:
			sys.exit('matrix: %s failed: %s %s' % (sql[:200], r.sqlstate, r.message))
		return r


# --- operations ----------------------------------------------------------------

class TxState:
	"""What a transaction knows from its own earlier results."""

	def __init__(self, x, sids, layout):
		self.x = x					# 1 or 2
		self.sids = sids			# {'A': session id, 'B': ...}
		self.layout = layout
		self.attempts = {}			# (session id, index) -> the attempt it claimed

	def attempt(self, sid):
		"""The attempt of event 1 this transaction holds; 1 (stale once anyone
		claims it again) when it holds none."""
		return self.attempts.get((sid, 1), 1)

	def learn(self, op, value):
		if not value or op not in ('claim', 'claim_next', 'claim_queues'):
			return
		doc = json.loads(value)
		groups = [doc.get('events') or []] if op in ('claim', 'claim_queues') else \
			[c['events'] for c in doc.get('claims') or []]
		for events in groups:
			for e in events:
				self.attempts[(e['sessionId'], e['index'])] = e['attemptCount']


def op_sql(op, target, tx, skip=None):
	"""The statement of one step.  skip (oracle only, claim_next only): the
	targets a claim_next that passed over the others claims, as a2_claim."""
	x, s = tx.x, tx.sids[target]
	ns, w, a = s + ':ns', 'w%d' % tx.x, tx.attempt(s)
	if op == 'append':				# the same ids in both: a retry races the original
		return 'SELECT a2_append(%s, %s)' % (lit(s), jlit([{'id': s + ':ap', 'type': 't'}]))
	if op == 'caused_append':
		return 'SELECT a2_append(%s, %s)' % (lit(s), jlit(
			[{'id': '%s:c%d' % (s, x), 'type': 't', 'cause': {'index': 1, 'attempt': a}}]))
	if op == 'claim':
		return 'SELECT a2_claim(%s, %s, 60000)' % (lit(s), lit(w))
	if op == 'claim_queues':		# 0.4.0: a claim limited to queues (the fixture's are 'default')
		return "SELECT a2_claim(%s, %s, 60000, NULL, '{}', '{default}')" % (lit(s), lit(w))
	if op == 'claim_next':
		if skip is None:
			return 'SELECT a2_claim_next(%s, 60000, %d)' % (
				lit(w), 1 if tx.layout == 'cross' else 10)
		rows = ', '.join('(%d, %s)' % (i, lit(tx.sids[t])) for i, t in enumerate(skip))
		return ("SELECT jsonb_build_object('claims', COALESCE(jsonb_agg(jsonb_build_object("
				"'sessionId', v.sid, 'events', r.r->'events') ORDER BY v.o), '[]'))"
				" FROM (VALUES %s) v(o, sid), LATERAL (SELECT a2_claim(v.sid, %s, 60000) r) r"
				" WHERE v.sid IS NOT NULL AND r.r->>'outcome' = 'claimed'"
				% (rows or '(0, NULL)', lit(w)))
	if op == 'renew':
		return 'SELECT a2_renew(%s, %s, %s, 60000)' % (
			lit(s), lit(w), jlit([{'index': 1, 'attempt': a}]))
	if op == 'complete':			# the same attempt returns the same children
		return 'SELECT a2_complete(%s, 1, %d, %s)' % (
			lit(s), a, jlit([{'id': '%s:k%d' % (s, a), 'type': 'child'}]))
	if op == 'fail':
		return "SELECT a2_fail(%s, 1, %d, 'err', 2)" % (lit(s), a)
	if op == 'redrive':
		return 'SELECT a2_redrive(%s, 3)' % lit(s)
	if op == 'cancel':				# event 1 (leased, stale) and the dead letter 3
		return "SELECT a2_cancel(%s, '{1,3}', 'stop')" % lit(s)
	if op == 'put_snapshots':
		return "SELECT a2_put_snapshots(%s, 'r', %s)" % (
			lit(s), jlit([{'index': 3, 'state': {'by': x}, 'pinEventIndexes': [1, 2]}]))
	if op == 'read_state':
		return "SELECT a2_read_state(%s, 'r')" % lit(s)
	if op == 'presence_set':		# the expired participant a read sweeps
		return "SELECT a2_presence_set(%s, 'old', %s, %s, %d, 60000)" % (
			lit(ns), jlit({'f': x}), lit(NOW), x)
	if op == 'presence_read':
		return 'SELECT a2_presence_read(%s)' % lit(ns)
	if op == 'drop_session':
		return 'SELECT a2_drop_session(%s, true)' % lit(s)
	raise ValueError(op)


def normalize(op, res, sids):
	"""A comparable text for a result: session ids replaced by A and B."""
	if res.sqlstate:
		return 'ERROR ' + res.sqlstate
	if not res.value:
		text = 'ok'
	else:
		doc = json.loads(res.value)
		if op == 'claim_next':
			doc.pop('retryAt', None)	# blind to uncommitted leases (README)
		text = json.dumps(doc, sort_keys=True)
	for name in sorted(sids, key=lambda t: -len(sids[t])):
		text = text.replace(sids[name], name)
	return text


# --- cases -------------------------------------------------------------------

class Case:
	def __init__(self, layout, t1, t2):
		self.layout = layout
		self.steps = (tuple(t1), tuple(t2))		# ((op, target), ...) per transaction
		self.targets = ('A', 'B') if layout == 'cross' else ('A',)

	def name(self):
		def tx(steps):
			return '[%s]' % ', '.join('%s(%s)' % st if self.layout == 'cross' else st[0]
									  for st in steps)
		return '%s T1%s T2%s' % (self.layout, tx(self.steps[0]), tx(self.steps[1]))


def generate():
	cases = []
	for op1, op2 in itertools.product(OPS, OPS):
		for p1, p2 in ((None, None), ('claim', None), (None, 'claim'), ('claim', 'claim'),
					   ('claim_next', None)):
			cases.append(Case('same', [(p1, 'A')] * bool(p1) + [(op1, 'A')],
							  [(p2, 'A')] * bool(p2) + [(op2, 'A')]))
	for op1, op2 in itertools.product(OPS, OPS):
		if op1 not in READERS and op2 not in READERS:
			continue
		for p1, p2 in itertools.product((None, 'claim'), repeat=2):
			cases.append(Case('cross', [(p1 or op1, 'A'), (op1, 'B')],
							  [(p2 or op2, 'B'), (op2, 'A')]))
	return cases


def interleavings(n1, n2):
	"""Every merge of T1's n1 and T2's n2 steps in program order."""
	for pos in itertools.combinations(range(n1 + n2), n1):
		seq, i, j = [], 0, 0
		for k in range(n1 + n2):
			if k in pos:
				seq.append((0, i))
				i += 1
			else:
				seq.append((1, j))
				j += 1
		yield tuple(seq)


# --- the oracle ----------------------------------------------------------------

class Oracle:
	"""Serial runs of a case's steps on fresh sessions, rolled back; each
	(case, order, skips) is run once and remembered."""

	def __init__(self):
		self.conn = Conn(("SET a2.now = '%s'" % NOW,))
		self.n = 0
		self.cache = {}
		self.runs = 0

	def get(self, case, seq, skips=()):
		"""Run the steps in the order seq ((tx, k), ...); a transaction whose
		step fails stops there.  Returns (outcomes {(tx, k): text}, failed
		{tx: k}, final state)."""
		key = (case.layout, case.steps, seq, skips)
		if key in self.cache:
			return self.cache[key]
		self.runs += 1
		self.n += 1
		sids = {t: 'o%d-%s' % (self.n, t) for t in case.targets}
		arr = 'ARRAY[%s]' % ', '.join(lit(v) for v in sids.values())
		c = self.conn
		c.must('BEGIN; SELECT matrix_setup(%s)' % arr)
		txs = [TxState(x + 1, sids, case.layout) for x in range(2)]
		skip = dict(skips)
		outcomes, failed = {}, {}
		for tx, k in seq:
			if tx in failed:
				continue
			op, target = case.steps[tx][k]
			res = c.run('SAVEPOINT s; %s; RELEASE SAVEPOINT s'
						% op_sql(op, target, txs[tx], skip.get((tx, k))))
			if res.sqlstate:
				c.must('ROLLBACK TO SAVEPOINT s')
				failed[tx] = k
			else:
				txs[tx].learn(op, res.value)
			outcomes[(tx, k)] = normalize(op, res, sids)
		st = c.must('SELECT matrix_state(%s, %d); ROLLBACK' % (arr, NOW_MS))
		out = (outcomes, failed, normalize('state', st, sids))
		self.cache[key] = out
		return out

	@staticmethod
	def skip_variants(case, txs=(0, 1)):
		"""claim_next steps passing over sessions: each claim_next of txs
		either as is, or claiming none or exactly one of the sessions."""
		spots = [(tx, k) for tx in txs for k, (op, _) in enumerate(case.steps[tx])
				 if op == 'claim_next']
		choices = [None, ()] + [(t,) for t in case.targets]
		for combo in itertools.product(choices, repeat=len(spots)):
			if any(ch is not None for ch in combo):
				yield tuple((spot, ch) for spot, ch in zip(spots, combo) if ch is not None)


# --- one concurrent run ---------------------------------------------------------

class Step:
	__slots__ = ('tx', 'k', 'op', 'target', 'after_commit', 'blocked', 'waited_commit',
				 'res', 'outcome')

	def __init__(self, tx, k, op, target):
		self.tx, self.k, self.op, self.target = tx, k, op, target
		self.after_commit = False	# started after the other transaction committed
		self.blocked = False		# waited for a lock the other transaction held
		self.waited_commit = False	# ... and the other one committed meanwhile
		self.res = None
		self.outcome = None


class Run:
	"""One case at one level with one commit order, and its verdict."""

	def __init__(self, matrix, case, level, first):
		self.m, self.case, self.level, self.first = matrix, case, level, first
		self.steps = [[Step(tx, k, op, t) for k, (op, t) in enumerate(case.steps[tx])]
					  for tx in (0, 1)]
		self.ended = [None, None]	# 'committed' | ('failed', Step or 'commit', sqlstate)
		self.trace = []
		self.done_order = []		# (tx, k) in the order the steps finished
		self.failures = []

	# --- driving ---

	def execute(self, sids):
		m = self.m
		txs = [TxState(x + 1, sids, self.case.layout) for x in range(2)]
		queue = []
		for k in range(max(len(self.steps[0]), len(self.steps[1]))):
			queue += [self.steps[tx][k] for tx in (0, 1) if k < len(self.steps[tx])]
		queue += [('end', self.first), ('end', 1 - self.first)]
		inflight = {}				# tx -> Step, 'commit' or 'rollback'
		began = [False, False]

		def owner(item):
			return item[1] if isinstance(item, tuple) else item.tx

		def finish(tx):
			item = inflight.pop(tx)
			res = m.tx[tx].collect()
			if not isinstance(item, Step):
				if res.sqlstate:
					self.ended[tx] = ('failed', 'commit', res.sqlstate)
					self.trace.append('T%d.%s %s' % (tx + 1, item, res.sqlstate))
				else:
					if item == 'commit':
						self.ended[tx] = 'committed'
					self.trace.append('T%d.%s' % (tx + 1, item))
				return
			other = 1 - tx
			item.waited_commit = item.blocked and (self.ended[other] == 'committed'
												   or inflight.get(other) == 'commit')
			item.res = res
			item.outcome = normalize(item.op, res, sids)
			self.done_order.append((tx, item.k))
			if res.sqlstate:
				self.trace.append('T%d.%s %s' % (tx + 1, item.op, res.sqlstate))
				self.ended[tx] = ('failed', item, res.sqlstate)
			else:
				self.trace.append('T%d.%s' % (tx + 1, item.op))
				txs[tx].learn(item.op, res.value)

		def settle():
			"""Until every statement in flight has finished or waits for the
			other transaction; commits first (what waited for one goes on)."""
			deadline = time.monotonic() + STUCK_AFTER
			for tx, item in sorted(inflight.items(), key=lambda kv: isinstance(kv[1], Step)):
				while True:
					if m.tx[tx].wait(0.002):
						finish(tx)
						break
					if m.blocked_by_other(tx):
						if isinstance(item, Step) and not item.blocked:
							item.blocked = True
							self.trace.append('T%d.%s waits' % (tx + 1, item.op))
						break
					if time.monotonic() > deadline:
						raise TimeoutError('T%d.%s does not finish and waits for no lock of T%d'
										   % (tx + 1, getattr(item, 'op', item), 2 - tx))

		while queue or inflight:
			pick = next((i for i, item in enumerate(queue)
						 if owner(item) not in inflight
						 and all(owner(q) != owner(item) for q in queue[:i])), None)
			if pick is None:
				# what is left waits for a blocked statement: let the server
				# resolve it (a deadlock ends in 40P01 after deadlock_timeout)
				deadline = time.monotonic() + STUCK_AFTER
				while not any(m.tx[tx].ready() for tx in inflight):
					if time.monotonic() > deadline:
						raise TimeoutError('both transactions wait and no deadlock is detected')
					select.select([m.tx[tx].pg.socket for tx in inflight], [], [], 0.5)
				for tx, item in sorted(inflight.items(),
									   key=lambda kv: isinstance(kv[1], Step)):
					if m.tx[tx].ready():
						finish(tx)
				settle()
				continue
			item = queue.pop(pick)
			tx = owner(item)
			if isinstance(item, tuple):
				what = 'commit' if self.ended[tx] is None else 'rollback'
				m.tx[tx].send(what.upper())
				inflight[tx] = what
			else:
				if self.ended[tx] is not None:
					continue		# the transaction failed: the rest is not run
				item.after_commit = self.ended[1 - tx] == 'committed'
				sql = op_sql(item.op, item.target, txs[tx])
				if not began[tx]:
					sql = 'BEGIN ISOLATION LEVEL %s; %s' % (LEVELS[self.level], sql)
					began[tx] = True
				m.tx[tx].send(sql)
				inflight[tx] = item
			settle()

	# --- judging ---

	def judge_errors(self):
		for tx in (0, 1):
			e = self.ended[tx]
			if not isinstance(e, tuple):
				continue
			_, where, code = e
			what = 'commit' if where == 'commit' else where.op
			if code == '40P01':
				self.failures.append(('deadlock (40P01)', 'T%d.%s' % (tx + 1, what)))
			elif code == RETRY and self.level == 'rc':
				self.failures.append(('40001 under READ COMMITTED', 'T%d.%s' % (tx + 1, what)))
			elif code == RETRY and where != 'commit' and where.op == 'append' \
					and self.replayed(tx, where):
				self.failures.append(('40001 for an exact replay of an append',
									  'T%d.append' % (tx + 1)))

	def replayed(self, tx, step):
		"""The other transaction had committed the same append when this one's
		append ran (or ran on after waiting for it): an exact replay, which
		must return the stored events.  Under SERIALIZABLE only when the
		append is its transaction's first step: after an earlier read the
		transaction may be the one a serialization failure must end."""
		if self.ended[1 - tx] != 'committed' or not (step.after_commit or step.waited_commit):
			return False
		if self.level == 'ser' and step.k > 0:
			return False
		return any(s.op == 'append' and s.target == step.target and s.res is not None
				   and not s.res.sqlstate for s in self.steps[1 - tx])

	def allowed(self, seq):
		"""Does the serial order seq respect real time?"""
		pos = {p: i for i, p in enumerate(seq)}
		for tx in (0, 1):
			other = 1 - tx
			if self.ended[other] != 'committed':
				continue
			last_other = pos[(other, len(self.steps[other]) - 1)]
			whole = self.level != 'rc' and self.steps[tx][0].after_commit
			for s in self.steps[tx]:
				if s.res is None:
					continue
				if (s.waited_commit or whole or (self.level == 'rc' and s.after_commit)) \
						and pos[(tx, s.k)] < last_other:
					return False
		return True

	def matches(self, outcomes, tx):
		"""The steps tx ran gave these results (a 40001 stands for anything).
		Under REPEATABLE READ and SERIALIZABLE a read (read_state,
		presence_read) answers from the transaction's snapshot: when that was
		taken before the other transaction committed, the read may also give
		what it gives with the transaction running alone."""
		alone = None
		for s in self.steps[tx]:
			if s.res is None or s.res.sqlstate == RETRY or outcomes.get((tx, s.k)) == s.outcome:
				continue
			if self.level == 'rc' or s.op not in SNAPSHOT_READS or self.steps[tx][0].after_commit:
				return False
			if alone is None:
				alone = self.m.oracle.get(self.case, tuple(
					(tx, k) for k in range(len(self.steps[tx]))))[0]
			if alone.get((tx, s.k)) != s.outcome:
				return False
		return True

	def candidates(self):
		"""Serial orders to try: the order in which the steps finished first,
		then all the others; then the same with claim_next skipping."""
		n1, n2 = len(self.steps[0]), len(self.steps[1])
		done = list(self.done_order)
		for tx in (0, 1):
			done += [(tx, k) for k in range(len(self.steps[tx])) if (tx, k) not in done]
		seqs = [tuple(done)] + [s for s in interleavings(n1, n2) if s != tuple(done)]
		for seq in seqs:
			yield seq, ()
		for skips in Oracle.skip_variants(self.case):
			for seq in seqs:
				yield seq, skips

	def explain(self, state):
		"""Find a serial order that gives every result and the final state."""
		oracle = self.m.oracle
		ok = [self.ended[tx] == 'committed' for tx in (0, 1)]
		results_only = None			# an order that gives the results, not the state
		if ok[0] and ok[1]:
			for seq, skips in self.candidates():
				if not self.allowed(seq):
					continue
				outcomes, failed, final = oracle.get(self.case, seq, skips)
				if failed or not (self.matches(outcomes, 0) and self.matches(outcomes, 1)):
					continue
				if final == state:
					return
				results_only = results_only or final
		else:
			# A failed transaction: its results up to the failure come from
			# some serial order (or from running alone); the other one's
			# results and the final state are the other one's alone.
			for tx in (0, 1):
				if ok[tx]:
					continue
				if not any(self.allowed(seq)
						   and self.matches(oracle.get(self.case, seq, skips)[0], tx)
						   for seq, skips in self.candidates()):
					return self.mismatch()
			if not any(ok):
				final = oracle.get(self.case, ())[2]
				if final == state:
					return
				results_only = final
			else:
				tx = ok.index(True)
				alone = tuple((tx, k) for k in range(len(self.steps[tx])))
				for skips in ((),) + tuple(Oracle.skip_variants(self.case, (tx,))):
					outcomes, failed, final = oracle.get(self.case, alone, skips)
					if failed or not self.matches(outcomes, tx):
						continue
					if final == state:
						return
					results_only = results_only or final
		if results_only is None:
			return self.mismatch()
		self.failures.append(('final state differs from the serial order that gives the results',
							  'got %s, want %s' % diff(state, results_only)))

	def mismatch(self):
		"""Say where the results differ from the closest serial order that
		respects real time, and what real time demanded."""
		best = None
		for seq in interleavings(len(self.steps[0]), len(self.steps[1])):
			outcomes = self.m.oracle.get(self.case, seq)[0]
			n = sum(outcomes.get((s.tx, s.k)) == s.outcome
					for tx in (0, 1) for s in self.steps[tx] if s.res is not None)
			key = (self.allowed(seq), n)
			if best is None or key > best[0]:
				best = (key, seq, outcomes)
		(allowed, _), seq, outcomes = best
		diffs = ['T%d.%s got %s, want %s' % ((s.tx + 1, s.op) + diff(s.outcome, outcomes.get(
			(s.tx, s.k), '(not run)'))) for tx in (0, 1) for s in self.steps[tx]
			if s.res is not None and s.outcome != outcomes.get((s.tx, s.k))]
		why = ['T%d.%s %s' % (s.tx + 1, s.op, 'waited for the commit of T%d' % (2 - s.tx)
							  if s.waited_commit else 'started after the commit of T%d' % (2 - s.tx))
			   for tx in (0, 1) for s in self.steps[tx]
			   if s.res is not None and self.ended[1 - tx] == 'committed'
			   and (s.waited_commit or s.after_commit)]
		self.failures.append(('results no serial order gives', '%s order %s: %s%s' % (
			'closest' if allowed else 'closest (not allowed by real time)',
			' '.join('T%d.%s' % (tx + 1, self.case.steps[tx][k][0]) for tx, k in seq),
			'; '.join(diffs) or 'same results, but real time forbids this order',
			' (real time: %s)' % ', '.join(why) if why else '')))


def diff(a, b, n=110):
	"""a and b from shortly before where they first differ."""
	i = 0
	while i < min(len(a), len(b)) and a[i] == b[i]:
		i += 1
	start = max(0, i - 30)

	def cut(t):
		return ('...' if start else '') + t[start:start + n] + ('...' if len(t) > start + n else '')
	return cut(a), cut(b)


# --- invariants ---------------------------------------------------------------

def invariant_function(conn, path):
	"""pg_temp.matrix_invariants(): the invariants of test/stress/invariants.sql
	that need no workload tables, as static queries (planned once) in one
	function; returns NULL, or each violated invariant with samples.  The
	file's own check_invariant() calls are run with a check_invariant() that
	records each invariant's name and query instead of counting."""
	text = open(path).read()
	start = text.index('SELECT pg_temp.check_invariant(')
	end = text.index('\\if :have_stress')
	body = '\n'.join(line for line in text[start:end].splitlines()
					 if not line.startswith('\\'))
	body = body.replace(":'max_failures'", "'2'")
	conn.must('CREATE TEMP TABLE matrix_checks (id serial, name text, query text)')
	conn.must('CREATE FUNCTION pg_temp.check_invariant(name text, violations_query text)'
			  ' RETURNS void LANGUAGE sql'
			  ' AS $$INSERT INTO matrix_checks (name, query) VALUES ($1, $2)$$')
	conn.must(body)
	checks = []
	n = int(conn.must('SELECT count(*) FROM matrix_checks').value)
	for i in range(1, n + 1):
		r = conn.must("SELECT name FROM matrix_checks WHERE id = %d;"
					  " SELECT query FROM matrix_checks WHERE id = %d" % (i, i))
		checks.append((r.values[0], r.values[1]))
	if len(checks) < 10:
		sys.exit('matrix: found only %d invariants in %s' % (len(checks), path))
	parts = ['CREATE FUNCTION pg_temp.matrix_invariants() RETURNS text LANGUAGE plpgsql AS'
			 ' $matrix$ DECLARE n bigint; sample text; out text; BEGIN']
	for name, query in checks:
		parts.append("SELECT count(*), string_agg(v, ' | ') FILTER (WHERE rn <= 3)"
					 " INTO n, sample FROM (SELECT v, row_number() OVER () AS rn FROM (%s) q(v)) x;"
					 " IF n > 0 THEN out := concat_ws('; ', out, format('%%s (%%s): %%s', %s, n, sample));"
					 " END IF;" % (query, lit(name)))
	parts.append('RETURN out; END $matrix$')
	conn.must('\n'.join(parts))
	return len(checks)


# --- the matrix -------------------------------------------------------------------

class Matrix:
	def __init__(self, root):
		common = ("SET a2.now = '%s'" % NOW, "SET deadlock_timeout = '50ms'",
				  "SET lock_timeout = '60s'")
		self.tx = [Conn(common), Conn(common)]
		self.checker = Conn()
		self.invariants = invariant_function(
			self.checker, os.path.join(root, 'test', 'stress', 'invariants.sql'))
		self.oracle = Oracle()
		self.case_no = 0

	def blocked_by_other(self, tx):
		r = self.checker.must('SELECT pg_blocking_pids(%d)' % self.tx[tx].pid)
		return self.tx[1 - tx].pid in [int(p) for p in r.value.strip('{}').split(',') if p]

	def reset(self):
		"""After a hang: cancel both, roll back."""
		for c in self.tx:
			c.pg.get_cancel().cancel()
		for c in self.tx:
			c.wait(10)
			while c.pg.get_result() is not None:
				pass
			c.run('ROLLBACK')

	def run(self, case, level, first):
		self.case_no += 1
		sids = {t: 'm%d-%s' % (self.case_no, t) for t in case.targets}
		arr = 'ARRAY[%s]' % ', '.join(lit(v) for v in sids.values())
		self.checker.must('SELECT matrix_setup(%s)' % arr)
		run = Run(self, case, level, first)
		try:
			run.execute(sids)
		except TimeoutError as e:
			run.failures.append(('hang', str(e)))
			self.reset()
		r = self.checker.must('SELECT matrix_state(%s, %d); SELECT pg_temp.matrix_invariants();'
							  ' SELECT matrix_clear()' % (arr, NOW_MS))
		res = Result()
		res.values = [r.values[0]]
		state, violated = normalize('state', res, sids), r.values[1]
		if not run.failures:
			run.judge_errors()
		if not run.failures:
			run.explain(state)
		if violated:
			run.failures.append(('invariants violated', violated))
		return run


def main():
	ap = argparse.ArgumentParser(description='the a2 isolation matrix')
	ap.add_argument('--levels', default='rc,rr,ser')
	ap.add_argument('--filter', default='', help='run the cases whose name contains this')
	ap.add_argument('--limit', type=int, default=0)
	ap.add_argument('--trace', action='store_true', help='print passing cases too')
	ap.add_argument('--both-orders', action='store_true',
					help='both commit orders under READ COMMITTED and REPEATABLE READ too')
	args = ap.parse_args()
	levels = args.levels.split(',')
	if not set(levels) <= set(LEVELS):
		ap.error('--levels takes a comma-separated subset of %s' % ','.join(LEVELS))
	root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
	m = Matrix(root)
	cases = [c for c in generate() if args.filter in c.name()]
	if args.limit:
		cases = cases[:args.limit]
	t0 = time.monotonic()
	counts = dict.fromkeys(levels, 0)
	failed = dict.fromkeys(levels, 0)
	causes = {}
	for case in cases:
		for level in levels:
			for first in (0, 1) if level == 'ser' or args.both_orders else (0,):
				run = m.run(case, level, first)
				counts[level] += 1
				label = '%s %s, T%d commits first' % (level, case.name(), first + 1)
				steps = ', '.join(run.trace)
				if run.failures:
					failed[level] += 1
					print('FAIL %s: %s  [%s]' % (label, ' / '.join(
						'%s: %s' % f for f in run.failures), steps), flush=True)
					for cause, _ in run.failures:
						causes.setdefault(cause, []).append(label)
				elif args.trace:
					print('ok   %s  [%s]' % (label, steps), flush=True)
	elapsed = time.monotonic() - t0
	print('matrix: %d cases (%s) in %.0f s, %d oracle runs; %d invariants checked after each'
		  % (sum(counts.values()), ', '.join('%s %d' % kv for kv in counts.items()), elapsed,
			 m.oracle.runs, m.invariants))
	for cause, labels in sorted(causes.items(), key=lambda kv: -len(kv[1])):
		print('  %5d x %s (first: %s)' % (len(labels), cause, labels[0]))
	nfail = sum(failed.values())
	print('matrix: %s (%d of %d cases failed: %s)' % (
		'PASS' if nfail == 0 else 'FAIL', nfail, sum(counts.values()),
		', '.join('%s %d' % kv for kv in failed.items())))
	return 1 if nfail else 0


if __name__ == '__main__':
	sys.exit(main())
