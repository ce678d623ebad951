/**
 * a2 0.3.0 scheduling through the client (SPEC 7.1): notBefore on appended
 * and returned events, failAttempt's retryAfterMs, the backoff() helper,
 * and what is sent when they are not used. Time is the injected clock (a
 * transaction-local a2.now in each statement) or a set_config inside
 * transaction(); nothing sleeps.
 */

import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { after, before, describe, it } from 'node:test'

import { A2Error, a2Store, backoff, type A2PostgresStore, type BackoffOptions, type PostgresClient } from '../src/index.js'
import { fmix32, fnv1a32 } from '../src/backoff.js'
import { Client, ManualClock, Pool, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_scheduling'
const DB_020 = 'a2_node_scheduling_020'

// The seed's StoredEvent keys in order; notBefore follows when set.
const STORED_KEYS = [
  'id', 'type', 'payload', 'index', 'sessionId', 'createdAt', 'cause', 'lane',
  'processedAt', 'processedByAttempt', 'returnedEventIds', 'firstClaimedAt',
  'lastClaimedAt', 'attemptCount', 'failureCount', 'lastFailedAt',
  'lastFailedAttempt', 'lastError', 'failedAt', 'claimHolder', 'claimExpiresAt',
]

let clock: ManualClock
let store: A2PostgresStore
let p: InstanceType<typeof Pool>
let n = 0
const session = (): string => `sched-${++n}`
const at = (ms: number): Date => new Date(clock.ms + ms)

// A client that records every statement and its values.
const recording = (): { client: PostgresClient; sent: { text: string; values: unknown[] }[] } => {
  const sent: { text: string; values: unknown[] }[] = []
  return {
    sent,
    client: {
      query: (text, values) => {
        sent.push({ text, values: values ?? [] })
        return p.query(text, values)
      },
    },
  }
}

const rejectsWith = async (promise: Promise<unknown>, code: string, sqlstate?: string): Promise<void> => {
  const err = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  )
  assert.ok(err instanceof A2Error, `expected A2Error ${code}, got ${String(err)}`)
  assert.equal(err.code, code, err.message)
  if (sqlstate !== undefined) assert.equal((err.cause as { code?: string } | undefined)?.code, sqlstate, err.message)
}

const claimIndexes = async (s: string, ttlMs = 60_000): Promise<number[] | string> => {
  const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs })
  if (c.outcome === 'claimed') return c.events.map((e) => e.index)
  if (c.outcome === 'busy') return `busy until ${c.retryAt.toISOString()}`
  return c.outcome
}
const busyUntil = (d: Date): string => `busy until ${d.toISOString()}`

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock('2026-07-01T00:00:00.000Z')
  ;({ store, pool: p } = storeOn(DB, { clock }))
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
  await dropDatabase(DB_020)
})

