// examples/clients/node/postgresjs.mjs: the cookbook's worker on postgres.js (3.4).
//
//   A2_URL=...  A2_LISTEN_URL=...  A2_PGBOUNCER=0|1  A2_RESTART='...'  node postgresjs.mjs
//
// Same transcript as pg.mjs (../expected.txt); run by test/suites/
// 86-cookbook.sh direct and through pgbouncer, quoted by docs/clients.md.
import { execFile } from 'node:child_process'
import { isDeepStrictEqual, promisify } from 'node:util'
import postgres from 'postgres'

// [pool]
// Through pgbouncer in transaction mode: prepare: false (postgres.js
// otherwise names its prepared statements, which live on one server
// connection and are missing on the next).  Direct, prepare as you like.
const behindPgbouncer = process.env.A2_PGBOUNCER === '1'
const sql = postgres(process.env.A2_URL, { max: 8, prepare: !behindPgbouncer })
// [/pool]

// [json]
// jsonb arguments: sql.json(value).  Not JSON.stringify: postgres.js
// encodes a parameter it knows is jsonb itself, so a string would be
// stored as a JSON string ("[...]") and a2 answers 22023 "events must be
// a JSON array".  jsonb results come back parsed.
async function append(sessionId, events) {
  const [{ r }] = await sql`SELECT a2_append(${sessionId}, ${sql.json(events)}) AS r`
  return r                          // { events: [StoredEvent], hasPending }
}

async function read(sessionId, afterIndex = 0) {
  const [{ r }] = await sql`SELECT a2_read(${sessionId}, ${afterIndex}) AS r`
  return r                          // [StoredEvent], index and counts are numbers
}
// [/json]

// [transaction]
// sql.begin runs the callback in one transaction on one connection and
// rolls back when it throws: the handler's writes and a2_complete commit
// together or not at all.
async function ship(tx, sessionId, ev, children) {
  for (const item of ev.payload.items) {
    await tx`INSERT INTO shipments (order_id, sku, qty) VALUES (${sessionId}, ${item.sku}, ${item.qty})`
  }
  const [{ r }] = await tx`SELECT a2_complete(${sessionId}, ${ev.index}, ${ev.attemptCount}, ${tx.json(children)}) AS r`
  return r                          // { outcome: 'completed', events } or { outcome: 'superseded' }
}
// usage: await sql.begin((tx) => ship(tx, sessionId, ev, children))
// [/transaction]

// [retry]
// postgres.js reconnects by itself; a statement that was on a connection
// the server closed fails once.  a2 calls are safe to repeat.
const connectionLost = (err) => /^(08|57P0)/.test(err.code ?? '') ||
  ['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED'].includes(err.code)

async function retrying(call, { tries = 120, delayMs = 250 } = {}) {
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

// [follow]
// LISTEN on a direct connection (its own postgres() instance, not the one
// that may point at pgbouncer).  postgres.js re-LISTENs after a reconnect
// and then calls onlisten: read there what was missed.
function follow(connectionString, sessionIds) {
  const listener = postgres(connectionString, { max: 1 })
  const lastSeen = new Map(sessionIds.map((s) => [s, 0]))
  const waiters = []
  let chain = Promise.resolve()
  const catchUp = (sessionId) => (chain = chain.then(async () => {
    const [{ r }] = await listener`SELECT a2_read(${sessionId}, ${lastSeen.get(sessionId)}) AS r`
    if (r.length > 0) lastSeen.set(sessionId, r[r.length - 1].index)
    waiters.forEach((w) => w())
  }).catch(() => {}))

  const ready = listener.listen('a2_events',
    (payload) => {
      const { sessionId, index } = JSON.parse(payload)
      if (index > (lastSeen.get(sessionId) ?? Infinity)) catchUp(sessionId)
    },
    () => { listens++; for (const s of lastSeen.keys()) catchUp(s) })
  return { lastSeen, waiters, ready, close: () => listener.end() }
}
// [/follow]
let listens = 0

function seen(follower, sessionId, index, timeoutMs = 15000) {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`follower did not see ${sessionId} ${index}`)), timeoutMs)
    const check = () => {
      if (follower.lastSeen.get(sessionId) >= index) {
        clearTimeout(timer)
        follower.waiters.splice(follower.waiters.indexOf(check), 1)
        resolve()
      }
    }
    follower.waiters.push(check)
    check()
  })
}

