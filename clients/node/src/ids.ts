/**
 * Time-ordered event ids: RFC 9562 version 7 UUIDs, the layout the server
 * uses for the ids it generates (src/uuid7.c in the extension).
 *
 * An id starts with its 48-bit millisecond time, so new ids land at the
 * right edge of the unique `event_id` index instead of on a random leaf:
 * fewer pages touched per append, and far fewer full-page images in the
 * WAL after each checkpoint. Give `ids: uuidv7` to `a2Store` (or use
 * `uuidv7()` for the ids a handler returns) when ids are made in the app.
 *
 * Layout: 48 bits of Unix milliseconds, version 7, an 18-bit counter (12
 * bits in rand_a, 6 after the variant), variant 10, 56 random bits. The
 * counter makes each id of a source greater than the one before it (RFC
 * 9562 section 6.2, method 1): the first id of a millisecond seeds it with
 * 17 random bits; later ids of the same millisecond, or of a clock that
 * stepped back, keep the last time and add one; an overflow moves the time
 * one millisecond ahead.
 */

import { randomFillSync } from 'node:crypto'

import type { Clock, IdSource } from './types.js'

const MAX_MS = 2 ** 48 - 1
const COUNTER_MAX = 2 ** 18 - 1

const hex2 = (n: number): string => n.toString(16).padStart(2, '0')

/** A source of version 7 UUIDs timed by `clock` (default: `Date.now()`). */
export const timeOrderedIds = (clock?: Clock): IdSource => {
  let lastMs = -1
  let lastCounter = 0
  const rnd = new Uint8Array(10)
  return () => {
    const now = clock ? clock.now().getTime() : Date.now()
    if (!Number.isFinite(now)) throw new RangeError('uuidv7: the clock returned an invalid Date')
    randomFillSync(rnd)
    let ms = Math.min(Math.max(Math.floor(now), 0), MAX_MS)
    let counter: number
    if (ms > lastMs) {
      counter = ((rnd[0]! << 16) | (rnd[1]! << 8) | rnd[2]!) & (COUNTER_MAX >>> 1)
    } else if (lastCounter < COUNTER_MAX) {
      ms = lastMs
      counter = lastCounter + 1
    } else {
      ms = Math.min(lastMs + 1, MAX_MS)
      counter = 0
    }
    lastMs = ms
    lastCounter = counter
    const t = ms.toString(16).padStart(12, '0')
    let tail = ''
    for (let i = 3; i < 10; i++) tail += hex2(rnd[i]!)
    return (
      `${t.slice(0, 8)}-${t.slice(8)}-` +
      `${hex2(0x70 | (counter >>> 14))}${hex2((counter >>> 6) & 0xff)}-` +
      `${hex2(0x80 | (counter & 0x3f))}${tail.slice(0, 2)}-${tail.slice(2)}`
    )
  }
}

/** The default time-ordered id source: version 7 UUIDs on the wall clock. */
export const uuidv7: IdSource = timeOrderedIds()
