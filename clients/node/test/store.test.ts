/**
 * Every store method against a real cluster, with the edge cases of
 * SPEC section 4, the error mapping of every SQLSTATE the contract names,
 * and the injected clock driving lease expiry and retryAt.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, a2Store, type A2PostgresStore, type A2Store, type PostgresClient } from '../src/index.js'
import { ManualClock, Pool, dropDatabase, freshDatabase, pool, storeOn } from './helpers.js'

const DB = 'a2_node_store'

// The seed's toStored, key for key and in its order.
const STORED_KEYS = [
  'id', 'type', 'payload', 'index', 'sessionId', 'createdAt', 'cause', 'lane',
  'processedAt', 'processedByAttempt', 'returnedEventIds', 'firstClaimedAt',
  'lastClaimedAt', 'attemptCount', 'failureCount', 'lastFailedAt',
  'lastFailedAttempt', 'lastError', 'failedAt', 'claimHolder', 'claimExpiresAt',
]

const rejectsWith = async (p: Promise<unknown>, code: string, message?: RegExp): Promise<A2Error> => {
  const err = await p.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  )
  assert.ok(err instanceof A2Error, `expected A2Error ${code}, got ${String(err)}`)
  assert.equal(err.code, code, err.message)
  if (message) assert.match(err.message, message)
  return err
}

const rejectsNotFound = async (p: Promise<unknown>, index: number, sessionId: string): Promise<void> => {
  const err = await p.then(
    () => assert.fail('expected the not-found TypeError'),
    (e: unknown) => e,
  )
  assert.ok(err instanceof TypeError, `expected TypeError, got ${String(err)}`)
  assert.ok(!(err instanceof A2Error))
  assert.equal(err.message, `no event at index ${index} in session '${sessionId}'`)
  assert.equal((err.cause as { code?: string }).code, 'Z2003')
}

let clock: ManualClock
let store: A2PostgresStore
let p: InstanceType<typeof Pool>
let n = 0
const session = (): string => `s-${++n}`

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock()
  ;({ store, pool: p } = storeOn(DB, { clock }))
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
})

describe('append', () => {
  it('returns the seed shapes: Dates, numbers, nulls, the seed keys in order', async () => {
    const s = session()
    const r = await store.append(s, [{ id: 'a1', type: 'order.placed', payload: { qty: 2 } }])
    assert.equal(r.hasPending, true)
    assert.equal(r.events.length, 1)
    const e = r.events[0]!
    assert.deepEqual(Object.keys(e), STORED_KEYS)
    assert.ok(e.createdAt instanceof Date)
    assert.equal(e.createdAt.toISOString(), '2026-01-01T00:00:00.000Z')
    assert.deepEqual(e, {
      id: 'a1', type: 'order.placed', payload: { qty: 2 }, index: 1, sessionId: s,
      createdAt: new Date('2026-01-01T00:00:00.000Z'), cause: null, lane: null,
      processedAt: null, processedByAttempt: null, returnedEventIds: null,
      firstClaimedAt: null, lastClaimedAt: null, attemptCount: 0, failureCount: 0,
      lastFailedAt: null, lastFailedAttempt: null, lastError: null, failedAt: null,
      claimHolder: null, claimExpiresAt: null,
    })
  })

  it('encodes JSON correctly: [] stays [], {} stays {}, strings survive', async () => {
    const s = session()
    const payloads = [[], {}, [1, [2, []]], 'it\'s "quoted" \\ {a,b}', null, 0, true, { a: [] }]
    const r = await store.append(s, payloads.map((payload) => ({ type: 't', payload })))
    assert.deepEqual(r.events.map((e) => e.payload), payloads)
    const read = await store.read(s)
    assert.deepEqual(read.map((e) => e.payload), payloads)
    // A missing payload is null, as in the seed.
    const m = await store.append(s, [{ type: 't' }])
    assert.equal(m.events[0]!.payload, null)
  })

  it('empty batch writes nothing and reports hasPending', async () => {
    const s = session()
    assert.deepEqual(await store.append(s, []), { events: [], hasPending: false })
    await store.append(s, [{ type: 'audit', settled: true }])
    assert.deepEqual(await store.append(s, []), { events: [], hasPending: false })
    await store.append(s, [{ type: 'job' }])
    assert.deepEqual(await store.append(s, []), { events: [], hasPending: true })
    assert.equal((await store.read(s)).length, 2)
  })

  it('dense indexes; settled events are stored processed', async () => {
    const s = session()
    const r = await store.append(s, [{ type: 'a' }, { type: 'b', settled: true }, { type: 'c' }])
    assert.deepEqual(r.events.map((e) => e.index), [1, 2, 3])
    assert.equal(r.events[1]!.processedAt?.toISOString(), '2026-01-01T00:00:00.000Z')
    assert.equal(r.events[0]!.processedAt, null)
  })

  it('generated ids: by the server without `ids` (time-ordered), by `ids` when given', async () => {
    const s = session()
    const r = await store.append(s, [{ type: 'a' }, { type: 'b' }])
    // version 7 UUIDs: the store clock's millisecond first, ascending
    for (const e of r.events) {
      assert.match(e.id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
      assert.equal(parseInt(e.id.slice(0, 8) + e.id.slice(9, 13), 16), e.createdAt.getTime())
    }
    assert.ok(r.events[0]!.id < r.events[1]!.id)
    let k = 0
    const withIds = a2Store({ client: p, ids: () => `gen-${s}-${++k}` })
    const r2 = await withIds.append(s, [{ type: 'b' }, { id: 'mine', type: 'c' }, { type: 'd' }])
    assert.deepEqual(r2.events.map((e) => e.id), [`gen-${s}-1`, 'mine', `gen-${s}-2`])
  })

  it('keys the contract does not define are not sent (the seed ignored them)', async () => {
    const s = session()
    const event = { type: 'a', payload: 1, extra: 'x' } as unknown as { type: string }
    const r = await store.append(s, [event])
    assert.equal(r.events[0]!.payload, 1)
  })

  it('idempotent replay returns the stored events and writes nothing', async () => {
    const s = session()
    const first = await store.append(s, [{ id: `${s}-1`, type: 'a', payload: { x: 1 } }, { id: `${s}-2`, type: 'b' }])
    clock.advance(1000)
    const again = await store.append(s, [{ id: `${s}-1`, type: 'a', payload: { x: 1 } }, { id: `${s}-2`, type: 'b' }])
    assert.deepEqual(again.events, first.events)
    assert.equal((await store.read(s)).length, 2)
  })

  it('PARTIAL_DUPLICATE_BATCH: changed replay, mixed batch, repeated id, foreign id', async () => {
    const s = session()
    await store.append(s, [{ id: `${s}-1`, type: 'a', payload: 1 }])
    await rejectsWith(store.append(s, [{ id: `${s}-1`, type: 'a', payload: 2 }]), 'PARTIAL_DUPLICATE_BATCH')
    await rejectsWith(store.append(s, [{ id: `${s}-1`, type: 'a', payload: 1 }, { type: 'b' }]), 'PARTIAL_DUPLICATE_BATCH')
    await rejectsWith(store.append(s, [{ id: 'same', type: 'a' }, { id: 'same', type: 'a' }]), 'PARTIAL_DUPLICATE_BATCH')
    await rejectsWith(store.append(session(), [{ id: `${s}-1`, type: 'a', payload: 1 }]), 'PARTIAL_DUPLICATE_BATCH')
    assert.equal((await store.read(s)).length, 1)
  })

  it('the attempt fence: SUPERSEDED_ATTEMPT, and the seed TypeError for a missing parent', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    assert.equal(c.outcome, 'claimed')
    const ok = await store.append(s, [{ type: 'progress', cause: { index: 1, attempt: 1, batchSize: 2 } }])
    assert.deepEqual(ok.events[0]!.cause, { index: 1, attempt: 1, batchSize: 2 })
    await rejectsWith(store.append(s, [{ type: 'progress', cause: { index: 1, attempt: 2 } }]), 'SUPERSEDED_ATTEMPT')
    await rejectsNotFound(store.append(s, [{ type: 'x', cause: { index: 99, attempt: 1 } }]), 99, s)
  })

  it('lanes: the second event of a lane waits for the first', async () => {
    const s = session()
    await store.append(s, [{ type: 'a', lane: 'pay' }, { type: 'b', lane: 'pay' }, { type: 'c' }])
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((e) => e.index), [1, 3])
    assert.equal(c.events[0]!.lane, 'pay')
    await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
    const c2 = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    assert.ok(c2.outcome === 'claimed')
    assert.deepEqual(c2.events.map((e) => e.index), [2])
  })
})

describe('read', () => {
  it('bounds are exclusive after, inclusive through', async () => {
    const s = session()
    await store.append(s, [1, 2, 3, 4, 5].map((i) => ({ type: 't', payload: i })))
    assert.deepEqual((await store.read(s)).map((e) => e.index), [1, 2, 3, 4, 5])
    assert.deepEqual((await store.read(s, { afterIndex: 2 })).map((e) => e.index), [3, 4, 5])
    assert.deepEqual((await store.read(s, { throughIndex: 2 })).map((e) => e.index), [1, 2])
    assert.deepEqual((await store.read(s, { afterIndex: 1, throughIndex: 3 })).map((e) => e.index), [2, 3])
    assert.deepEqual(await store.read(session()), [])
  })
})

describe('claimAvailable and renewClaims, on the injected clock', () => {
  it('claims every eligible event, then busy with retryAt, then again after expiry', async () => {
    const s = session()
    await store.append(s, [{ type: 'a' }, { type: 'b' }])
    const c = await store.claimAvailable({ sessionId: s, holder: 'w1', ttlMs: 30_000 })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((e) => [e.index, e.attemptCount, e.claimHolder]), [[1, 1, 'w1'], [2, 1, 'w1']])
    const claimedAt = clock.now()
    assert.deepEqual(c.events[0]!.firstClaimedAt, claimedAt)
    assert.deepEqual(c.events[0]!.lastClaimedAt, claimedAt)
    assert.deepEqual(c.events[0]!.claimExpiresAt, new Date(claimedAt.getTime() + 30_000))

    clock.advance(10_000)
    const busy = await store.claimAvailable({ sessionId: s, holder: 'w2', ttlMs: 30_000 })
    assert.deepEqual(busy, { outcome: 'busy', retryAt: new Date(claimedAt.getTime() + 30_000) })

    clock.advance(20_000) // exactly at expiry: claimable (claim_expires_at <= now)
    const again = await store.claimAvailable({ sessionId: s, holder: 'w2', ttlMs: 5000 })
    assert.ok(again.outcome === 'claimed')
    assert.deepEqual(again.events.map((e) => e.attemptCount), [2, 2])
    assert.deepEqual(again.events[0]!.firstClaimedAt, claimedAt)
    assert.deepEqual(again.events[0]!.lastClaimedAt, clock.now())
  })

  it('settled when nothing is unfinished; expiresAtMs replaces now + ttl; excluded leases still make it busy', async () => {
    const s = session()
    assert.deepEqual(await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1 }), { outcome: 'settled' })
    await store.append(s, [{ type: 'a' }, { type: 'b' }])
    const at = clock.now().getTime() + 123_456
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1, expiresAtMs: at, excludeIndexes: [2] })
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((e) => e.index), [1])
    assert.deepEqual(c.events[0]!.claimExpiresAt, new Date(at))
    const rest = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000, excludeIndexes: [2] })
    assert.deepEqual(rest, { outcome: 'busy', retryAt: new Date(at) })
  })

  it('renews live leases of the holder, reports superseded ones; [] asks nothing', async () => {
    const s = session()
    await store.append(s, [{ type: 'a' }, { type: 'b' }, { type: 'c' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    clock.advance(1000) // all three expire
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000, excludeIndexes: [1] }) // 2, 3 at attempt 2
    const r = await store.renewClaims({
      sessionId: s, holder: 'w', ttlMs: 60_000,
      claims: [{ index: 3, attempt: 2 }, { index: 1, attempt: 1 }, { index: 2, attempt: 1 }],
    })
    // 1: expired (neither); 2: attempt 1 is superseded by 2; 3: renewed.
    assert.deepEqual(r, { renewed: [3], superseded: [2] })
    const [e3] = await store.read(s, { afterIndex: 2 })
    assert.deepEqual(e3!.claimExpiresAt, new Date(clock.now().getTime() + 60_000))
    assert.deepEqual(await store.renewClaims({ sessionId: s, holder: 'w', ttlMs: 1, claims: [] }), { renewed: [], superseded: [] })
    const other = await store.renewClaims({ sessionId: s, holder: 'intruder', ttlMs: 1, claims: [{ index: 3, attempt: 2 }] })
    assert.deepEqual(other, { renewed: [], superseded: [] })
  })
})

describe('completeAttempt and failAttempt', () => {
  it('completes with children, is idempotent, supersedes other attempts', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    clock.advance(5)
    const children = [{ id: `${s}-paid`, type: 'paid', payload: { amount: 7.5 } }, { id: `${s}-log`, type: 'log', settled: true }]
    const done = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: children })
    assert.ok(done.outcome === 'completed')
    assert.deepEqual(done.events.map((e) => [e.id, e.index, e.cause]), [
      [`${s}-paid`, 2, { index: 1, attempt: 1 }],
      [`${s}-log`, 3, { index: 1, attempt: 1 }],
    ])
    assert.deepEqual(done.events[1]!.processedAt, clock.now())
    const [parent] = await store.read(s, { throughIndex: 1 })
    assert.deepEqual(parent!.processedAt, clock.now())
    assert.equal(parent!.processedByAttempt, 1)
    assert.deepEqual(parent!.returnedEventIds, [`${s}-paid`, `${s}-log`])
    assert.equal(parent!.claimHolder, null)

    const retry = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: children })
    assert.deepEqual(retry, done)
    await rejectsWith(
      store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [children[0]!] }),
      'PARTIAL_DUPLICATE_BATCH',
    )
    // Processed by another attempt: the contract's superseded result (the
    // strict form's throw is in "stale attempts" below).
    assert.deepEqual(await store.completeAttempt({ sessionId: s, index: 1, attempt: 2, events: [] }), { outcome: 'superseded' })
    await rejectsNotFound(store.completeAttempt({ sessionId: s, index: 42, attempt: 1, events: [] }), 42, s)
    // Never claimed: superseded. Duplicate returned ids: PARTIAL_DUPLICATE_BATCH.
    assert.deepEqual(await store.completeAttempt({ sessionId: s, index: 2, attempt: 1, events: [] }), { outcome: 'superseded' })
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    await rejectsWith(
      store.completeAttempt({ sessionId: s, index: 2, attempt: 1, events: [{ id: 'd', type: 'x' }, { id: 'd', type: 'x' }] }),
      'PARTIAL_DUPLICATE_BATCH',
    )
  })

  it('an expired lease nobody re-claimed may still complete', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 10 })
    clock.advance(60_000)
    const r = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
    assert.deepEqual(r, { outcome: 'completed', events: [] })
  })

  it('fails, retries, dead-letters; superseded and idempotent cases; missing event', async () => {
    const s = session()
    await store.append(s, [{ type: 'job', lane: 'l' }, { type: 'next', lane: 'l' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    const f1 = await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'card declined', maxFailures: 2 })
    assert.deepEqual(f1, { outcome: 'failed', failureCount: 1 })
    assert.deepEqual(await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'again', maxFailures: 2 }), { outcome: 'failed', failureCount: 1 })
    const [e] = await store.read(s, { throughIndex: 1 })
    assert.equal(e!.lastError, 'card declined')
    assert.equal(e!.lastFailedAttempt, 1)
    assert.deepEqual(e!.lastFailedAt, clock.now())
    assert.equal(e!.claimHolder, null)
    const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 }) // at once: lease cleared
    assert.ok(c.outcome === 'claimed')
    assert.deepEqual(c.events.map((x) => [x.index, x.attemptCount]), [[1, 2]])
    // The contract's superseded result carries the event's failure count, unchanged.
    assert.deepEqual(
      await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'old', maxFailures: 2 }),
      { outcome: 'superseded', failureCount: 1 },
    )
    assert.equal((await store.read(s, { throughIndex: 1 }))[0]!.lastError, 'card declined')
    const dl = await store.failAttempt({ sessionId: s, index: 1, attempt: 2, error: null, maxFailures: 2 })
    assert.deepEqual(dl, { outcome: 'dead_lettered', failureCount: 2 })
    const [dead] = await store.read(s, { throughIndex: 1 })
    assert.deepEqual(dead!.failedAt, clock.now())
    assert.equal(dead!.lastError, null)
    // A dead-lettered event keeps its lane blocked.
    assert.deepEqual(await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 }), { outcome: 'settled' })
    await rejectsNotFound(store.failAttempt({ sessionId: s, index: 7, attempt: 1, error: 'x', maxFailures: 1 }), 7, s)
  })
})

describe('snapshots', () => {
  it('putSnapshots, bounded readState, headIndex, pins released by completion', async () => {
    const s = session()
    await store.append(s, [1, 2, 3, 4].map((i) => ({ type: 't', payload: i })))
    assert.deepEqual(await store.readState(s, 'sum'), {
      headIndex: null,
      snapshot: null,
      events: (await store.read(s)).map(({ id, type, payload, index, sessionId, createdAt }) => ({ id, type, payload, index, sessionId, createdAt })),
    })
    await store.putSnapshots(s, 'sum', [
      { index: 2, state: { total: 3 }, pinEventIndexes: [3] },
      { index: 4, state: { total: 10 } },
    ])
    const head = await store.readState(s, 'sum')
    assert.equal(head.headIndex, 4)
    assert.deepEqual(head.snapshot, { index: 4, state: { total: 10 } })
    assert.deepEqual(head.events, [])
    const bounded = await store.readState(s, 'sum', { throughIndex: 3 })
    assert.equal(bounded.headIndex, 4)
    assert.deepEqual(bounded.snapshot, { index: 2, state: { total: 3 } })
    assert.deepEqual(bounded.events.map((e) => e.index), [3])
    assert.ok(bounded.events[0]!.createdAt instanceof Date)
    assert.deepEqual(Object.keys(bounded.events[0]!), ['id', 'type', 'payload', 'index', 'sessionId', 'createdAt'])
    const split = await store.readState(s, 'sum', { throughIndex: 4, snapshotThroughIndex: 3 })
    assert.deepEqual(split.snapshot?.index, 2)
    assert.deepEqual(split.events.map((e) => e.index), [3, 4])

    // Completing event 3 releases the pin; the history checkpoint goes.
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000, excludeIndexes: [1, 2, 4] })
    await store.completeAttempt({ sessionId: s, index: 3, attempt: 1, events: [] })
    const after = await store.readState(s, 'sum', { throughIndex: 3 })
    assert.equal(after.snapshot, null)
    assert.deepEqual(after.events.map((e) => e.index), [1, 2, 3])
    // [] asks nothing; a state of undefined is stored as null, as in the seed.
    await store.putSnapshots(s, 'sum', [])
    await store.putSnapshots(s, 'other', [{ index: 1, state: undefined }])
    assert.deepEqual((await store.readState(s, 'other')).snapshot, { index: 1, state: null })
  })

  it('readStates answers in request order, [] for []', async () => {
    const a = session()
    const b = session()
    await store.append(a, [{ type: 't' }, { type: 't' }])
    await store.append(b, [{ type: 't' }])
    await store.putSnapshots(b, 'r', [{ index: 1, state: [] }])
    const r = await store.readStates([{ sessionId: b }, { sessionId: a, throughIndex: 1 }, { sessionId: 'nobody' }], 'r')
    assert.deepEqual(r.map((x) => [x.headIndex, x.snapshot, x.events.map((e) => e.index)]), [
      [1, { index: 1, state: [] }, []],
      [null, null, [1]],
      [null, null, []],
    ])
    assert.deepEqual(await store.readStates([], 'r'), [])
  })
})

describe('presence', () => {
  it('field-wise last writer wins, null deletes for good, expiry on the store clock', async () => {
    const ns = `room-${session()}`
    const t0 = clock.now()
    await store.presence.set(ns, 'alice', { cursor: 10, typing: true, tags: [] }, { at: t0, seen: 1, ttlMs: 5000 })
    const rows = await store.presence.read(ns)
    assert.deepEqual(rows, [
      { participant: 'alice', field: 'cursor', value: 10, seen: 1, at: t0, expiresAt: new Date(t0.getTime() + 5000) },
      { participant: 'alice', field: 'tags', value: [], seen: 1, at: t0, expiresAt: new Date(t0.getTime() + 5000) },
      { participant: 'alice', field: 'typing', value: true, seen: 1, at: t0, expiresAt: new Date(t0.getTime() + 5000) },
    ])
    const t1 = new Date(t0.getTime() + 10)
    await store.presence.set(ns, 'alice', { typing: null }, { at: t1, seen: 2, ttlMs: 5000 })
    // An older write arriving later loses, and cannot bring `typing` back.
    const older = new Date(t0.getTime() - 1)
    await store.presence.set(ns, 'alice', { typing: true, cursor: 3 }, { at: older, seen: 3, ttlMs: 5000 })
    assert.deepEqual((await store.presence.read(ns)).map((r) => [r.field, r.value]), [['cursor', 10], ['tags', []]])
    // A tie goes to the new write.
    await store.presence.set(ns, 'alice', { cursor: 4 }, { at: t0, seen: 3, ttlMs: 5000 })
    assert.deepEqual((await store.presence.read(ns)).map((r) => [r.field, r.value]), [['cursor', 4], ['tags', []]])
    await store.presence.set(ns, 'alice', {}, { at: t1, seen: 4, ttlMs: 5000 }) // nothing to write
    clock.advance(5000)
    assert.deepEqual(await store.presence.read(ns), [])
  })
})

describe('errors', () => {
  it('22023 and 22004 (and other data exceptions) become INVALID_PAYLOAD, never STORE_UNAVAILABLE', async () => {
    const s = session()
    let err = await rejectsWith(store.append(s, [{ type: 5 } as unknown as { type: string }]), 'INVALID_PAYLOAD')
    assert.equal((err.cause as { code?: string }).code, '22023')
    err = await rejectsWith(store.append(null as unknown as string, []), 'INVALID_PAYLOAD')
    assert.equal((err.cause as { code?: string }).code, '22004')
    err = await rejectsWith(store.read(s, { afterIndex: 1.5 }), 'INVALID_PAYLOAD')
    assert.equal((err.cause as { code?: string }).code, '22P02')
    await rejectsWith(store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: -1 }), 'INVALID_PAYLOAD')
    await rejectsWith(store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1, expiresAtMs: Number.NaN }), 'INVALID_PAYLOAD')
    await rejectsWith(store.failAttempt({ sessionId: s, index: 0, attempt: 1, error: 'x', maxFailures: 1 }), 'INVALID_PAYLOAD')
    await rejectsWith(store.append(s, [{ type: 't', payload: { n: 1n } }]), 'INVALID_PAYLOAD')
    await rejectsWith(store.append('x'.repeat(2000), [{ type: 't' }]), 'INVALID_PAYLOAD')
    assert.deepEqual(await store.read(s), [])
  })

  it('42501 becomes FORBIDDEN', async () => {
    const admin = pool(DB, 1)
    await admin.query('DROP ROLE IF EXISTS regress_node_reader')
    await admin.query('CREATE ROLE regress_node_reader LOGIN')
    await admin.query('GRANT SELECT ON a2_events TO regress_node_reader')
    const reader = new Pool({ database: DB, user: 'regress_node_reader', max: 1 })
    try {
      const st = a2Store({ client: reader })
      assert.deepEqual(await st.read('nobody'), [])
      const err = await rejectsWith(st.append('s', [{ type: 't' }]), 'FORBIDDEN')
      assert.equal((err.cause as { code?: string }).code, '42501')
    } finally {
      await reader.end()
      await admin.query('DROP OWNED BY regress_node_reader')
      await admin.query('DROP ROLE regress_node_reader')
      await admin.end()
    }
  })

  it('XX001 (a stored row that violates the contract) is the seed TypeError', async () => {
    const s = session()
    await store.append(s, [{ type: 't' }])
    await p.query(`UPDATE a2_events SET cause = '{"index": 0, "attempt": 1}' WHERE session_id = $1`, [s])
    const err = await store.read(s).then(() => assert.fail('expected TypeError'), (e: unknown) => e)
    assert.ok(err instanceof TypeError)
    assert.match(err.message, /invalid cause/)
  })

  it('connection and server failures become STORE_UNAVAILABLE with the pg error as cause', async () => {
    const missing = new Pool({ database: 'a2_node_no_such_database', max: 1 })
    missing.on('error', () => {})
    const st = a2Store({ client: missing })
    let err = await rejectsWith(st.read('s'), 'STORE_UNAVAILABLE')
    assert.equal((err.cause as { code?: string }).code, '3D000')
    await st.close()
    const refused = a2Store({ connectionString: 'postgresql://postgres@127.0.0.1:1/x' })
    err = await rejectsWith(refused.append('s', []), 'STORE_UNAVAILABLE')
    assert.equal((err.cause as { code?: string }).code, 'ECONNREFUSED')
    await refused.close()
    // A deadlock or serialization failure is the store's, and retryable.
    const conn = await p.connect()
    try {
      await conn.query('BEGIN')
      await conn.query("SET LOCAL statement_timeout = '1ms'")
      const slow = await conn.query('SELECT pg_sleep(1)').catch((e: unknown) => e)
      assert.equal((slow as { code?: string }).code, '57014')
    } finally {
      await conn.query('ROLLBACK')
      conn.release()
    }
  })

  it('a caused append, a completion and a failure of a stale attempt: the contract form and the strict form', async () => {
    const s = session()
    await store.append(s, [{ type: 'job' }])
    await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })
    clock.advance(1000)
    await store.claimAvailable({ sessionId: s, holder: 'w2', ttlMs: 1000 }) // attempt 2
    const stale = `^attempt 1 no longer owns event 1 in session "${s}"$`
    // The contract throws for a caused append (the server's Z2002), in both forms.
    const fromServer = await rejectsWith(store.append(s, [{ type: 'p', cause: { index: 1, attempt: 1 } }]), 'SUPERSEDED_ATTEMPT', new RegExp(stale))
    assert.equal((fromServer.cause as { code?: string }).code, 'Z2002')
    // Default: completion and failure resolve the contract's results, as the seed's store.
    const done = await store.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] })
    assert.deepEqual(done, { outcome: 'superseded' })
    assert.deepEqual(Object.keys(done), ['outcome'])
    const failed = await store.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'x', maxFailures: 3 })
    assert.deepEqual(failed, { outcome: 'superseded', failureCount: 0 })
    assert.deepEqual(Object.keys(failed), ['outcome', 'failureCount'])
    assert.equal(typeof failed.failureCount, 'number')

    // superseded: 'throw': both reject with SUPERSEDED_ATTEMPT, worded as the Z2002.
    // On the shared pool, without its end(): strict.close() must leave it open.
    const strict = a2Store({ client: { query: (text, values) => p.query(text, values) }, clock, superseded: 'throw' })
    try {
      await rejectsWith(strict.append(s, [{ type: 'p', cause: { index: 1, attempt: 1 } }]), 'SUPERSEDED_ATTEMPT', new RegExp(stale))
      await rejectsWith(strict.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [] }), 'SUPERSEDED_ATTEMPT', new RegExp(stale))
      await rejectsWith(strict.failAttempt({ sessionId: s, index: 1, attempt: 1, error: 'x', maxFailures: 3 }), 'SUPERSEDED_ATTEMPT', new RegExp(stale))
      // The strict form answers every other case as the default form does.
      assert.deepEqual(await strict.failAttempt({ sessionId: s, index: 1, attempt: 2, error: 'y', maxFailures: 3 }), { outcome: 'failed', failureCount: 1 })
      // Both forms are A2Stores.
      const seed: A2Store = strict
      assert.equal(typeof seed.completeAttempt, 'function')
    } finally {
      await strict.close()
    }
    // Nothing the stale calls did was written (the failure of attempt 2 was).
    const [e] = await store.read(s)
    assert.deepEqual([e!.processedAt, e!.failureCount, e!.lastError, e!.attemptCount], [null, 1, 'y', 2])
    const seed: A2Store = store
    assert.equal(typeof seed.completeAttempt, 'function')
  })

  it("superseded must be 'return' or 'throw'", () => {
    assert.throws(() => a2Store({ client: p, superseded: 'raise' as never }), /superseded must be 'return' or 'throw'/)
  })

  it('a2Store needs a connectionString or a client', () => {
    assert.throws(() => a2Store({}), TypeError)
  })
})

describe('the wire', () => {
  // A client that records every statement it is asked to run.
  const recording = (): { client: PostgresClient; texts: string[] } => {
    const texts: string[] = []
    return {
      texts,
      client: {
        query: (text, values) => {
          texts.push(text)
          return p.query(text, values)
        },
      },
    }
  }

  it('one statement per method; the clock rides in it as a local set_config, never SET', async () => {
    const { client, texts } = recording()
    const st = a2Store({ client, clock })
    const s = session()
    const calls: [string, () => Promise<unknown>][] = [
      ['append', () => st.append(s, [{ type: 'job' }, { type: 'job' }])], // failAttempt below fails the second (claimed) one
      ['read', () => st.read(s)],
      ['claimAvailable', () => st.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 1000 })],
      ['renewClaims', () => st.renewClaims({ sessionId: s, holder: 'w', ttlMs: 1000, claims: [{ index: 1, attempt: 1 }] })],
      ['completeAttempt', () => st.completeAttempt({ sessionId: s, index: 1, attempt: 1, events: [{ id: `${s}-c`, type: 'c' }] })],
      ['failAttempt', () => st.failAttempt({ sessionId: s, index: 2, attempt: 1, error: 'x', maxFailures: 1 })],
      ['readState', () => st.readState(s, 'r')],
      ['readStates', () => st.readStates([{ sessionId: s }], 'r')],
      ['putSnapshots', () => st.putSnapshots(s, 'r', [{ index: 1, state: {} }])],
      ['presence.set', () => st.presence.set(s, 'p', { f: 1 }, { at: clock.now(), seen: 1, ttlMs: 1000 })],
      ['presence.read', () => st.presence.read(s)],
    ]
    for (const [name, call] of calls) {
      texts.length = 0
      await call()
      assert.equal(texts.length, 1, `${name} sent ${texts.length} statements`)
      assert.doesNotMatch(texts[0]!, /^\s*(SET|BEGIN)/i, name)
      // read is timed too: it judges waits' timeouts (a2 0.4.0) at the store clock
      const timed = !['readState', 'readStates'].includes(name)
      assert.equal(/set_config\('a2\.now', \$\d+::text, true\)/.test(texts[0]!), timed, `${name}: ${texts[0]}`)
    }
  })

  it('nothing of the clock is left on the connection', async () => {
    const one = pool(DB, 1)
    try {
      const st = a2Store({ client: one, clock: new ManualClock('2030-05-05T05:05:05.005Z') })
      const r = await st.append(session(), [{ type: 't' }])
      assert.equal(r.events[0]!.createdAt.toISOString(), '2030-05-05T05:05:05.005Z')
      const { rows } = await one.query("SELECT coalesce(current_setting('a2.now', true), '') AS now")
      assert.equal(rows[0]!['now'], '')
      // Without a clock the server's wall clock is used.
      const wall = a2Store({ client: one })
      const before = Date.now()
      const w = await wall.append(session(), [{ type: 't' }])
      assert.ok(Math.abs(w.events[0]!.createdAt.getTime() - before) < 60_000)
    } finally {
      await one.end()
    }
  })

  it('connectionString creates a pool lazily; close ends it', async () => {
    const host = process.env['PGHOST'] ?? '/var/run/postgresql'
    const port = process.env['PGPORT'] ?? '5432'
    const user = process.env['PGUSER'] ?? 'postgres'
    const url = host.startsWith('/')
      ? `postgresql://${user}@/${DB}?host=${encodeURIComponent(host)}&port=${port}`
      : `postgresql://${user}@${host}:${port}/${DB}`
    const st = a2Store({ connectionString: url })
    const s = session()
    await st.append(s, [{ type: 't' }])
    assert.equal((await st.read(s)).length, 1)
    await st.close()
    await rejectsWith(st.read(s), 'STORE_UNAVAILABLE')
  })
})

describe('schema option', () => {
  it('finds an extension installed outside search_path', async () => {
    const db = 'a2_node_schema'
    await freshDatabase(db, 'queue')
    const q = pool(db, 2)
    try {
      const plain = a2Store({ client: q })
      await rejectsWith(plain.read('s'), 'STORE_UNAVAILABLE') // 42883: not on search_path
      const st = a2Store({ client: q, schema: 'queue' })
      await st.append('s', [{ type: 't', payload: [] }])
      assert.deepEqual((await st.read('s')).map((e) => e.payload), [[]])
      const c = await st.claimAvailable({ sessionId: 's', holder: 'w', ttlMs: 1000 })
      assert.equal(c.outcome, 'claimed')
    } finally {
      await q.end()
      await dropDatabase(db)
    }
  })
})
