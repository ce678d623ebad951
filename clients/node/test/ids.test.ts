/**
 * uuidv7 / timeOrderedIds: the client's time-ordered ids have the layout
 * the server uses for the ids it generates (RFC 9562 version 7, 48-bit
 * millisecond time, an 18-bit counter, 56 random bits), and every id of a
 * source is greater than the one before it. No database needed.
 */

import assert from 'node:assert/strict'
import { describe, it } from 'node:test'

import { timeOrderedIds, uuidv7 } from '../src/index.js'
import { ManualClock } from './helpers.js'

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

const timeOf = (id: string): number => parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
// counter: 12 bits after the version nibble, then 6 bits after the variant
const counterOf = (id: string): number =>
  (parseInt(id.slice(15, 18), 16) << 6) | (parseInt(id.slice(19, 21), 16) & 0x3f)

const ascending = (ids: string[]): void => {
  for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} < ${ids[i]}`)
}

describe('time-ordered ids', () => {
  it('version 7 form, the clock in the first 48 bits', () => {
    const clock = new ManualClock('2026-03-01T00:00:00.000Z')
    const next = timeOrderedIds(clock)
    const id = next()
    assert.match(id, V7)
    assert.equal(timeOf(id), Date.parse('2026-03-01T00:00:00.000Z'))
    clock.advance(5)
    assert.equal(timeOf(next()), Date.parse('2026-03-01T00:00:00.005Z'))
  })

  it('same millisecond: the counter adds one, ids ascend and differ', () => {
    const next = timeOrderedIds(new ManualClock('2026-03-01T00:00:01.000Z'))
    const ids = Array.from({ length: 5000 }, () => next())
    assert.equal(new Set(ids).size, ids.length)
    ascending(ids)
    for (const id of ids) assert.equal(timeOf(id), Date.parse('2026-03-01T00:00:01.000Z'))
    for (let i = 1; i < ids.length; i++) assert.equal(counterOf(ids[i]!), counterOf(ids[i - 1]!) + 1)
    // the first id of a millisecond leaves at least 2^17 increments of room
    assert.ok(counterOf(ids[0]!) < 2 ** 17)
  })

  it('a clock that steps back keeps the last time and counts on', () => {
    const clock = new ManualClock('2026-03-01T00:00:02.000Z')
    const next = timeOrderedIds(clock)
    const a = next()
    clock.advance(-1000)
    const b = next()
    assert.ok(a < b)
    assert.equal(timeOf(b), timeOf(a))
    assert.equal(counterOf(b), counterOf(a) + 1)
  })

  it('a time before 1970 is 0; an invalid Date throws', () => {
    assert.equal(timeOrderedIds(new ManualClock('1969-12-31T23:59:59.999Z'))().slice(0, 13), '00000000-0000')
    assert.throws(() => timeOrderedIds({ now: () => new Date(NaN) })(), RangeError)
  })

  it('uuidv7 follows the wall clock', () => {
    const before = Date.now()
    const ids = [uuidv7(), uuidv7(), uuidv7()]
    const after = Date.now()
    ascending(ids)
    for (const id of ids) {
      assert.match(id, V7)
      assert.ok(timeOf(id) >= before && timeOf(id) <= after)
    }
  })
})
