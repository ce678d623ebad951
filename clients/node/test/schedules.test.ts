/**
 * a2 0.4.0 recurring schedules through the client (docs/time.md,
 * "Schedules"): schedule, listSchedules, pauseSchedule, resumeSchedule,
 * unschedule and fireSchedules, driven by the injected clock (a
 * transaction-local a2.now per statement), in 2031 so that the server's
 * own scheduler, on the wall clock, finds nothing due. Nothing sleeps.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, type A2PostgresStore } from '../src/index.js'
import { ManualClock, dropDatabase, freshDatabase, storeOn } from './helpers.js'

const DB = 'a2_node_schedules'

let clock: ManualClock
let store: A2PostgresStore

const rejectsWith = async (promise: Promise<unknown>, code: string, sqlstate: string): Promise<void> => {
  const err = await promise.then(
    () => assert.fail(`expected ${code}`),
    (e: unknown) => e,
  )
  assert.ok(err instanceof A2Error, `expected A2Error ${code}, got ${String(err)}`)
  assert.equal(err.code, code, err.message)
  assert.equal((err.cause as { code?: string } | undefined)?.code, sqlstate, err.message)
}

before(async () => {
  await freshDatabase(DB)
  clock = new ManualClock('2031-06-01T09:59:30.000Z')
  ;({ store } = storeOn(DB, { clock }))
})

after(async () => {
  await store.close()
  await dropDatabase(DB)
})

describe('schedules', () => {
  it('schedule returns the next tick; fireSchedules fires each tick once', async () => {
    const next = await store.schedule('hourly', '0 * * * *', 'reports', { type: 'report', payload: { k: 1 } })
    assert.equal(next.toISOString(), '2031-06-01T10:00:00.000Z')
    assert.deepEqual(await store.fireSchedules(), [])

    clock.ms = Date.parse('2031-06-01T10:00:00.005Z')
    const fired = await store.fireSchedules()
    assert.deepEqual(fired, [{
      name: 'hourly',
      tickAt: new Date('2031-06-01T10:00:00.000Z'),
      sessionId: 'reports',
      index: 1,
      eventId: 'schedule:hourly@2031-06-01T10:00:00.000Z',
    }])
    assert.deepEqual(await store.fireSchedules(), [])
    const events = await store.read('reports')
    assert.deepEqual(events.map((e) => [e.id, e.type, e.payload]), [
      ['schedule:hourly@2031-06-01T10:00:00.000Z', 'report', { k: 1 }],
    ])
  })

  it('listSchedules shows the definition, next and last tick', async () => {
    const [s] = await store.listSchedules()
    assert.ok(s)
    assert.equal(s.name, 'hourly')
    assert.equal(s.spec, '0 * * * *')
    assert.equal(s.timezone, 'UTC')
    assert.equal(s.sessionId, 'reports')
    assert.deepEqual(s.event, { type: 'report', payload: { k: 1 } })
    assert.equal(s.missed, 'latest')
    assert.equal(s.backfillLimit, 100)
    assert.equal(s.graceMs, 60000)
    assert.equal(s.paused, false)
    assert.equal(s.nextTickAt.toISOString(), '2031-06-01T11:00:00.000Z')
    assert.equal(s.lastTickAt?.toISOString(), '2031-06-01T10:00:00.000Z')
    assert.equal(s.firedCount, 1)
    assert.equal(s.createdAt.toISOString(), '2031-06-01T09:59:30.000Z')
  })

  it('pause and resume; missed ticks follow the policy (backfill here)', async () => {
    clock.ms = Date.parse('2031-06-01T10:05:00.000Z')
    await store.schedule('bf', '*/10 * * * *', 'bf', { type: 'tick' }, { missed: 'backfill', backfillLimit: 2 })
    assert.equal((await store.pauseSchedule('bf')).toISOString(), '2031-06-01T10:10:00.000Z')
    clock.ms = Date.parse('2031-06-01T10:45:00.000Z')
    assert.deepEqual((await store.fireSchedules()).filter((f) => f.name === 'bf'), [])
    assert.equal((await store.listSchedules()).find((s) => s.name === 'bf')?.paused, true)
    await store.resumeSchedule('bf')
    const fired = (await store.fireSchedules()).filter((f) => f.name === 'bf')
    assert.deepEqual(fired.map((f) => f.tickAt.toISOString()), ['2031-06-01T10:30:00.000Z', '2031-06-01T10:40:00.000Z'])
  })

  it('a time zone option: weekdays at 09:00 Berlin', async () => {
    const next = await store.schedule('standup', '0 9 * * mon-fri', 'team', { type: 'standup' }, { timezone: 'Europe/Berlin' })
    // 2031-06-01 is a Sunday; Monday 09:00 CEST is 07:00 UTC
    assert.equal(next.toISOString(), '2031-06-02T07:00:00.000Z')
  })

  it('inside a transaction, with the handler writes', async () => {
    await store.transaction(async (tx) => {
      await tx.schedule('in-tx', '@daily', 'tx', { type: 't' })
      assert.equal((await tx.listSchedules()).some((s) => s.name === 'in-tx'), true)
    })
    assert.equal(await store.unschedule('in-tx'), true)
    assert.equal(await store.unschedule('in-tx'), false)
  })

  it('errors: invalid spec, zone, event (22023), unknown name (Z2003); nothing written', async () => {
    const before = (await store.listSchedules()).length
    await rejectsWith(store.schedule('x', '61 * * * *', 's', { type: 't' }), 'INVALID_PAYLOAD', '22023')
    await rejectsWith(store.schedule('x', '@hourly', 's', { type: 't' }, { timezone: 'Nowhere/None' }), 'INVALID_PAYLOAD', '22023')
    await rejectsWith(store.schedule('x', '@hourly', 's', { type: 't', id: 'mine' }), 'INVALID_PAYLOAD', '22023')
    // Z2003 is a TypeError, as for an event that does not exist
    // one call at a time: a second promise made before the first is awaited
    // rejects unobserved (an unhandled rejection fails the test file)
    for (const call of [() => store.pauseSchedule('nope'), () => store.resumeSchedule('nope')]) {
      const err = await call().then(() => assert.fail('expected Z2003'), (e: unknown) => e)
      assert.ok(err instanceof TypeError, String(err))
      assert.match(err.message, /no schedule named "nope"/)
      assert.equal((err.cause as { code?: string } | undefined)?.code, 'Z2003')
    }
    assert.equal((await store.listSchedules()).length, before)
  })
})
