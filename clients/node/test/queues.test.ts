/**
 * a2 0.4.0 dispatch control through the client (docs/functions.md
 * "Queues and limits"): queue, priority and concurrencyKey on appended and
 * returned events, claimAvailable's and claimNext's queues, pause and
 * resume, concurrency and rate limits, listQueues and listLimits. Time is
 * the injected clock; nothing sleeps.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, type A2PostgresStore } from '../src/index.js'
import { ManualClock, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_queues'

let clock: ManualClock
let store: A2PostgresStore
let n = 0
const session = (): string => `q-${++n}`

const sessionsOf = (r: { claims: { sessionId: string }[] }): string[] => r.claims.map((c) => c.sessionId)

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock('2026-08-01T00:00:00.000Z')
  ;({ store } = storeOn(DB, { clock }))
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
})

describe('dispatch fields', () => {
  it('are sent only when given and read back only when set', async () => {
    const s = session()
    const r = await store.append(s, [
      { type: 'plain' },
      { type: 'mail', queue: 'email', priority: 5, concurrencyKey: 'smtp' },
      { type: 'dflt', queue: 'default', priority: 0 },
    ])
    for (const events of [r.events, await store.read(s)]) {
      assert.equal('queue' in events[0]!, false)
      assert.equal('priority' in events[0]!, false)
      assert.equal(events[1]!.queue, 'email')
      assert.equal(events[1]!.priority, 5)
      assert.equal(events[1]!.concurrencyKey, 'smtp')
      assert.equal('queue' in events[2]!, false, "'default' is stored as absent")
      assert.equal('priority' in events[2]!, false, '0 is stored as absent')
    }
  })

  it('refuses a priority out of range with INVALID_PAYLOAD-class 22023', async () => {
    const err = await store.append(session(), [{ type: 'x', priority: 40000 }]).then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    )
    assert.ok(err instanceof A2Error)
    assert.equal((err.cause as { code?: string }).code, '22023')
  })

  it('flow through completeAttempt returned events', async () => {
    const s = session()
    await store.append(s, [{ type: 'parent' }])
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
    assert.equal(c.outcome, 'claimed')
    const done = await store.completeAttempt({
      sessionId: s,
      index: 1,
      attempt: 1,
      events: [{ id: `${s}-child`, type: 'child', queue: 'billing', priority: -3 }],
    })
    assert.equal(done.outcome, 'completed')
    const child = (await store.read(s))[1]!
    assert.equal(child.queue, 'billing')
    assert.equal(child.priority, -3)
  })
})

describe('queues and priorities', () => {
  it('a pool for one queue never sees another queue, and takes higher priority first', async () => {
    const low = session()
    const high = session()
    const other = session()
    await store.append(low, [{ type: 't', queue: 'jobs', priority: 1 }])
    clock.advance(1000)
    await store.append(high, [{ type: 't', queue: 'jobs', priority: 9 }])
    await store.append(other, [{ type: 't', queue: 'reports', priority: 100 }])
    clock.advance(1000)
    const first = await store.claimNext({ holder: 'w', ttlMs: 60_000, queues: ['jobs'] })
    assert.deepEqual(sessionsOf(first), [high])
    const rest = await store.claimNext({ holder: 'w', ttlMs: 60_000, maxSessions: 10, queues: ['jobs'] })
    assert.deepEqual(sessionsOf(rest), [low])
    assert.ok(rest.retryAt instanceof Date)
    const byQueue = await store.claimAvailable({ sessionId: other, holder: 'w', ttlMs: 60_000, queues: ['jobs'] })
    assert.equal(byQueue.outcome, 'settled')
  })

  it('pauseQueue hides a queue from claims until resumeQueue', async () => {
    const s = session()
    await store.append(s, [{ type: 't', queue: 'pausable' }])
    assert.equal(await store.pauseQueue('pausable'), true)
    assert.equal(await store.pauseQueue('pausable'), false)
    const q = (await store.listQueues()).find((r) => r.queue === 'pausable')
    assert.deepEqual(
      { paused: q?.paused, available: q?.available },
      { paused: true, available: 1 },
    )
    assert.deepEqual(sessionsOf(await store.claimNext({ holder: 'w', ttlMs: 60_000, queues: ['pausable'] })), [])
    assert.equal(await store.resumeQueue('pausable'), true)
    assert.deepEqual(sessionsOf(await store.claimNext({ holder: 'w', ttlMs: 60_000, queues: ['pausable'] })), [s])
  })
})

describe('limits', () => {
  it('setConcurrencyLimit caps live leases per key; listLimits shows it', async () => {
    await store.setConcurrencyLimit('acct', 1)
    const a = session()
    const b = session()
    await store.append(a, [{ type: 't', queue: 'limited', concurrencyKey: 'acct' }])
    await store.append(b, [{ type: 't', queue: 'limited', concurrencyKey: 'acct' }])
    const r = await store.claimNext({ holder: 'w', ttlMs: 60_000, maxSessions: 10, queues: ['limited'] })
    assert.equal(r.claims.length, 1)
    const busy = await store.claimAvailable({ sessionId: b, holder: 'w', ttlMs: 60_000, queues: ['limited'] })
    assert.equal(busy.outcome, 'busy')
    const lim = (await store.listLimits()).find((l) => l.key === 'acct')
    assert.deepEqual({ max: lim?.maxLeased, leased: lim?.leased, at: lim?.atLimit }, { max: 1, leased: 1, at: true })
    assert.deepEqual((await store.listQueues()).find((q) => q.queue === 'limited')?.keysAtLimit, ['acct'])
    await store.setConcurrencyLimit('acct', null)
    assert.equal((await store.listLimits()).some((l) => l.key === 'acct'), false)
  })

  it('setRateLimit allows maxClaims per window; retryAt says when', async () => {
    await store.setRateLimit('api', 1, 1000)
    const a = session()
    const b = session()
    await store.append(a, [{ type: 't', queue: 'rated', concurrencyKey: 'api' }])
    await store.append(b, [{ type: 't', queue: 'rated', concurrencyKey: 'api' }])
    const start = clock.ms
    const r1 = await store.claimNext({ holder: 'w', ttlMs: 600_000, maxSessions: 10, queues: ['rated'] })
    assert.equal(r1.claims.length, 1)
    const r2 = await store.claimNext({ holder: 'w', ttlMs: 600_000, maxSessions: 10, queues: ['rated'] })
    assert.equal(r2.claims.length, 0)
    assert.equal(r2.retryAt?.getTime(), start + 1000)
    clock.advance(1000)
    const r3 = await store.claimNext({ holder: 'w', ttlMs: 600_000, maxSessions: 10, queues: ['rated'] })
    assert.equal(r3.claims.length, 1)
    await store.setRateLimit('api', null, null)
  })

  it('refuses a limit below 1', async () => {
    const err = await store.setConcurrencyLimit('k', 0).then(
      () => assert.fail('expected an error'),
      (e: unknown) => e,
    )
    assert.ok(err instanceof A2Error)
    assert.equal((err.cause as { code?: string }).code, '22023')
  })
})