const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`) }
const count = async (like) => Number((await sql`SELECT count(*) AS n FROM shipments WHERE order_id LIKE ${like}`)[0].n)  // bigint: a string

// 1. JSON in and out.
const order = {
  id: 'order-1/placed', type: 'order.placed', lane: 'payments',
  payload: { items: [{ sku: 'tea', qty: 2 }, { sku: 'cups', qty: 6 }], note: 'thé ☕ — 東京' },
}
const appended = await append('order-1', [order])
console.log(`append: order-1 index ${appended.events[0].index}, hasPending ${appended.hasPending}`)
const [stored] = await read('order-1')
check(isDeepStrictEqual(stored.payload, order.payload), 'payload round trip')
console.log(`read: payload round trip, note "${stored.payload.note}", ${stored.payload.items.length} items`)

// 2. Errors carry their SQLSTATE.
// [errors]
try {
  await append('order-1', { not: 'an array' })
} catch (err) {
  console.log(`error: ${err.code} ${err.message}`)   // 22023 invalid "events" for session "order-1"
}
// [/errors]

// 3. Claim, then complete inside the app's transaction.
const [{ c: claim }] = await sql`SELECT a2_claim(${'order-1'}, ${'worker-1'}, ${30000}) AS c`
const ev = claim.events[0]
console.log(`claim: ${claim.outcome} [${claim.events.map((e) => e.index)}] attempt ${ev.attemptCount}`)
const paid = [{ id: 'order-1/paid', type: 'payment.captured', payload: { amount: 7.5 } }]

class HandlerFailed extends Error {}
try {
  await sql.begin(async (tx) => {
    await ship(tx, 'order-1', ev, paid)
    throw new HandlerFailed()
  })
} catch (err) {
  if (!(err instanceof HandlerFailed)) throw err
}
const unprocessed = (await read('order-1'))[0].processedAt === null
console.log(`rollback: shipments ${await count('order-1')}, event 1 ${unprocessed ? 'unprocessed' : 'processed'}`)

const done = await sql.begin((tx) => ship(tx, 'order-1', ev, paid))
console.log(`complete: ${done.outcome}, child index ${done.events[0].index}, shipments ${await count('order-1')}`)

// 4. Stale work, both ways.
await sql`SELECT a2_claim(${'order-1'}, ${'worker-1'}, ${0})`
const [{ c: again }] = await sql`SELECT a2_claim(${'order-1'}, ${'worker-2'}, ${30000}) AS c`
check(again.events[0].attemptCount === 2, 'second attempt')
const [{ r: late }] = await sql`SELECT a2_complete(${'order-1'}, ${2}, ${1}) AS r`
let fenced = ''
try {
  await append('order-1', [{ type: 'refund.requested', cause: { index: 2, attempt: 1 } }])
} catch (err) {
  if (err.code !== 'Z2002') throw err
  fenced = err.code
}
console.log(`stale: complete ${late.outcome}, caused append ${fenced}`)
check((await sql`SELECT a2_complete(${'order-1'}, ${2}, ${2}) AS r`)[0].r.outcome === 'completed', 'complete attempt 2')

// 5. LISTEN and catch up.
const follower = follow(process.env.A2_LISTEN_URL, ['order-1'])
await follower.ready
await seen(follower, 'order-1', 2)
await append('order-1', [{ id: 'order-1/packed', type: 'order.packed', settled: true }])
await seen(follower, 'order-1', 3)
console.log(`listen: caught up to 2, heard ${follower.lastSeen.get('order-1')}`)

// 6. A server restart.
await promisify(execFile)('sh', ['-c', process.env.A2_RESTART])
const shipped = await retrying(() => append('order-1', [{ id: 'order-1/shipped', type: 'order.shipped', settled: true }]))
await seen(follower, 'order-1', 4)
console.log(`restart: appended ${shipped.events[0].index}, listener caught up to ${follower.lastSeen.get('order-1')}`)
for (let i = 0; listens < 2; i++) {
  check(i < 150, 'the listener came back')
  await new Promise((resolve) => setTimeout(resolve, 100))
}
await retrying(() => append('order-1', [{ id: 'order-1/delivered', type: 'order.delivered', settled: true }]))
await seen(follower, 'order-1', 5)
console.log(`restart: listener heard ${follower.lastSeen.get('order-1')}`)

// 7. A burst: 8 workers at once, 5 orders each.
await Promise.all([...Array(8).keys()].map(async (w) => {
  for (let i = 0; i < 5; i++) {
    const sessionId = `burst-${w}-${i}`
    await append(sessionId, [{ id: `${sessionId}/placed`, type: 'order.placed', payload: { items: [{ sku: 'tea', qty: 1 }] } }])
    const [{ c }] = await sql`SELECT a2_claim(${sessionId}, ${`worker-${w}`}, ${30000}) AS c`
    const r = await sql.begin((tx) => ship(tx, sessionId, c.events[0], []))
    check(r.outcome === 'completed', `burst ${sessionId}`)
  }
}))
console.log(`burst: ${await count('burst-%')} orders shipped by 8 workers`)

await follower.close()
await sql.end()
console.log('done')
