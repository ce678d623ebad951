/**
 * Through pgbouncer in transaction mode (scripts/pgbouncer.sh, which
 * test/suites/80-node-client.sh starts): every method works, the injected
 * clock never leaks from one client to another through a shared server
 * connection, and store.transaction keeps its one connection. The stream
 * works there only as polling (`listen: false`): a LISTEN cannot outlive a
 * transaction behind such a pooler.
 *
 * Needs A2_PGBOUNCER_URL; without it the file is skipped, unless
 * A2_NODE_REQUIRE_PGBOUNCER=1 (the suite sets it) makes that a failure.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { a2Store, type A2PostgresStore } from '../src/index.js'
import { ManualClock, Pool, dropDatabase, freshDatabase, take, within } from './helpers.js'

const DB = 'a2_node_bouncer'
const url = process.env['A2_PGBOUNCER_URL']
const required = process.env['A2_NODE_REQUIRE_PGBOUNCER'] === '1'

if (!url && required) {
  it('A2_PGBOUNCER_URL is set', () => assert.fail('A2_NODE_REQUIRE_PGBOUNCER=1 but A2_PGBOUNCER_URL is not set'))
}

const bouncerPool = (max: number): InstanceType<typeof Pool> => {
  const u = new URL(url!)
  u.pathname = `/${DB}`
  const p = new Pool({ connectionString: u.toString(), max })
  p.on('error', () => {})
  return p
}

describe('through pgbouncer (transaction mode)', { skip: url ? false : 'A2_PGBOUNCER_URL not set' }, () => {
  let p: InstanceType<typeof Pool>
  let store: A2PostgresStore
  const clock = new ManualClock('2030-01-01T00:00:00.000Z')

  before(async () => {
    await freshDatabase(DB)
    p = bouncerPool(6)
    store = a2Store({ client: p, clock, listen: false })
    const { rows } = await p.query('SHOW transaction_isolation') // reaches the server through the pooler
    assert.equal(rows.length, 1)
  })

  after(async () => {
    await store.close()
    await dropDatabase(DB)
  })

  it('every method but the stream', async () => {
    const s = 'b-1'
    const a = await store.append(s, [{ id: 'b1', type: 'job', payload: [] }, { type: 'job2', lane: 'l' }])
    assert.deepEqual(a.events.map((e) => [e.index, e.payload]), [[1, []], [2, null]])
    assert.equal(a.events[0]!.createdAt.toISOString(), '2030-01-01T00:00:00.000Z')
    assert.equal((await store.read(s, { afterIndex: 1 })).length, 1)
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 10_000 })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((e) => e.index), [1, 2])
    clock.advance(1000)
    assert.deepEqual(await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1 }), {
      outcome: 'busy',
      retryAt: new Date('2030-01-01T00:00:10.000Z'),
    })
    assert.deepEqual(
      await store.renewClaims({ sessionId: s, holder: 'w', ttlMs: 20_000, claims: [{ index: 1, attempt: 1 }] }),
      { renewed: [1], superseded: [] },
    )
    const done = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [{ id: 'b1-done', type: 'done' }] })
    assert.ok(done.outcome === 'completed')
    assert.deepEqual(await store.failAttempt({ sessionId: s, index: 2, attempt: 1, error: 'x', maxFailures: 3 }), {
      outcome: 'failed',
      failureCount: 1,
    })
    await store.putSnapshots(s, 'r', [{ index: 1, state: { n: 1 } }])
    const st = await store.readState(s, 'r')
    assert.deepEqual([st.headIndex, st.snapshot, st.events.map((e) => e.index)], [1, { index: 1, state: { n: 1 } }, [2, 3]])
    assert.equal((await store.readStates([{ sessionId: s }, { sessionId: 'none' }], 'r')).length, 2)
    await store.presence.set(s, 'p', { f: [] }, { at: clock.now(), seen: 1, ttlMs: 1000 })
    assert.deepEqual((await store.presence.read(s)).map((r) => [r.field, r.value]), [['f', []]])
    await assert.rejects(store.append(s, [{ id: 'b1', type: 'other' }]), { code: 'PARTIAL_DUPLICATE_BATCH' })
    await assert.rejects(store.completeAttempt({ sessionId: s, index: 99, attempt: 1, events: [] }), TypeError)
  })

  it('the clock of one client never reaches another through a shared server connection', async () => {
    const wall = a2Store({ client: p, listen: false })
    const wrong: string[] = []
    await Promise.all(
      Array.from({ length: 40 }, async (_, i) => {
        if (i % 2 === 0) {
          const r = await store.append(`clock-${i}`, [{ type: 't' }])
          if (r.events[0]!.createdAt.getTime() !== clock.now().getTime()) wrong.push(`clocked ${i}`)
        } else {
          const r = await wall.append(`clock-${i}`, [{ type: 't' }])
          if (Math.abs(r.events[0]!.createdAt.getTime() - Date.now()) > 60_000) wrong.push(`wall ${i}`)
        }
      }),
    )
    assert.deepEqual(wrong, [])
  })

  it('store.transaction keeps one server connection: commit and rollback', async () => {
    await p.query('CREATE TABLE IF NOT EXISTS notes (s text)')
    const s = 'b-tx'
    await store.append(s, [{ type: 'job' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
    await assert.rejects(
      store.transaction(async (tx) => {
        await tx.query('INSERT INTO notes VALUES ($1)', [s])
        await tx.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
        throw new Error('rollback')
      }),
      /rollback/,
    )
    assert.equal((await p.query('SELECT count(*)::int AS n FROM notes')).rows[0]!['n'], 0)
    assert.equal((await store.read(s))[0]!.processedAt, null)
    await store.transaction(async (tx) => {
      await tx.query('INSERT INTO notes VALUES ($1)', [s])
      await tx.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
    })
    assert.equal((await p.query('SELECT count(*)::int AS n FROM notes')).rows[0]!['n'], 1)
    assert.notEqual((await store.read(s))[0]!.processedAt, null)
  })

  it('the stream, polling only (listen: false), also works', async () => {
    const poller = a2Store({ client: p, listen: false, pollIntervalMs: 100 })
    const it = poller.stream('b-stream')
    try {
      const got = within(take(it, 2), 5000, 'polled through the pooler')
      await store.append('b-stream', [{ type: 'a' }, { type: 'b' }])
      assert.deepEqual((await got).map((e) => e.index), [1, 2])
    } finally {
      await it.return!() // not poller.close(): that would end the shared pool
    }
  })
})