describe('notBefore', () => {
  it('is sent only when given (a Date, or a string as it is) and shown only when set', async () => {
    const s = session()
    const { client, sent } = recording()
    const st = a2Store({ client, clock })
    const due = at(600_000)
    const r = await st.append(s, [
      { id: `${s}-plain`, type: 'plain' },
      { id: `${s}-date`, type: 'date', notBefore: due },
      { id: `${s}-iso`, type: 'iso', notBefore: '2026-07-01T00:10:00Z' },
      { id: `${s}-literal`, type: 'literal', notBefore: '2026-07-01 02:10:00+02' },
      { id: `${s}-null`, type: 'null', notBefore: null },
    ])
    const body = JSON.parse(sent[0]!.values[1] as string) as Record<string, unknown>[]
    assert.deepEqual(body.map((e) => e['notBefore']), [
      undefined, '2026-07-01T00:10:00.000Z', '2026-07-01T00:10:00Z', '2026-07-01 02:10:00+02', undefined,
    ])
    assert.deepEqual(body.map((e) => 'notBefore' in e), [false, true, true, true, false])
    for (const events of [r.events, await store.read(s)]) {
      assert.deepEqual(events.map((e) => Object.keys(e)), [
        STORED_KEYS, [...STORED_KEYS, 'notBefore'], [...STORED_KEYS, 'notBefore'],
        [...STORED_KEYS, 'notBefore'], STORED_KEYS,
      ])
      assert.deepEqual(events.map((e) => e.notBefore), [undefined, due, due, due, undefined])
      assert.ok(events[1]!.notBefore instanceof Date)
    }
  })

  it('a delayed event is not claimed before it is due; busy retryAt covers leases and due times', async () => {
    const s = session()
    const due = at(600_000)
    await store.append(s, [{ type: 'later', notBefore: due }, { type: 'now' }])
    assert.deepEqual(await claimIndexes(s), [2])
    // the earliest of the lease (00:01) and the due time (00:10)
    assert.equal(await claimIndexes(s), busyUntil(at(60_000)))
    await store.completeAttempt({ sessionId: s, index: 2, attempt: 1, events: [] })
    // nothing leased: busy until it is due, never settled
    assert.equal(await claimIndexes(s), busyUntil(due))
    clock.advance(600_000 - 1)
    assert.equal(await claimIndexes(s), busyUntil(due))
    clock.advance(1)
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((e) => [e.index, e.attemptCount, e.notBefore]), [[1, 1, due]])
    assert.deepEqual(c.events[0]!.firstClaimedAt, due)
    await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
    assert.equal(await claimIndexes(s), 'settled')
  })

  it('a notBefore in the past or equal to now is eligible at once, and stored', async () => {
    const s = session()
    const r = await store.append(s, [
      { type: 'past', notBefore: new Date('2020-01-01T00:00:00Z') },
      { type: 'now', notBefore: clock.now() },
    ])
    assert.deepEqual(r.events.map((e) => e.notBefore), [new Date('2020-01-01T00:00:00Z'), clock.now()])
    assert.deepEqual(await claimIndexes(s), [1, 2])
  })

  it('bad values are INVALID_PAYLOAD and write nothing; an invalid Date never reaches the server', async () => {
    const s = session()
    await rejectsWith(store.append(s, [{ type: 'x' }, { type: 'x', notBefore: 'next tuesday' }]), 'INVALID_PAYLOAD', '22023')
    await rejectsWith(store.append(s, [{ type: 'x', notBefore: 'infinity' }]), 'INVALID_PAYLOAD', '22023')
    // a JavaScript caller may pass a number: the server refuses it
    await rejectsWith(
      store.append(s, [{ type: 'x', notBefore: 1767225600000 as unknown as string }]),
      'INVALID_PAYLOAD', '22023',
    )
    const { client, sent } = recording()
    const st = a2Store({ client, clock })
    await rejectsWith(st.append(s, [{ type: 'x', notBefore: new Date(Number.NaN) }]), 'INVALID_PAYLOAD')
    await rejectsWith(
      st.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [{ id: `${s}-t`, type: 't', notBefore: new Date(Number.NaN) }] }),
      'INVALID_PAYLOAD',
    )
    assert.equal(sent.length, 0)
    assert.deepEqual(await store.read(s), [])
  })
})

