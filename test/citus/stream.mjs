// test/citus/stream.mjs: the TypeScript client's stream in distributed mode.
//
// Run by test/citus/stream.sh with the built client (clients/node/dist) and
// argv: coordinator URL, then "session:port" for each session to stream
// (a session on each worker, placed by citus_test_session_on). The store is
// configured with the coordinator only and polls every 10 minutes, so an
// event arrives within the 10 s this allows only through a notification.
// It checks that:
//   - the listener finds a2 distributed and LISTENs on the 3 nodes that
//     a2_notify_nodes() lists, over connections derived from the URL;
//   - a delegated append (a2_append(...) on the coordinator, run on the
//     session's worker) reaches its stream, announced by that worker;
//   - a coordinator-run append (a2_append(...) IS NOT NULL) reaches it,
//     announced by the coordinator;
//   - no LISTEN was restarted meanwhile (so no catch-up read found them).
// Prints "ok ..." lines; exits 1 with a reason on the first failure.

import assert from 'node:assert/strict'

const [url, ...placed] = process.argv.slice(2)
const { a2Store } = await import(new URL('../../clients/node/dist/index.js', import.meta.url))
const { listenerOf } = await import(new URL('../../clients/node/dist/store.js', import.meta.url))
const pg = (await import(new URL('../../clients/node/node_modules/pg/lib/index.js', import.meta.url))).default

const sessions = placed.map((p) => {
  const [id, port] = p.split(':')
  return { id, port: Number(port) }
})

const within = (p, ms, what) =>
  Promise.race([p, new Promise((_, reject) => setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms))])
const sleep = (ms) => new Promise((r) => setTimeout(r, ms))
const until = async (cond, ms, what) => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out: ${what}`)
    await sleep(20)
  }
}

const store = a2Store({ connectionString: url, pollIntervalMs: 600_000 })
const writer = new pg.Client({ connectionString: url })
await writer.connect()
try {
  const streams = sessions.map((s) => ({ ...s, it: store.stream(s.id) }))
  const listener = listenerOf(store)
  // The first next() of each stream does the catch-up read (nothing there yet).
  const pending = streams.map((s) => s.it.next())
  await until(() => listener.nodes.length === 3 && listener.nodes.every((n) => n.listening), 10_000, 'a LISTEN on each node')
  assert.equal(listener.distributed, true)
  const { rows } = await writer.query('SELECT node_port FROM a2_notify_nodes() ORDER BY node_port')
  assert.deepEqual(
    listener.nodes.map((n) => n.port).sort((a, b) => a - b),
    rows.map((r) => r.node_port),
  )
  console.log(`ok   stream: a2 distributed; LISTEN on ${listener.nodes.map((n) => `${n.host}:${n.port}`).join(', ')}`)
  await sleep(300) // the catch-up reads are done: from now on only notifications deliver

  const heard = (port) => listener.nodes.find((n) => n.port === port).notifications
  const coordPort = Number(new URLSearchParams(url.split('?')[1] ?? '').get('port'))
  for (const [k, s] of streams.entries()) {
    const before = heard(s.port)
    await writer.query(`SELECT a2_append($1, '[{"type": "delegated"}]')`, [s.id])
    const r = await within(pending[k], 10_000, `the delegated append on ${s.id} (worker :${s.port})`)
    assert.deepEqual([r.value.index, r.value.type], [1, 'delegated'])
    await until(() => heard(s.port) > before, 2000, `worker :${s.port} delivered the notification`)
    console.log(`ok   stream: a delegated append on ${s.id} arrived, announced by its worker :${s.port}`)

    const beforeCoord = heard(coordPort)
    const next = s.it.next()
    await writer.query(`SELECT a2_append($1, '[{"type": "coordinator-run"}]') IS NOT NULL`, [s.id])
    const c = await within(next, 10_000, `the coordinator-run append on ${s.id}`)
    assert.deepEqual([c.value.index, c.value.type], [2, 'coordinator-run'])
    await until(() => heard(coordPort) > beforeCoord, 2000, 'the coordinator delivered the notification')
    console.log(`ok   stream: a coordinator-run append on ${s.id} arrived, announced by the coordinator :${coordPort}`)
  }
  assert.deepEqual(listener.nodes.map((n) => n.listens), [1, 1, 1], 'a LISTEN was restarted (a catch-up could have found the events)')
} catch (err) {
  console.log(`FAIL stream: ${err.message}`)
  process.exitCode = 1
} finally {
  await writer.end()
  await store.close()
}
