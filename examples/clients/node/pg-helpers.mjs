// examples/clients/node/pg-helpers.mjs: for apps on node-postgres (pg.mjs,
// and kysely.mjs and drizzle.mjs, which run on it): follow() follows a2
// sessions with LISTEN a2_events plus catch-up and reconnects after a
// server restart (Kysely and Drizzle have no LISTEN of their own);
// retrying() repeats a call that lost its connection.
import { EventEmitter } from 'node:events'
import pg from 'pg'

// [follow]
// LISTEN needs its own direct connection: through pgbouncer in transaction
// mode the LISTEN stays on a server connection other clients then use.
// After every (re)connect: LISTEN first, then read what was missed, so an
// event committed while disconnected is never lost.
export function follow(connectionString, sessionIds) {
  const lastSeen = new Map(sessionIds.map((s) => [s, 0]))
  const emitter = new EventEmitter()      // 'events' (sessionId, events), 'listening'
  let client = null
  let stopped = false
  let chain = Promise.resolve()           // one read at a time, in order

  const catchUp = (c, sessionId) => {
    const read = chain.then(async () => {
      const { rows: [{ r }] } = await c.query('SELECT a2_read($1, $2) AS r',
        [sessionId, lastSeen.get(sessionId)])
      if (r.length > 0) {
        lastSeen.set(sessionId, r[r.length - 1].index)
        emitter.emit('events', sessionId, r)
      }
    })
    chain = read.catch(() => {})
    return read
  }

  async function run() {
    let delayMs = 100
    while (!stopped) {
      const c = new pg.Client({ connectionString })
      const lost = new Promise((resolve) => c.once('end', resolve))
      c.on('error', () => {})             // a lost connection also ends it: see lost
      try {
        await c.connect()
        c.on('notification', (n) => {
          const { sessionId, index } = JSON.parse(n.payload)   // {"sessionId", "index"}
          if (index > (lastSeen.get(sessionId) ?? Infinity)) catchUp(c, sessionId).catch(() => {})
        })
        await c.query('LISTEN a2_events')
        for (const s of lastSeen.keys()) await catchUp(c, s)
        client = c
        delayMs = 100
        emitter.emit('listening')
        await lost                        // until the server goes away
      } catch {
        c.end().catch(() => {})
      }
      client = null
      if (!stopped) await new Promise((resolve) => setTimeout(resolve, delayMs))
      delayMs = Math.min(delayMs * 2, 2000)
    }
  }

  run()
  emitter.lastSeen = lastSeen
  emitter.close = async () => { stopped = true; await client?.end() }
  return emitter
}
// [/follow]

// [retry]
// After a restart the first statement on an old connection can fail with
// a connection error.  a2 calls are safe to repeat: an append with ids
// replays, a completion of the same attempt returns the stored children.
// (Drizzle wraps the driver's error: the pg error is its cause.)
const connectionLost = (err) => err.cause ? connectionLost(err.cause) :
  /^(08|57P0)/.test(err.code ?? '') || ['ECONNREFUSED', 'ECONNRESET', 'EPIPE'].includes(err.code) ||
  /Connection terminated|connection .*(closed|ended)/i.test(err.message)

export async function retrying(call, { tries = 120, delayMs = 250 } = {}) {
  for (let i = 1; ; i++) {
    try {
      return await call()
    } catch (err) {
      if (i >= tries || !connectionLost(err)) throw err
      console.error(`retrying after: ${err.message}`)
      await new Promise((resolve) => setTimeout(resolve, delayMs))
    }
  }
}
// [/retry]

// Resolves once the follower has seen `index` of `sessionId` (harness).
export function seen(follower, sessionId, index, timeoutMs = 15000) {
  return new Promise((resolve, reject) => {
    const check = () => {
      if (follower.lastSeen.get(sessionId) >= index) { done(); resolve() }
    }
    const timer = setTimeout(() => { done(); reject(new Error(`follower did not see ${sessionId} ${index}`)) }, timeoutMs)
    const done = () => { clearTimeout(timer); follower.off('events', check) }
    follower.on('events', check)
    check()
  })
}
