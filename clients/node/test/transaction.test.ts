/**
 * store.transaction(): a handler's own SQL and the completion (or appends,
 * or a failure) commit together, or not at all.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, a2Store, type A2PostgresStore, type A2StrictStore } from '../src/index.js'
import { ManualClock, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_tx'

let store: A2PostgresStore
let strict: A2StrictStore
let q: (text: string, values?: unknown[]) => Promise<{ rows: Record<string, unknown>[] }>
const clock = new ManualClock()
let n = 0
const session = (): string => `tx-${++n}`

before(async () => {
  await freshDatabase(DB)
  const made = storeOn(DB, { clock })
  store = made.store
  // The strict form, on the same pool (close() ends the pool once, below).
  strict = a2Store({ client: { query: (t, v) => made.pool.query(t, v), connect: () => made.pool.connect() }, clock, superseded: 'throw' })
  q = (text, values) => made.pool.query(text, values)
  await q('CREATE TABLE shipments (session_id text, item text)')
})

after(async () => {
  await strict.close()
  await store.close()
  await dropDatabase(DB)
})

const claimOne = async (s: string): Promise<number> => {
  await store.append(s, [{ type: 'order.placed' }])
  const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 30_000 })
  assert.ok(c.outcome === 'claimed')
  return c.events[0]!.attemptCount
}

const shipments = async (s: string): Promise<number> =>
  Number((await q('SELECT count(*) AS n FROM shipments WHERE session_id = $1', [s])).rows[0]!['n'])

describe('transaction', () => {
  it('commit keeps the handler write and the completion', async () => {
    const s = session()
    const attempt = await claimOne(s)
    const result = await store.transaction(async (tx) => {
      await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
      return tx.completeAttempt({ sessionId: s, index: 1, attempt, events: [{ id: `${s}-shipped`, type: 'shipped' }] })
    })
    assert.equal(result.outcome, 'completed')
    assert.equal(await shipments(s), 1)
    const events = await store.read(s)
    assert.notEqual(events[0]!.processedAt, null)
    assert.deepEqual(events.map((e) => e.type), ['order.placed', 'shipped'])
  })

  it('a throw keeps neither, and the event stays claimable', async () => {
    const s = session()
    const attempt = await claimOne(s)
    const boom = new Error('handler crashed after completing')
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
        const r = await tx.completeAttempt({ sessionId: s, index: 1, attempt, events: [{ id: `${s}-shipped`, type: 'shipped' }] })
        assert.equal(r.outcome, 'completed')
        // Inside the transaction the completion is visible.
        assert.notEqual((await tx.read(s))[0]!.processedAt, null)
        throw boom
      }),
      (err) => err === boom,
    )
    assert.equal(await shipments(s), 0)
    const events = await store.read(s)
    assert.equal(events.length, 1)
    assert.equal(events[0]!.processedAt, null)
    // Still held by attempt 1 until the lease ends; then claimable again.
    clock.advance(30_000)
    const again = await store.claimAvailable({ sessionId: s, holder: 'w2', ttlMs: 1000 })
    assert.ok(again.outcome === 'claimed')
    assert.equal(again.events[0]!.attemptCount, attempt + 1)
  })

  it('appends and failures roll back with the handler too', async () => {
    const s = session()
    const attempt = await claimOne(s)
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.append(s, [{ type: 'progress', cause: { index: 1, attempt } }])
        await tx.failAttempt({ sessionId: s, index: 1, attempt, error: 'nope', maxFailures: 1 })
        await tx.presence.set(s, 'w', { busy: true }, { at: clock.now(), seen: 1, ttlMs: 60_000 })
        throw new Error('abort')
      }),
      /abort/,
    )
    const events = await store.read(s)
    assert.equal(events.length, 1)
    assert.equal(events[0]!.failureCount, 0)
    assert.equal(events[0]!.failedAt, null)
    assert.deepEqual(await store.presence.read(s), [])
  })

  it('an a2 error inside rolls back the handler write and reaches the caller mapped', async () => {
    const s = session()
    const attempt = await claimOne(s)
    const err = await store
      .transaction(async (tx) => {
        await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
        await tx.append(s, [{ type: 'progress', cause: { index: 1, attempt: attempt + 1 } }])
      })
      .then(() => assert.fail('expected SUPERSEDED_ATTEMPT'), (e: unknown) => e)
    assert.ok(err instanceof A2Error)
    assert.equal(err.code, 'SUPERSEDED_ATTEMPT')
    assert.equal(await shipments(s), 0)
  })

  it('a superseded completion throws and rolls back the handler write', async () => {
    // The server answers a stale completion without an error; the handler's
    // own write must not commit with it (one way to say stale).
    const s = session()
    const attempt = await claimOne(s)
    clock.advance(30_000)
    await store.claimAvailable({ sessionId: s, holder: 'other', ttlMs: 30_000 })
    const err = await store
      .transaction(async (tx) => {
        await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
        await tx.completeAttempt({ sessionId: s, index: 1, attempt, events: [] })
      })
      .then(() => assert.fail('expected SUPERSEDED_ATTEMPT'), (e: unknown) => e)
    assert.ok(err instanceof A2Error)
    assert.equal(err.code, 'SUPERSEDED_ATTEMPT')
    assert.equal(await shipments(s), 0)
    assert.equal((await store.read(s))[0]!.processedAt, null)
  })

  it('a superseded failure throws inside too, though the same call outside returns the contract result', async () => {
    const s = session()
    const attempt = await claimOne(s)
    clock.advance(30_000)
    await store.claimAvailable({ sessionId: s, holder: 'other', ttlMs: 30_000 })
    // Outside transaction(): the default store answers as the contract does.
    assert.deepEqual(
      await store.failAttempt({ sessionId: s, index: 1, attempt, error: 'late', maxFailures: 3 }),
      { outcome: 'superseded', failureCount: 0 },
    )
    assert.deepEqual(await store.completeAttempt({ sessionId: s, index: 1, attempt, events: [] }), { outcome: 'superseded' })
    // Inside: the same call throws, and the handler's write rolls back with it.
    const err = await store
      .transaction(async (tx) => {
        await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
        await tx.failAttempt({ sessionId: s, index: 1, attempt, error: 'late', maxFailures: 3 })
      })
      .then(() => assert.fail('expected SUPERSEDED_ATTEMPT'), (e: unknown) => e)
    assert.ok(err instanceof A2Error)
    assert.equal(err.code, 'SUPERSEDED_ATTEMPT')
    assert.equal(await shipments(s), 0)
    const [e] = await store.read(s)
    assert.deepEqual([e!.failureCount, e!.lastError, e!.claimHolder], [0, null, 'other'])
  })

  it('the strict store: a stale attempt throws outside and inside transaction()', async () => {
    const s = session()
    const attempt = await claimOne(s)
    clock.advance(30_000)
    await strict.claimAvailable({ sessionId: s, holder: 'other', ttlMs: 30_000 })
    for (const call of [
      () => strict.completeAttempt({ sessionId: s, index: 1, attempt, events: [] }),
      () => strict.failAttempt({ sessionId: s, index: 1, attempt, error: 'late', maxFailures: 3 }),
      () =>
        strict.transaction(async (tx) => {
          await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
          return tx.completeAttempt({ sessionId: s, index: 1, attempt, events: [] })
        }),
    ]) {
      const err = await call().then(() => assert.fail('expected SUPERSEDED_ATTEMPT'), (e: unknown) => e)
      assert.ok(err instanceof A2Error)
      assert.equal(err.code, 'SUPERSEDED_ATTEMPT')
    }
    assert.equal(await shipments(s), 0)
    // The current attempt completes through either form's transaction.
    const done = await strict.transaction(async (tx) => {
      await tx.query('INSERT INTO shipments VALUES ($1, $2)', [s, 'tea'])
      return tx.completeAttempt({ sessionId: s, index: 1, attempt: attempt + 1, events: [] })
    })
    assert.deepEqual(done, { outcome: 'completed', events: [] })
    assert.equal(await shipments(s), 1)
  })

  it('the connection goes back to the pool clean (no open transaction)', async () => {
    for (let i = 0; i < 10; i++) {
      await store.transaction(async (tx) => tx.query('SELECT 1')).catch(() => {})
      await store.transaction(async () => {
        throw new Error('x')
      }).catch(() => {})
    }
    const { rows } = await q("SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND state LIKE 'idle in transaction%'", [DB])
    assert.equal(rows[0]!['n'], 0)
  })
})
