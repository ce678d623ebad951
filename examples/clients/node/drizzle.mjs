// examples/clients/node/drizzle.mjs: the cookbook's worker on Drizzle ORM
// (0.45) over a node-postgres pool.
//
//   A2_URL=...  A2_LISTEN_URL=...  A2_RESTART='...'  node drizzle.mjs
//
// Same transcript as pg.mjs (../expected.txt); run by test/suites/
// 86-cookbook.sh direct and through pgbouncer, quoted by docs/clients.md.
import { execFile } from 'node:child_process'
import { isDeepStrictEqual, promisify } from 'node:util'
import { count as countRows, like, sql } from 'drizzle-orm'
import { drizzle } from 'drizzle-orm/node-postgres'
import { integer, pgTable, text } from 'drizzle-orm/pg-core'
import pg from 'pg'
import { follow, retrying, seen } from './pg-helpers.mjs'

const shipments = pgTable('shipments', {
  orderId: text('order_id').notNull(),
  sku: text('sku').notNull(),
  qty: integer('qty').notNull(),
})

// [pool]
// Drizzle runs on node-postgres: pg's rules apply (unnamed statements,
// fine through pgbouncer; an 'error' handler on the pool).
const pool = new pg.Pool({ connectionString: process.env.A2_URL, max: 8 })
pool.on('error', (err) => console.error(`pool: idle client lost: ${err.message}`))
const db = drizzle({ client: pool })
// [/pool]

// [json]
// a2 calls are raw SQL (sql``).  JSON.stringify the jsonb arguments and
// cast them: Drizzle expands a JS array into a list of parameters
// (a2_append($1, ($2, $3)) is "function a2_append(unknown, record) does
// not exist", 42883).  jsonb results come back parsed.
async function append(sessionId, events, executor = db) {
  const { rows } = await executor.execute(sql`SELECT a2_append(${sessionId}, ${JSON.stringify(events)}::jsonb) AS r`)
  return rows[0].r                  // { events: [StoredEvent], hasPending }
}

async function read(sessionId, afterIndex = 0) {
  const { rows } = await db.execute(sql`SELECT a2_read(${sessionId}, ${afterIndex}) AS r`)
  return rows[0].r
}
// [/json]

// [transaction]
// db.transaction(): the app's own writes and the a2 call on `tx` commit
// together; a throw rolls both back.
async function ship(tx, sessionId, ev, children) {
  for (const item of ev.payload.items) {
    await tx.insert(shipments).values({ orderId: sessionId, sku: item.sku, qty: item.qty })
  }
  const { rows } = await tx.execute(sql`SELECT a2_complete(${sessionId}, ${ev.index}, ${ev.attemptCount}, ${JSON.stringify(children)}::jsonb) AS r`)
  return rows[0].r                  // { outcome: 'completed', events } or { outcome: 'superseded' }
}
// usage: await db.transaction((tx) => ship(tx, sessionId, ev, children))
// [/transaction]

// [errors]
// Drizzle wraps the driver's error ("Failed query: ..."): the SQLSTATE is
// on its cause.
const sqlstate = (err) => err.cause?.code ?? err.code
// [/errors]

const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`) }
const count = async (pattern) =>
  (await db.select({ n: countRows() }).from(shipments).where(like(shipments.orderId, pattern)))[0].n
const claimOf = async (sessionId, holder, ttlMs) =>
  (await db.execute(sql`SELECT a2_claim(${sessionId}, ${holder}, ${ttlMs}) AS c`)).rows[0].c
const complete = async (sessionId, index, attempt) =>
  (await db.execute(sql`SELECT a2_complete(${sessionId}, ${index}, ${attempt}) AS r`)).rows[0].r

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

// 2. Errors.
try {
  await append('order-1', { not: 'an array' })
} catch (err) {
  console.log(`error: ${sqlstate(err)} ${err.cause?.message}`)
}

// 3. Claim, then complete inside the app's transaction.
const claim = await claimOf('order-1', 'worker-1', 30000)
const ev = claim.events[0]
console.log(`claim: ${claim.outcome} [${claim.events.map((e) => e.index)}] attempt ${ev.attemptCount}`)
const paid = [{ id: 'order-1/paid', type: 'payment.captured', payload: { amount: 7.5 } }]

class HandlerFailed extends Error {}
try {
  await db.transaction(async (tx) => {
    await ship(tx, 'order-1', ev, paid)
    throw new HandlerFailed()
  })
} catch (err) {
  if (!(err instanceof HandlerFailed)) throw err
}
const unprocessed = (await read('order-1'))[0].processedAt === null
console.log(`rollback: shipments ${await count('order-1')}, event 1 ${unprocessed ? 'unprocessed' : 'processed'}`)

const done = await db.transaction((tx) => ship(tx, 'order-1', ev, paid))
console.log(`complete: ${done.outcome}, child index ${done.events[0].index}, shipments ${await count('order-1')}`)

// 4. Stale work, both ways.
await claimOf('order-1', 'worker-1', 0)
check((await claimOf('order-1', 'worker-2', 30000)).events[0].attemptCount === 2, 'second attempt')
const late = await complete('order-1', 2, 1)
let fenced = ''
try {
  await append('order-1', [{ type: 'refund.requested', cause: { index: 2, attempt: 1 } }])
} catch (err) {
  if (sqlstate(err) !== 'Z2002') throw err
  fenced = sqlstate(err)
}
console.log(`stale: complete ${late.outcome}, caused append ${fenced}`)
check((await complete('order-1', 2, 2)).outcome === 'completed', 'complete attempt 2')

// 5. LISTEN and catch up (pg-helpers.mjs: Drizzle has no LISTEN).
const follower = follow(process.env.A2_LISTEN_URL, ['order-1'])
let listens = 0
follower.on('listening', () => listens++)
await seen(follower, 'order-1', 2)
await append('order-1', [{ id: 'order-1/packed', type: 'order.packed', settled: true }])
await seen(follower, 'order-1', 3)
console.log(`listen: caught up to 2, heard ${follower.lastSeen.get('order-1')}`)

// 6. A server restart.
await promisify(execFile)('sh', ['-c', process.env.A2_RESTART])
const shipped = await retrying(() => append('order-1', [{ id: 'order-1/shipped', type: 'order.shipped', settled: true }]))
await seen(follower, 'order-1', 4)
console.log(`restart: appended ${shipped.events[0].index}, listener caught up to ${follower.lastSeen.get('order-1')}`)
while (listens < 2) await new Promise((resolve) => follower.once('listening', resolve))
await retrying(() => append('order-1', [{ id: 'order-1/delivered', type: 'order.delivered', settled: true }]))
await seen(follower, 'order-1', 5)
console.log(`restart: listener heard ${follower.lastSeen.get('order-1')}`)

// 7. A burst: 8 workers at once, 5 orders each.
await Promise.all([...Array(8).keys()].map(async (w) => {
  for (let i = 0; i < 5; i++) {
    const sessionId = `burst-${w}-${i}`
    await append(sessionId, [{ id: `${sessionId}/placed`, type: 'order.placed', payload: { items: [{ sku: 'tea', qty: 1 }] } }])
    const c = await claimOf(sessionId, `worker-${w}`, 30000)
    const r = await db.transaction((tx) => ship(tx, sessionId, c.events[0], []))
    check(r.outcome === 'completed', `burst ${sessionId}`)
  }
}))
console.log(`burst: ${await count('burst-%')} orders shipped by 8 workers`)

await follower.close()
await pool.end()
console.log('done')
