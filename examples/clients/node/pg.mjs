// examples/clients/node/pg.mjs: the cookbook's worker on node-postgres (pg 8).
//
//   A2_URL=postgresql://...  A2_LISTEN_URL=postgresql://...  A2_RESTART='...'  node pg.mjs
//
// A2_URL is where the app's queries go (the server, or pgbouncer in
// transaction mode); A2_LISTEN_URL a direct connection for LISTEN;
// A2_RESTART a shell command that restarts the server (the test's stand-in
// for one).  It prints the transcript in ../expected.txt; test/suites/
// 86-cookbook.sh runs it direct and through pgbouncer, and docs/clients.md
// quotes the parts between [name] and [/name] markers.  follow() and
// retrying() are in pg-helpers.mjs (Kysely and Drizzle use them too).
import { execFile } from 'node:child_process'
import { isDeepStrictEqual, promisify } from 'node:util'
import pg from 'pg'
import { follow, retrying, seen } from './pg-helpers.mjs'

// [pool]
// node-postgres sends unnamed statements unless a query has a `name`, so
// the same pool works direct and through pgbouncer in transaction mode.
const pool = new pg.Pool({ connectionString: process.env.A2_URL, max: 8 })
// Without this handler, an idle client that loses its connection (a server
// restart, pg_terminate_backend) raises an 'error' event nobody handles,
// and the process exits.  With it, the pool drops the client and opens a
// new one on the next query.
pool.on('error', (err) => console.error(`pool: idle client lost: ${err.message}`))
// [/pool]

// [json]
// jsonb arguments go as JSON text: JSON.stringify, and ::jsonb in the SQL.
// A JS array passed as it is becomes a PostgreSQL array literal ({...}),
// which jsonb refuses.  jsonb results come back parsed.
async function append(sessionId, events) {
  const { rows } = await pool.query('SELECT a2_append($1, $2::jsonb) AS r',
    [sessionId, JSON.stringify(events)])
  return rows[0].r                  // { events: [StoredEvent], hasPending }
}

async function read(sessionId, afterIndex = 0) {
  const { rows } = await pool.query('SELECT a2_read($1, $2) AS r', [sessionId, afterIndex])
  return rows[0].r                  // [StoredEvent], index and counts are numbers
}
// [/json]

// [transaction]
// The handler's writes and a2_complete on one client, in one transaction:
// both commit or neither does.
async function inTransaction(work) {
  const client = await pool.connect()
  try {
    await client.query('BEGIN')
    const result = await work(client)
    await client.query('COMMIT')
    return result
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {})   // the connection may be gone
    throw err
  } finally {
    client.release()                // a broken client is dropped by the pool
  }
}

async function ship(tx, sessionId, ev, children) {
  for (const item of ev.payload.items) {
    await tx.query('INSERT INTO shipments (order_id, sku, qty) VALUES ($1, $2, $3)',
      [sessionId, item.sku, item.qty])
  }
  const { rows } = await tx.query('SELECT a2_complete($1, $2, $3, $4::jsonb) AS r',
    [sessionId, ev.index, ev.attemptCount, JSON.stringify(children)])
  return rows[0].r                  // { outcome: 'completed', events } or { outcome: 'superseded' }
}
// [/transaction]


const check = (ok, what) => { if (!ok) throw new Error(`check failed: ${what}`) }
const count = async (sql, params) => Number((await pool.query(sql, params)).rows[0].n)  // bigint: a string

// 1. JSON in and out: arrays, unicode, numbers.
const order = {
  id: 'order-1/placed', type: 'order.placed', lane: 'payments',
  payload: { items: [{ sku: 'tea', qty: 2 }, { sku: 'cups', qty: 6 }], note: 'thé ☕ — 東京' },
}
const appended = await append('order-1', [order])
console.log(`append: order-1 index ${appended.events[0].index}, hasPending ${appended.hasPending}`)
const [stored] = await read('order-1')
check(isDeepStrictEqual(stored.payload, order.payload), 'payload round trip')   // jsonb reorders keys
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
const { rows: [{ c: claim }] } = await pool.query('SELECT a2_claim($1, $2, $3) AS c',
  ['order-1', 'worker-1', 30000])
