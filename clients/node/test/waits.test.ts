/**
 * a2 0.4.0 durable waits through the client: waitFor on appended and
 * returned events, waitResult on StoredEvent, and what is sent when they
 * are not used. Time is the injected clock (a2.now); nothing sleeps.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, a2Store, type A2PostgresStore, type PostgresClient } from '../src/index.js'
import { ManualClock, Pool, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_waits'

let clock: ManualClock
let store: A2PostgresStore
let p: InstanceType<typeof Pool>
let n = 0
const session = (): string => `wait-${++n}`
const at = (ms: number): Date => new Date(clock.ms + ms)

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

const claim = async (s: string): Promise<unknown> => {
  const c = await store.claimAvailable({ sessionId: s, holder: 'w', ttlMs: 60_000 })
  if (c.outcome === 'claimed') return c.events.map((e) => [e.index, e.waitResult ?? null])
  if (c.outcome === 'busy') return `busy until ${c.retryAt.toISOString()}`
  return c.outcome
}

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock('2026-07-01T00:00:00.000Z')
  ;({ store, pool: p } = storeOn(DB, { clock }))
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
})

describe('waitFor', () => {
  it('is sent only when given; StoredEvent has waitFor and waitResult only when they apply', async () => {
    const s = session()
    const { client, sent } = recording()
    const st = a2Store({ client, clock })
    const r = await st.append(s, [
      { id: `${s}-plain`, type: 'plain' },
      { id: `${s}-wait`, type: 'order', waitFor: { types: ['paid'], timeoutMs: 3_600_000 } },
      { id: `${s}-forever`, type: 'order', waitFor: { types: ['paid', 'cancelled'] } },
      { id: `${s}-null`, type: 'plain', waitFor: null },
    ])
    const body = JSON.parse(sent[0]!.values[1] as string) as Record<string, unknown>[]
    assert.deepEqual(body.map((e) => e['waitFor']), [
      undefined, { types: ['paid'], timeoutMs: 3_600_000 }, { types: ['paid', 'cancelled'] }, undefined,
    ])
    assert.deepEqual(body.map((e) => 'waitFor' in e), [false, true, true, false])
    for (const events of [r.events, await store.read(s)]) {
      assert.deepEqual(events.map((e) => [e.waitFor, e.waitResult, 'waitFor' in e, 'waitResult' in e]), [
        [undefined, undefined, false, false],
        [{ types: ['paid'], timeoutMs: 3_600_000 }, undefined, true, false],
        [{ types: ['paid', 'cancelled'] }, undefined, true, false],
        [undefined, undefined, false, false],
      ])
      // a waiting event shows no notBefore of its own
      assert.equal(events[1]!.notBefore, undefined)
    }
  })

  it('ends by event: not claimed before, claimed with the index and type after', async () => {
    const s = session()
    await store.append(s, [{ type: 'order', waitFor: { types: ['paid'], timeoutMs: 60_000 } }, { type: 'other' }])
    assert.deepEqual(await claim(s), [[2, null]])
    await store.completeAttempt({ sessionId: s, index: 2, attempt: 1, events: [] })
    assert.equal(await claim(s), `busy until ${at(60_000).toISOString()}`)
    clock.advance(30_000)
    await store.append(s, [{ type: 'paid' }])
    assert.deepEqual(await claim(s), [[1, { index: 3, type: 'paid' }], [3, null]])
  })

  it('ends by timeout: claimed at createdAt + timeoutMs with timedOut', async () => {
    const s = session()
    const r = await store.append(s, [{ type: 'reminder', waitFor: { types: ['reply'], timeoutMs: 60_000 } }])
    const timeout = new Date(r.events[0]!.createdAt.getTime() + 60_000)
    clock.advance(59_999)
    assert.equal(await claim(s), `busy until ${timeout.toISOString()}`)
    clock.advance(1)
    assert.deepEqual(await claim(s), [[1, { timedOut: true }]])
    // a late reply ends nothing
    await store.append(s, [{ type: 'reply' }])
    assert.deepEqual((await store.read(s)).map((e) => e.waitResult), [{ timedOut: true }, undefined])
  })

  it('a handler returns a waiting event ("continue when X happens")', async () => {
    const s = session()
    await store.append(s, [{ type: 'start' }])
    assert.deepEqual(await claim(s), [[1, null]])
    const done = await store.completeAttempt({
      sessionId: s, index: 1, attempt: 1,
      events: [{ id: `${s}-cont`, type: 'continue', waitFor: { types: ['approved'] } }],
    })
    assert.ok(done.outcome === 'completed')
    assert.deepEqual(done.events.map((e) => e.waitFor), [{ types: ['approved'] }])
    clock.advance(86_400_000)
    assert.equal(await claim(s), 'busy until +275760-09-13T00:00:00.000Z')
    await store.append(s, [{ type: 'approved' }])
    assert.deepEqual(await claim(s), [[2, { index: 3, type: 'approved' }], [3, null]])
  })

  it('bad waits are INVALID_PAYLOAD (22023) and write nothing', async () => {
    const s = session()
    for (const waitFor of [{ types: [] }, { types: [''] }, { types: ['x'], timeoutMs: -1 }, { types: ['x'], timeoutMs: 1.5 }]) {
      const err = await store.append(s, [{ type: 'x', waitFor }]).then(() => assert.fail('expected an error'), (e: unknown) => e)
      assert.ok(err instanceof A2Error)
      assert.equal(err.code, 'INVALID_PAYLOAD', err.message)
    }
    assert.deepEqual(await store.read(s), [])
  })
})