describe('failAttempt retryAfterMs', () => {
  const claimedJob = async (s: string, id?: string): Promise<void> => {
    await store.append(s, [{ ...(id === undefined ? {} : { id }), type: 'job' }])
    assert.deepEqual(await claimIndexes(s), [1])
  }

  it('a failed attempt is not claimable again before now + retryAfterMs', async () => {
    const s = session()
    await claimedJob(s)
    const f = await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'upstream 503', maxFailures: 5, retryAfterMs: 30_000 })
    assert.deepEqual(f, { outcome: 'failed', failureCount: 1 })
    const [e] = await store.read(s)
    assert.deepEqual([e!.notBefore, e!.claimHolder, e!.lastError], [at(30_000), null, 'upstream 503'])
    assert.equal(await claimIndexes(s), busyUntil(at(30_000)))
    clock.advance(29_999)
    assert.equal(await claimIndexes(s), busyUntil(at(1)))
    clock.advance(1)
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
    assert.ok(c.outcome === 'claimed')
    assert.equal(c.events[0]!.attemptCount, 2)
  })

  it('is a2_fail\'s sixth argument, sent only when given; 0 or absent: claimable at once', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }, { type: 'job' }, { type: 'job' }])
    assert.deepEqual(await claimIndexes(s), [1, 2, 3])
    const { client, sent } = recording()
    const st = a2Store({ client, clock })
    await st.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'e', maxFailures: 5 })
    await st.failAttempt({ sessionId: s, index: 2, attempt: 1, error: 'e', maxFailures: 5, retryAfterMs: 0 })
    await st.failAttempt({ sessionId: s, index: 3, attempt: 1, error: 'e', maxFailures: 5, retryAfterMs: 5000 })
    assert.match(sent[0]!.text, /a2_fail\(\$1::text, \$2::bigint, \$3::integer, \$4::text, \$5::integer\) AS r/)
    assert.match(sent[1]!.text, /a2_fail\(\$1::text, \$2::bigint, \$3::integer, \$4::text, \$5::integer, \$6::bigint\) AS r/)
    assert.deepEqual(sent.map((q) => q.values.slice(0, -1)), [ // the last value is the clock
      [s, 1, 1, 'e', 5], [s, 2, 1, 'e', 5, 0], [s, 3, 1, 'e', 5, 5000],
    ])
    assert.deepEqual((await store.read(s)).map((e) => e.notBefore), [undefined, undefined, at(5000)])
    assert.deepEqual(await claimIndexes(s), [1, 2])
  })

  it('a negative, overflowing or fractional retryAfterMs is INVALID_PAYLOAD and writes nothing', async () => {
    const s = session()
    await claimedJob(s)
    const fail = (retryAfterMs: number): Promise<unknown> =>
      store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'e', maxFailures: 3, retryAfterMs })
    await rejectsWith(fail(-1), 'INVALID_PAYLOAD', '22023')
    await rejectsWith(fail(Number.MAX_SAFE_INTEGER), 'INVALID_PAYLOAD', '22023') // now + it overflows
    await rejectsWith(fail(2 ** 63), 'INVALID_PAYLOAD') // not a bigint
    await rejectsWith(fail(1.5), 'INVALID_PAYLOAD')
    const [e] = await store.read(s)
    assert.deepEqual([e!.failureCount, e!.notBefore, e!.claimHolder], [0, undefined, 'w'])
  })

  it('dead-lettering ignores it; a stale attempt is still superseded', async () => {
    const s = session()
    await claimedJob(s)
    const f = await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'fatal', maxFailures: 1, retryAfterMs: 60_000 })
    assert.deepEqual(f, { outcome: 'dead_lettered', failureCount: 1 })
    assert.equal((await store.read(s))[0]!.notBefore, undefined)
    assert.equal(await claimIndexes(s), 'settled')
    assert.deepEqual(
      await store.failAttempt({ sessionId: s, index: 1, attempt: 2, error: 'x', maxFailures: 3, retryAfterMs: 1 }),
      { outcome: 'superseded', failureCount: 1 },
    )
  })

  it('against an a2 0.2.0 database: works without it; with it, the server lacks the function', async () => {
    await dropDatabase(DB_020)
    const admin = new Client({ database: 'postgres' })
    await admin.connect()
    try {
      await admin.query(`CREATE DATABASE ${DB_020}`)
    } finally {
      await admin.end()
    }
    const old = storeOn(DB_020, { clock })
    try {
      await old.pool.query("CREATE EXTENSION a2 VERSION '0.2.0'")
      const s = session()
      await old.store.append(s, [{ type: 'job' }, { type: 'job' }])
      await old.store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
      assert.deepEqual(
        await old.store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'e', maxFailures: 3 }),
        { outcome: 'failed', failureCount: 1 },
      )
      await rejectsWith(
        old.store.failAttempt({ sessionId: s, index: 2, attempt: 1, error: 'e', maxFailures: 3, retryAfterMs: 1000 }),
        'STORE_UNAVAILABLE', '42883',
      )
      assert.deepEqual((await old.store.read(s)).map((e) => e.failureCount), [1, 0])
    } finally {
      await old.store.close()
    }
  })
})

describe('a durable timer', () => {
  it('completeAttempt returning a delayed event: due later, caused by the attempt, replayed as stored', async () => {
    const s = session()
    await store.append(s, [{ id: `${s}-order`, type: 'order.placed' }])
    assert.deepEqual(await claimIndexes(s), [1])
    const due = at(3_600_000)
    const timer = [{ id: `${s}-recheck`, type: 'order.recheck', payload: { why: 'timer' }, notBefore: due }]
    const done = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: timer })
    assert.ok(done.outcome === 'completed')
    assert.deepEqual(done.events.map((e) => [e.index, e.type, e.cause, e.notBefore, Object.keys(e).at(-1)]), [
      [2, 'order.recheck', { index: 1, attempt: 1 }, due, 'notBefore'],
    ])
    assert.equal(await claimIndexes(s), busyUntil(due))
    // an exact retry of the completion returns the stored timer
    const again = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: timer })
    assert.deepEqual(again, done)
    clock.advance(3_600_000)
    assert.deepEqual(await claimIndexes(s), [2])
  })

  it('in transaction(), with a2.now set by set_config: the handler\'s write and the timer commit together', async () => {
    const { store: wall, pool: wp } = storeOn(DB) // no injected clock: the transaction sets a2.now
    try {
      await wp.query('CREATE TABLE IF NOT EXISTS reminders (session_id text, due timestamptz)')
      const s = session()
      const t0 = '2026-08-01T09:00:00.000Z'
      const due = new Date('2026-08-01T10:00:00.000Z')
      const setNow = (tx: { query(text: string, values?: unknown[]): Promise<unknown> }, iso: string): Promise<unknown> =>
        tx.query("SELECT set_config('a2.now', $1, true)", [iso])
      await wall.transaction(async (tx) => {
        await setNow(tx, t0)
        await tx.append(s, [{ type: 'signup' }])
        const c = await tx.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
        assert.ok(c.outcome === 'claimed')
        await tx.query('INSERT INTO reminders VALUES ($1, $2)', [s, due])
        await tx.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [{ id: `${s}-nudge`, type: 'nudge', notBefore: due }] })
      })
      const claimAt = (iso: string): Promise<unknown> =>
        wall.transaction(async (tx) => {
          await setNow(tx, iso)
          const c = await tx.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
          return c.outcome === 'claimed' ? c.events.map((e) => e.index) : c
        })
      assert.deepEqual(await claimAt('2026-08-01T09:59:59.999Z'), { outcome: 'busy', retryAt: due })
      assert.deepEqual(await claimAt('2026-08-01T10:00:00.000Z'), [2])
      const { rows } = await wp.query('SELECT count(*)::int AS n FROM reminders WHERE session_id = $1', [s])
      assert.equal(rows[0]!['n'], 1)
    } finally {
      await wall.close()
    }
  })
})

