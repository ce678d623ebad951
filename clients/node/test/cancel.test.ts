/**
 * a2 0.4.0 cancel through the client (docs/functions.md, "a2_cancel"):
 * store.cancel(sessionId, indexes?, reason?), the StoredEvent fields
 * cancelledAt/cancelReason (only on a cancelled event), a cancelled
 * event's live attempt superseded, lanes advancing, and bad input. Time is
 * the injected clock; nothing sleeps.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, type A2PostgresStore } from '../src/index.js'
import { ManualClock, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_cancel'

let clock: ManualClock
let store: A2PostgresStore
let n = 0
const session = (): string => `cancel-${++n}`

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock('2026-06-01T00:00:00.000Z')
  store = storeOn(DB, { clock }).store
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
})

const claimed = async (s: string): Promise<number[] | string> => {
  const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
  return c.outcome === 'claimed' ? c.events.map((e) => e.index) : c.outcome
}

describe('store.cancel', () => {
  it('cancels pending events with a reason, at the store clock; cancelling again changes nothing', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }, { type: 'job' }, { type: 'job' }])
    clock.advance(5_000)
    const cancelled = await store.cancel(s, [2], 'not needed')
    assert.deepEqual(cancelled.map((e) => e.index), [2])
    const [e] = cancelled
    assert.ok(e)
    assert.deepEqual(e.cancelledAt, new Date(clock.ms))
    assert.deepEqual(e.processedAt, new Date(clock.ms))
    assert.equal(e.processedByAttempt, null)
    assert.equal(e.cancelReason, 'not needed')
    // read shows it; the others keep the 0.3.0 shape (no cancel keys at all)
    const read = await store.read(s)
    assert.deepEqual(read[1], e)
    assert.equal('cancelledAt' in read[0]!, false)
    assert.equal('cancelReason' in read[0]!, false)
    // idempotent
    assert.deepEqual(await store.cancel(s, [2], 'again'), [])
    assert.equal((await store.read(s))[1]?.cancelReason, 'not needed')
    // no indexes: every unfinished event; no reason: cancelReason null
    const rest = await store.cancel(s)
    assert.deepEqual(rest.map((x) => [x.index, x.cancelReason]), [[1, null], [3, null]])
    assert.equal(await claimed(s), 'settled')
  })

  it("supersedes the cancelled event's live attempt and advances its lane", async () => {
    const s = session()
    await store.append(s, [
      { type: 'job', lane: 'L' },
      { type: 'job', lane: 'L' },
    ])
    assert.deepEqual(await claimed(s), [1])
    assert.deepEqual((await store.cancel(s, [1], 'stop')).map((e) => e.index), [1])
    assert.deepEqual(await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [{ id: `${s}-child`, type: 'child' }] }), {
      outcome: 'superseded',
    })
    assert.deepEqual(
      await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'late', maxFailures: 3 }),
      { outcome: 'superseded', failureCount: 0 },
    )
    assert.deepEqual(
      await store.renewClaims({ sessionId: s, holder: 'w', claims: [{ index: 1, attempt: 1 }], ttlMs: 1000 }),
      { renewed: [], superseded: [1] },
    )
    assert.deepEqual(await claimed(s), [2])
    assert.equal((await store.read(s)).length, 2)
  })

  it('in a transaction: the strict form supersedes by throwing, and a rollback undoes the cancel', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    assert.deepEqual(await claimed(s), [1])
    await assert.rejects(
      store.transaction(async (tx) => {
        assert.equal((await tx.cancel(s, [1])).length, 1)
        await tx.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
      }),
      (err: unknown) => err instanceof A2Error && err.code === 'SUPERSEDED_ATTEMPT',
    )
    const [e] = await store.read(s)
    assert.equal(e?.cancelledAt, undefined)
    assert.equal(e?.claimHolder, 'w')
  })

  it('refuses bad input and writes nothing', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    const invalid = (err: unknown): boolean => err instanceof A2Error && err.code === 'INVALID_PAYLOAD'
    await assert.rejects(store.cancel(s, [0]), invalid)
    await assert.rejects(store.cancel(s, [1, 1]), invalid)
    await assert.rejects(store.cancel(s, [1], 'x'.repeat(1025)), invalid)
    await assert.rejects(store.cancel('', [1]), invalid)
    // an index without an event: as a completion of one (TypeError), nothing cancelled
    await assert.rejects(store.cancel(s, [1, 2]), (err: unknown) =>
      err instanceof TypeError && err.message === `no event at index 2 in session '${s}'`)
    assert.equal((await store.read(s))[0]?.cancelledAt, undefined)
    assert.deepEqual(await store.cancel(s, []), [])
  })
})
