// A stream-driven a2 worker in Node: claim, run the handler's own SQL and
// the completion in ONE transaction, fail (retry, then dead-letter) on a
// handler error.
//
// Run it against the demo cluster (see clients/node/README.md):
//
//   A2_KEEP_CLUSTER=1 bash scripts/demo.sh                 # leaves a2_demo on /tmp/a2-pg
//   (cd clients/node && npm ci && npm run build)
//   node examples/node-worker.mjs                          # appends 5 demo orders, ships them, exits
//   node examples/node-worker.mjs --forever order-43       # keeps serving a session
//   bash scripts/cluster.sh stop
//
// A2_DATABASE_URL overrides the connection (default: the demo cluster's
// socket /tmp/a2-pg/sock, port 54329, database a2_demo).

import { hostname } from 'node:os'

import { a2Store } from '../clients/node/dist/index.js'

const args = process.argv.slice(2)
const forever = args.includes('--forever')
const sessionId = args.find((a) => !a.startsWith('--')) ?? 'order-42'
const url =
  process.env.A2_DATABASE_URL ??
  'postgresql://postgres@/a2_demo?host=%2Ftmp%2Fa2-pg%2Fsock&port=54329'
const holder = `${hostname()}:${process.pid}`
const LEASE_MS = 30_000
const MAX_FAILURES = 3

const store = a2Store({ connectionString: url })

// The handler: its own write, in the transaction `tx` the completion joins.
async function ship(tx, event) {
  const { item, qty } = event.payload ?? {}
  if (!item || !(qty > 0)) throw new Error(`order ${event.index} has no item or quantity`)
  await tx.query('INSERT INTO shipments (session_id, event_index, item, qty) VALUES ($1, $2, $3, $4)', [
    event.sessionId,
    event.index,
    item,
    qty,
  ])
  return [{ id: `${event.id}/shipped`, type: 'order.shipped', payload: { item, qty }, settled: true }]
}

async function work() {
  const claim = await store.claimAvailable({ sessionId, holder, ttlMs: LEASE_MS })
  if (claim.outcome !== 'claimed') return claim.outcome
  for (const event of claim.events) {
    const attempt = event.attemptCount
    try {
      const result = await store.transaction(async (tx) => {
        const children = await ship(tx, event)
        return tx.completeAttempt({ sessionId, index: event.index, attempt, events: children })
      })
      console.log(`#${event.index} ${event.type}: ${result.outcome}`)
    } catch (err) {
      // The transaction rolled back: no shipment row, event not completed.
      // Inside transaction() a stale attempt throws, so that the handler's
      // write cannot commit without the completion.
      if (err?.code === 'SUPERSEDED_ATTEMPT') {
        // Another attempt owns the event now (our lease ran out): leave it.
        console.log(`#${event.index} ${event.type}: superseded`)
        continue
      }
      // Outside transaction() the store answers as the contract does: a
      // stale attempt is the result { outcome: 'superseded', failureCount }.
      const failed = await store.failAttempt({
        sessionId,
        index: event.index,
        attempt,
        error: String(err?.message ?? err),
        maxFailures: MAX_FAILURES,
      })
      if (failed.outcome === 'superseded') continue
      console.log(`#${event.index} ${event.type}: ${failed.outcome} (${failed.failureCount}/${MAX_FAILURES}): ${err?.message ?? err}`)
    }
  }
  return 'claimed'
}

async function main() {
  await store.transaction((tx) =>
    tx.query(`CREATE TABLE IF NOT EXISTS shipments (
                session_id text, event_index bigint, item text, qty int,
                PRIMARY KEY (session_id, event_index))`),
  )
  if (!forever) {
    const orders = [
      { item: 'tea', qty: 2 },
      { item: 'cups', qty: 6 },
      { item: 'kettle', qty: 0 }, // the handler refuses it: failed, then dead-lettered
      { item: 'sugar', qty: 1 },
      { item: 'spoons', qty: 4 },
    ]
    const { events } = await store.append(
      sessionId,
      orders.map((payload) => ({ type: 'order.placed', payload })),
    )
    console.log(`appended #${events[0].index}..#${events.at(-1).index} to ${sessionId}`)
  }

  // The stream wakes the worker; claimAvailable decides what is eligible.
  for await (const event of store.stream(sessionId)) {
    if (event.processedAt !== null || event.failedAt !== null) continue
    let outcome
    do outcome = await work()
    while (outcome === 'claimed')
    if (!forever && outcome === 'settled') break
    if (outcome === 'busy') {
      // A failed order is re-claimable at once; other leases belong to other workers.
      await new Promise((r) => setTimeout(r, 200))
    }
  }

  const { rows } = await store.transaction((tx) =>
    tx.query('SELECT item, qty FROM shipments WHERE session_id = $1 ORDER BY event_index', [sessionId]),
  )
  console.log(`shipments of ${sessionId}: ${rows.map((r) => `${r.qty} ${r.item}`).join(', ')}`)
  await store.close()
}

main().catch(async (err) => {
  console.error(err)
  await store.close().catch(() => {})
  process.exit(1)
})
