/**
 * store.stream(): catch-up plus live, no gap while appends race the
 * LISTEN, reconnect after the listener's backend is terminated, the
 * polling fallback, one shared listener, return() and close().
 *
 * Where a test must prove that notifications (not polling) delivered an
 * event, the store polls every 60 s and the test waits at most a few.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { a2Store, type A2PostgresStore } from '../src/index.js'
import type { PostgresClient } from '../src/client.js'
import { listenerOf } from '../src/store.js'
import { Listener } from '../src/stream.js'
import { dropDatabase, freshDatabase, pool, sleep, take, within } from './helpers.js'

const DB = 'a2_node_stream'
const NO_POLL = 60_000

let writer: ReturnType<typeof pool>
let writerStore: A2PostgresStore
let n = 0
const session = (): string => `st-${++n}`

before(async () => {
  await freshDatabase(DB)
  writer = pool(DB, 4)
  writerStore = a2Store({ client: writer })
})

after(async () => {
  await writerStore.close()
  await dropDatabase(DB)
})

const appendN = async (s: string, count: number, from = 0): Promise<void> => {
  for (let i = 0; i < count; i++) await writerStore.append(s, [{ type: 't', payload: from + i }])
}

const until = async (cond: () => boolean, ms: number, what: string): Promise<void> => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out: ${what}`)
    await sleep(10)
  }
}

describe('stream', () => {
  it('catches up after startAfter, then delivers live events by notification', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    try {
      const s = session()
      await appendN(s, 3)
      const it = store.stream(s, { startAfter: 1 })
      const first = await within(take(it, 2), 5000, 'catch-up')
      assert.deepEqual(first.map((e) => e.index), [2, 3])
      assert.ok(first[0]!.createdAt instanceof Date)
      const live = within(take(it, 2), 5000, 'live events (notification)')
      await sleep(50)
      await appendN(s, 2, 3)
      assert.deepEqual((await live).map((e) => [e.index, e.payload]), [[4, 3], [5, 4]])
      assert.equal(listenerOf(store)!.listens, 1)
      await it.return!()
      assert.deepEqual(await it.next(), { done: true, value: undefined })
    } finally {
      await store.close()
    }
  })

  it('misses nothing while appends race the LISTEN (60 rounds)', async () => {
    // Each round opens a fresh store (so a fresh LISTEN) while a writer
    // appends a few events, starting a little later every round, so that
    // across the rounds the last append lands before the first read,
    // between the first read and the LISTEN, and after the LISTEN. With
    // polling off, an event missed by the catch-up would never arrive.
    let listenedFirst = 0
    for (let round = 0; round < 60; round++) {
      const p = pool(DB, 2)
      const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
      try {
        const s = session()
        const total = 3
        const appends = (async () => {
          await sleep(round % 15)
          for (let i = 0; i < total; i++) await writerStore.append(s, [{ type: 't', payload: i }])
        })()
        const it = store.stream(s)
        const got = await within(take(it, total), 10_000, `round ${round}: all ${total} events`)
        await appends
        assert.deepEqual(got.map((e) => e.index), [1, 2, 3], `round ${round}`)
        if (listenerOf(store)!.listens === 1) listenedFirst++
      } finally {
        await store.close()
      }
    }
    assert.equal(listenedFirst, 60)
  })

  it('reconnects after pg_terminate_backend on the listener and catches up', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    try {
      const s = session()
      await appendN(s, 1)
      const it = store.stream(s)
      assert.deepEqual((await within(take(it, 1), 5000, 'first')).map((e) => e.index), [1])
      const listener = listenerOf(store)!
      const pid = listener.backendPid
      assert.ok(pid !== null)
      const waiting = within(take(it, 1), 10_000, 'the event appended while the listener was down')
      const { rows } = await writer.query('SELECT pg_terminate_backend($1) AS ok', [pid])
      assert.equal(rows[0]!['ok'], true)
      // Appended while the listener is down or reconnecting: its
      // notification is lost, and only the catch-up after the new LISTEN
      // can find it (nothing else is appended until it has arrived).
      await appendN(s, 1, 1)
      assert.deepEqual((await waiting).map((e) => [e.index, e.payload]), [[2, 1]])
      await until(() => listener.listens >= 2, 10_000, 'a second LISTEN')
      assert.notEqual(listener.backendPid, pid)
      const live = within(take(it, 2), 10_000, 'live events after the reconnect')
      await appendN(s, 2, 2)
      assert.deepEqual((await live).map((e) => [e.index, e.payload]), [[3, 2], [4, 3]])
    } finally {
      await store.close()
    }
  })

  it('falls back to polling: listen: false', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, listen: false, pollIntervalMs: 100 })
    try {
      const s = session()
      await appendN(s, 1)
      const it = store.stream(s)
      assert.deepEqual((await within(take(it, 1), 5000, 'catch-up')).map((e) => e.index), [1])
      const next = within(take(it, 1), 5000, 'polled event')
      await appendN(s, 1, 1)
      assert.deepEqual((await next).map((e) => e.index), [2])
      assert.equal(listenerOf(store)!.listens, 0)
    } finally {
      await store.close()
    }
  })

  it('falls back to polling: appends with a2.notify = off announce nothing', async () => {
    const quiet = pool(DB, 1)
    const quietStore = a2Store({ client: { query: (t, v) => quiet.query(t, v) } })
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: 200 })
    try {
      await quiet.query("SET a2.notify = 'off'") // this pool's only connection
      const s = session()
      const it = store.stream(s)
      const got = within(take(it, 2), 5000, 'polled events')
      await sleep(100)
      await quietStore.append(s, [{ type: 't' }])
      await quietStore.append(s, [{ type: 't' }])
      const started = Date.now()
      assert.deepEqual((await got).map((e) => e.index), [1, 2])
      assert.ok(Date.now() - started < 2000)
      assert.equal(listenerOf(store)!.listens, 1)
    } finally {
      await store.close()
      await quiet.end()
    }
  })

  it('one listener serves many streams; each stream gets only its session', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    try {
      const sessions = [session(), session(), session()]
      const streams = [0, 1, 2, 0, 1].map((i) => ({ s: sessions[i]!, it: store.stream(sessions[i]!) }))
      const got = Promise.all(streams.map(({ it }) => within(take(it, 2), 5000, 'two each')))
      await sleep(50)
      for (const s of sessions) await appendN(s, 2, 0)
      for (const [k, events] of (await got).entries()) {
        assert.deepEqual(events.map((e) => [e.sessionId, e.index]), [[streams[k]!.s, 1], [streams[k]!.s, 2]])
      }
      assert.equal(listenerOf(store)!.listens, 1)
      const { rows } = await writer.query(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid() AND query LIKE '%pg_backend_pid%'",
        [DB],
      )
      assert.equal(rows[0]!['n'], 1)
    } finally {
      await store.close()
    }
  })

  it('pages through a backlog larger than one read, each event once, in order', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL, pageSize: 7 })
    try {
      const s = session()
      await writerStore.append(s, Array.from({ length: 30 }, (_, i) => ({ type: 't', payload: i })))
      const it = store.stream(s, { startAfter: 3 })
      const got = await within(take(it, 27), 5000, 'backlog')
      assert.deepEqual(got.map((e) => e.index), Array.from({ length: 27 }, (_, i) => i + 4))
    } finally {
      await store.close()
    }
  })

  it('close() ends a waiting next(); for await ends too', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    const s = session()
    await appendN(s, 1)
    const seen: number[] = []
    const loop = (async () => {
      for await (const e of store.stream(s)) seen.push(e.index)
    })()
    const waiting = store.stream(s)
    const pending = waiting.next().then(() => waiting.next())
    await until(() => seen.length === 1, 5000, 'first event')
    await store.close()
    await within(loop, 2000, 'for-await loop ends on close')
    assert.deepEqual(await within(pending, 2000, 'next() settles on close'), { done: true, value: undefined })
    assert.deepEqual(seen, [1])
  })

  it('close() right after stream() (while the listener connects) does not hang, and frees the connection', async () => {
    for (let i = 0; i < 5; i++) {
      const p = pool(DB, 2)
      const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
      const it = store.stream(session())
      const pending = it.next()
      await within(store.close(), 3000, 'close while connecting')
      assert.deepEqual(await pending, { done: true, value: undefined })
      assert.equal(p.totalCount, 0)
    }
  })

  // Before 0.3.0 this case polled the pool until idleCount === totalCount,
  // which already held before the listener had asked the pool for a
  // connection (0 === 0); the listener then took one, LISTENed for no
  // stream and released it, and a loaded machine was still inside that
  // round trip 100 ms later (issue 15, item 10). Now the listener takes no
  // connection once no stream is left, and the test waits for stopped().
  it('return() of the only stream right after stream() takes no listener connection', async () => {
    const p = pool(DB, 2)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    try {
      const it = store.stream(session())
      await it.return!()
      const listener = listenerOf(store)!
      await within(listener.stopped(), 3000, 'the listener stops')
      assert.equal(listener.listening, false)
      assert.equal(listener.listens, 0)
      assert.equal(p.totalCount, 0)
      assert.equal(p.waitingCount, 0)
    } finally {
      await store.close()
    }
  })

  it('return() of the only stream after its LISTEN is active releases the connection, unlistened', async () => {
    const p = pool(DB, 2)
    const store = a2Store({ client: p, pollIntervalMs: NO_POLL })
    try {
      const it = store.stream(session())
      const listener = listenerOf(store)!
      await within(listener.ready(), 5000, 'the LISTEN')
      assert.equal(listener.listening, true)
      assert.equal(p.totalCount - p.idleCount, 1)
      await it.return!()
      await within(listener.stopped(), 3000, 'the listener stops')
      assert.equal(listener.listening, false)
      assert.equal(listener.listens, 1)
      assert.equal(p.waitingCount, 0)
      assert.equal(p.totalCount, 1)
      assert.equal(p.idleCount, 1)
      // The pool's only connection, the released one, listens no more.
      const { rows } = await p.query('SELECT pg_catalog.pg_listening_channels() AS c')
      assert.deepEqual(rows, [])
      assert.equal(p.totalCount, 1)
    } finally {
      await store.close()
    }
  })

  it('a stream that ends while the listener connects: the connection is released without a LISTEN', async () => {
    const queries: string[] = []
    let released = 0
    let connecting = false
    let resolveConnect!: (c: unknown) => void
    const conn = {
      query: async (text: string) => {
        queries.push(text)
        return { rows: [] }
      },
      release: () => {
        released += 1
      },
      on: () => conn,
      removeListener: () => conn,
    }
    const client = {
      query: async () => ({ rows: [] }),
      connect: () => {
        connecting = true
        return new Promise((r) => (resolveConnect = r))
      },
    } as unknown as PostgresClient
    const listener = new Listener(async () => client, async () => [], {
      listen: true,
      pollIntervalMs: NO_POLL,
      pageSize: 10,
    })
    const s = listener.open('s', 0)
    await until(() => connecting, 3000, 'connect() called')
    await s.return()
    resolveConnect(conn)
    await within(listener.stopped(), 3000, 'the listener stops')
    assert.deepEqual(queries, [])
    assert.equal(released, 1)
    assert.equal(listener.listens, 0)
    assert.equal(listener.listening, false)
  })

  it('bad input ends the stream with INVALID_PAYLOAD', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, listen: false })
    try {
      const it = store.stream('x'.repeat(2000))
      await assert.rejects(it.next(), { name: 'A2Error', code: 'INVALID_PAYLOAD' })
      assert.deepEqual(await it.next(), { done: true, value: undefined })
    } finally {
      await store.close()
    }
  })
})