type Vectors = {
  fnv1a32: [string, number][]
  fmix32: [number, number][]
  backoff: { options: BackoffOptions; eventId: string; attempt: number; ms: number }[]
}
// The table the Python client's tests check too.
const vectors = JSON.parse(
  readFileSync(new URL('../../../shared/backoff-vectors.json', import.meta.url), 'utf8'),
) as Vectors

describe('backoff()', () => {
  it('gives the values of the shared table (the Python client gives the same)', () => {
    const enc = new TextEncoder()
    for (const [s, h] of vectors.fnv1a32) assert.equal(fnv1a32(enc.encode(s)), h, `fnv1a32(${JSON.stringify(s)})`)
    for (const [x, h] of vectors.fmix32) assert.equal(fmix32(x), h, `fmix32(${x})`)
    assert.ok(vectors.backoff.length >= 30)
    for (const v of vectors.backoff) {
      assert.equal(backoff(v.options)(v.eventId, v.attempt), v.ms, JSON.stringify(v))
    }
  })

  it('without jitter: base * factor^(attempt-1), capped; with it: within [delay * (1 - jitter), delay], spread, repeatable', () => {
    const exact = backoff({ baseMs: 1000, maxMs: 30_000, factor: 2, jitter: 0 })
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7, 100].map((a) => exact('e', a)), [1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000])
    const policy = backoff({ baseMs: 1000, maxMs: 30_000, factor: 2, jitter: 0.5 })
    for (let a = 1; a <= 8; a++) {
      const delay = Math.min(1000 * 2 ** (a - 1), 30_000)
      const values = Array.from({ length: 200 }, (_, i) => policy(`job-${i}`, a))
      for (const v of values) {
        assert.ok(Number.isInteger(v) && v >= delay / 2 && v <= delay, `attempt ${a}: ${v} outside [${delay / 2}, ${delay}]`)
      }
      assert.ok(new Set(values).size > 150, `attempt ${a}: only ${new Set(values).size} distinct values of 200`)
      assert.deepEqual(Array.from({ length: 200 }, (_, i) => policy(`job-${i}`, a)), values)
    }
    // the same event backs off differently on each attempt
    assert.notEqual(backoff({ factor: 1 })('e', 1), backoff({ factor: 1 })('e', 2))
  })

  it('refuses options and attempts out of range', () => {
    for (const o of [{ baseMs: -1 }, { baseMs: Number.NaN }, { maxMs: Infinity }, { maxMs: -1 }, { factor: 0.5 },
      { factor: Infinity }, { jitter: -0.1 }, { jitter: 1.5 }, { jitter: Number.NaN }]) {
      assert.throws(() => backoff(o), RangeError, JSON.stringify(o))
    }
    const policy = backoff()
    for (const a of [0, -1, 1.5, Number.NaN, 2 ** 53]) assert.throws(() => policy('e', a), RangeError, String(a))
    assert.throws(() => policy(1 as unknown as string, 1), TypeError)
  })

  it('drives failAttempt: the retry schedule of an event is the table\'s, to the millisecond', async () => {
    // 'evt-1' with the default options is in the shared table: 893, 1919, 2832 ms
    const expected = vectors.backoff.filter((v) => v.eventId === 'evt-1' && Object.keys(v.options).length === 0)
    assert.deepEqual(expected.slice(0, 3).map((v) => [v.attempt, v.ms]), [[1, 893], [2, 1919], [3, 2832]])
    const retryAfter = backoff()
    const s = session()
    await store.append(s, [{ id: 'evt-1', type: 'flaky' }])
    for (const ms of [893, 1919, 2832]) {
      const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
      assert.ok(c.outcome === 'claimed')
      const e = c.events[0]!
      await store.failAttempt({
        sessionId: s, index: e.index, attempt: e.attemptCount, error: 'flaky', maxFailures: 10,
        retryAfterMs: retryAfter(e.id, e.attemptCount),
      })
      assert.equal(await claimIndexes(s), busyUntil(at(ms)))
      clock.advance(ms)
    }
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual([c.events[0]!.attemptCount, c.events[0]!.failureCount], [4, 3])
  })
})