const ev = claim.events[0]
console.log(`claim: ${claim.outcome} [${claim.events.map((e) => e.index)}] attempt ${ev.attemptCount}`)
const paid = [{ id: 'order-1/paid', type: 'payment.captured', payload: { amount: 7.5 } }]

class HandlerFailed extends Error {}
try {
  await inTransaction(async (tx) => {
    await ship(tx, 'order-1', ev, paid)
    throw new HandlerFailed()       // something after the completion fails: all of it rolls back
  })
} catch (err) {
  if (!(err instanceof HandlerFailed)) throw err
}
const unprocessed = (await read('order-1'))[0].processedAt === null
console.log(`rollback: shipments ${await count("SELECT count(*) AS n FROM shipments WHERE order_id = 'order-1'")}, event 1 ${unprocessed ? 'unprocessed' : 'processed'}`)

const done = await inTransaction((tx) => ship(tx, 'order-1', ev, paid))
console.log(`complete: ${done.outcome}, child index ${done.events[0].index}, shipments ${await count("SELECT count(*) AS n FROM shipments WHERE order_id = 'order-1'")}`)

// 4. Stale work arrives two ways: {"outcome": "superseded"} from a
// completion, Z2002 from an append caused by the old attempt.
await pool.query('SELECT a2_claim($1, $2, $3)', ['order-1', 'worker-1', 0])   // a lease that expires at once
const { rows: [{ c: again }] } = await pool.query('SELECT a2_claim($1, $2, $3) AS c', ['order-1', 'worker-2', 30000])
check(again.events[0].attemptCount === 2, 'second attempt')
// [stale]
const late = (await pool.query('SELECT a2_complete($1, $2, $3) AS r', ['order-1', 2, 1])).rows[0].r
let fenced = ''
try {
  await append('order-1', [{ type: 'refund.requested', cause: { index: 2, attempt: 1 } }])
} catch (err) {
  if (err.code !== 'Z2002') throw err
  fenced = err.code                 // the attempt no longer owns the event: drop this work
}
// [/stale]
console.log(`stale: complete ${late.outcome}, caused append ${fenced}`)
check((await pool.query('SELECT a2_complete($1, $2, $3) AS r', ['order-1', 2, 2])).rows[0].r.outcome === 'completed', 'complete attempt 2')

// 5. LISTEN and catch up.
const follower = follow(process.env.A2_LISTEN_URL, ['order-1'])
let listens = 0
follower.on('listening', () => listens++)
await seen(follower, 'order-1', 2)
await append('order-1', [{ id: 'order-1/packed', type: 'order.packed', settled: true }])
await seen(follower, 'order-1', 3)
console.log(`listen: caught up to 2, heard ${follower.lastSeen.get('order-1')}`)

// 6. A server restart: the pool and the listener come back by themselves.
await promisify(execFile)('sh', ['-c', process.env.A2_RESTART])
const shipped = await retrying(() => append('order-1', [{ id: 'order-1/shipped', type: 'order.shipped', settled: true }]))
await seen(follower, 'order-1', 4)
console.log(`restart: appended ${shipped.events[0].index}, listener caught up to ${follower.lastSeen.get('order-1')}`)
while (listens < 2) await new Promise((resolve) => follower.once('listening', resolve))
await retrying(() => append('order-1', [{ id: 'order-1/delivered', type: 'order.delivered', settled: true }]))
await seen(follower, 'order-1', 5)
console.log(`restart: listener heard ${follower.lastSeen.get('order-1')}`)

// 7. A burst: 8 workers at once through the pool, 5 orders each.
await Promise.all([...Array(8).keys()].map(async (w) => {
  for (let i = 0; i < 5; i++) {
    const sessionId = `burst-${w}-${i}`
    await append(sessionId, [{ id: `${sessionId}/placed`, type: 'order.placed', payload: { items: [{ sku: 'tea', qty: 1 }] } }])
    const { rows: [{ c }] } = await pool.query('SELECT a2_claim($1, $2, $3) AS c', [sessionId, `worker-${w}`, 30000])
    const r = await inTransaction((tx) => ship(tx, sessionId, c.events[0], []))
    check(r.outcome === 'completed', `burst ${sessionId}`)
  }
}))
console.log(`burst: ${await count("SELECT count(*) AS n FROM shipments WHERE order_id LIKE 'burst-%'")} orders shipped by 8 workers`)

await follower.close()
await pool.end()
console.log('done')
