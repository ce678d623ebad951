/**
 * store.stream() in distributed mode, faked on the single-node cluster.
 *
 * The store under test uses the `schema` option to call, in schema
 * `fake`, an `a2_is_distributed()` that says true, an `a2_notify_nodes()`
 * that lists three "nodes" (coord, w1, w2), and an `a2_read` that is the
 * real one in `public`. Its `nodeConnection` maps coord to the store's
 * database and w1/w2 to two other databases of the cluster. Notifications
 * are per database in PostgreSQL, so each "node" is a channel of its own:
 * an event is stored where the reads see it (database coord, written with
 * `a2.notify = off`, so it announces nothing) and announced only on one
 * "worker" (a `pg_notify` there), which is how a delegated append looks to
 * a consumer on Citus. Polling is off (60 s), so such an event arrives
 * only if the stream LISTENs on that node, or by a catch-up read.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { a2Store, type A2PostgresStore, type NodeClientConfig } from '../src/index.js'
import { nodeClientConfig, storeSettings } from '../src/nodes.js'
import { listenerOf } from '../src/store.js'
import { Client, dropDatabase, freshDatabase, pool, sleep, take, within } from './helpers.js'

const DB = 'a2_node_dist'
const W1 = 'a2_node_dist_w1'
const W2 = 'a2_node_dist_w2'
const NO_POLL = 60_000

let writer: ReturnType<typeof pool>
let writerStore: A2PostgresStore
let quiet: ReturnType<typeof pool>
let n = 0
const session = (): string => `ds-${++n}`

const fakeSchema = (schema: string, nodes: string): string[] => [
  `CREATE SCHEMA ${schema}`,
  `CREATE FUNCTION ${schema}.a2_read(text, bigint, bigint, integer) RETURNS jsonb
     LANGUAGE sql AS 'SELECT public.a2_read($1, $2, $3, $4)'`,
  `CREATE FUNCTION ${schema}.a2_is_distributed() RETURNS boolean LANGUAGE sql AS 'SELECT true'`,
  `CREATE FUNCTION ${schema}.a2_notify_nodes() RETURNS TABLE (node_name text, node_port integer)
     LANGUAGE sql AS $$ ${nodes} $$`,
]

before(async () => {
  await freshDatabase(DB)
  for (const db of [W1, W2]) {
    await dropDatabase(db)
    const admin = new Client({ database: 'postgres' })
    await admin.connect()
    await admin.query(`CREATE DATABASE ${db}`)
    await admin.end()
  }
  writer = pool(DB, 4)
  writerStore = a2Store({ client: writer })
  const port = Number(process.env['PGPORT'] ?? 5432)
  const host = (process.env['PGHOST'] ?? 'localhost').replace(/'/g, "''")
  for (const stmt of [
    ...fakeSchema('fake', `VALUES ('coord', 1), ('w1', 2), ('w2', 3)`),
    // One node at the cluster's real address: the default settings path.
    ...fakeSchema('fake_one', `VALUES ('${host}', ${port})`),
    // Distributed, but no node listed: the store's own LISTEN stays.
    ...fakeSchema('fake_none', `SELECT NULL::text, NULL::integer WHERE false`),
    // An a2 0.1.0 install: no a2_is_distributed().
    'CREATE SCHEMA old',
    `CREATE FUNCTION old.a2_read(text, bigint, bigint, integer) RETURNS jsonb
       LANGUAGE sql AS 'SELECT public.a2_read($1, $2, $3, $4)'`,
  ]) {
    await writer.query(stmt)
  }
  quiet = pool(DB, 1)
  await quiet.query("SET a2.notify = 'off'") // this pool's only connection
})

after(async () => {
  await quiet.end()
  await writerStore.close()
  for (const db of [DB, W1, W2]) await dropDatabase(db)
})

/** Store an event without announcing it anywhere. */
const appendQuietly = async (s: string): Promise<number> => {
  const { rows } = await quiet.query(`SELECT public.a2_append($1, '[{"type": "q"}]') -> 'events' -> 0 ->> 'index' AS i`, [s])
  return Number(rows[0]!['i'])
}

/** Announce `s` at `index` on database `db` only, as a worker's notifier would. */
const announceOn = async (db: string, s: string, index: number): Promise<void> => {
  const c = new Client({ database: db })
  await c.connect()
  try {
    await c.query(`SELECT pg_notify('a2_events', json_build_object('sessionId', $1::text, 'index', $2::bigint)::text)`, [s, index])
  } finally {
    await c.end()
  }
}

const until = async (cond: () => boolean, ms: number, what: string): Promise<void> => {
  const end = Date.now() + ms
  while (!cond()) {
    if (Date.now() > end) assert.fail(`timed out: ${what}`)
    await sleep(10)
  }
}

/** Settles with `undefined` when `p` has not settled within `ms`. */
const notWithin = async <T>(p: Promise<T>, ms: number): Promise<T | undefined> =>
  Promise.race([p, sleep(ms).then(() => undefined)])

const databases = { coord: DB, w1: W1, w2: W2 } as Record<string, string>

const datnameOf = async (pid: number | null): Promise<string | undefined> => {
  const { rows } = await writer.query('SELECT datname FROM pg_stat_activity WHERE pid = $1', [pid])
  return rows[0]?.['datname'] as string | undefined
}

describe('stream, distributed mode', () => {
  it('LISTENs on every listed node; an announcement on any node wakes the stream', async () => {
    const p = pool(DB)
    const store = a2Store({
      client: p,
      schema: 'fake',
      pollIntervalMs: NO_POLL,
      nodeConnection: (node) => ({ database: databases[node.host]! }),
    })
    // Control: a single-node store on the same database hears only there.
    const single = a2Store({ client: pool(DB), pollIntervalMs: NO_POLL })
    try {
      const s1 = session()
      const s2 = session()
      await writerStore.append(s1, [{ type: 'before' }])
      const it1 = store.stream(s1)
      const it2 = store.stream(s2)
      const control = single.stream(s1)
      assert.deepEqual((await within(take(it1, 1), 5000, 'catch-up')).map((e) => e.index), [1])
      assert.deepEqual((await within(take(control, 1), 5000, 'control catch-up')).map((e) => e.index), [1])
      const listener = listenerOf(store)!
      await until(() => listener.nodes.length === 3 && listener.nodes.every((x) => x.listening), 5000, 'three LISTENs')
      assert.equal(listener.distributed, true)
      assert.equal(listenerOf(single)!.distributed, false)
      assert.equal(listener.backendPid, null)
      assert.deepEqual(listener.nodes.map((x) => [x.host, x.port, x.listens]), [['coord', 1, 1], ['w1', 2, 1], ['w2', 3, 1]])
      for (const x of listener.nodes) assert.equal(await datnameOf(x.backendPid), databases[x.host])

      // Announced only on w1: the distributed store hears it, the control does not.
      const next1 = within(take(it1, 1), 5000, 's1: announced on w1')
      const controlNext = take(control, 1)
      await sleep(50)
      const i2 = await appendQuietly(s1)
      await announceOn(W1, s1, i2)
      assert.deepEqual((await next1).map((e) => [e.index, e.type]), [[2, 'q']])
      assert.deepEqual(listener.nodes.map((x) => x.notifications), [0, 1, 0])
      assert.equal(await notWithin(controlNext, 700), undefined, 'the single-node store heard w1')

      // Announced only on w2, for the other session.
      const next2 = within(take(it2, 1), 5000, 's2: announced on w2')
      await sleep(50)
      await announceOn(W2, s2, await appendQuietly(s2))
      assert.deepEqual((await next2).map((e) => [e.sessionId, e.index]), [[s2, 1]])
      assert.deepEqual(listener.nodes.map((x) => x.notifications), [0, 1, 1])

      // An ordinary append, announced by a2 on the store's own database.
      const next3 = within(take(it1, 1), 5000, 's1: announced on coord')
      await sleep(50)
      await writerStore.append(s1, [{ type: 'c' }])
      assert.deepEqual((await next3).map((e) => [e.index, e.type]), [[3, 'c']])
      assert.deepEqual(listener.nodes.map((x) => x.notifications), [1, 1, 1])
      assert.equal(listener.listens, 3)
    } finally {
      await store.close()
      await single.close()
    }
    // close() ended every node's connection (a backend leaves pg_stat_activity shortly after its socket closes).
    const left = async (): Promise<number> => {
      const { rows } = await writer.query(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = ANY($1) AND pid <> pg_backend_pid()',
        [[W1, W2]],
      )
      return rows[0]!['n'] as number
    }
    const end = Date.now() + 2000
    while ((await left()) !== 0 && Date.now() < end) await sleep(20)
    assert.equal(await left(), 0)
  })

  it("catches up when a node's LISTEN becomes active; reconnects one node without touching the others", async () => {
    let w2Up = false
    const p = pool(DB)
    const store = a2Store({
      client: p,
      schema: 'fake',
      pollIntervalMs: NO_POLL,
      // w2 is unreachable (a database that does not exist) until w2Up.
      nodeConnection: (node) => ({ database: node.host === 'w2' && !w2Up ? 'a2_node_dist_nowhere' : databases[node.host]! }),
    })
    try {
      const s = session()
      const it = store.stream(s)
      const listener = listenerOf(store)!
      const first = take(it, 1)
      await until(() => listener.nodes.length === 3 && listener.nodes[0]!.listening && listener.nodes[1]!.listening, 5000, 'coord and w1')
      await sleep(100) // the stream's first read (empty) is done
      // Stored while w2 is down, and announced on w2 only: the announcement is lost.
      await announceOn(W2, s, await appendQuietly(s))
      assert.equal(await notWithin(first, 500), undefined, 'delivered before w2 listened')
      assert.equal(listener.nodes[2]!.listening, false)
      w2Up = true
      // Only the catch-up after w2's LISTEN can find it (no poll, no announcement).
      assert.deepEqual((await within(first, 10_000, "the catch-up after w2's LISTEN")).map((e) => e.index), [1])
      assert.equal(listener.nodes[2]!.listens, 1)

      // Terminate w1's listener: only w1 reconnects.
      const before = listener.nodes
      const { rows } = await writer.query('SELECT pg_terminate_backend($1) AS ok', [before[1]!.backendPid])
      assert.equal(rows[0]!['ok'], true)
      await until(() => listener.nodes[1]!.listens === 2 && listener.nodes[1]!.listening, 10_000, 'w1 LISTENs again')
      const now = listener.nodes
      assert.notEqual(now[1]!.backendPid, before[1]!.backendPid)
      assert.deepEqual([now[0]!.listens, now[0]!.backendPid], [1, before[0]!.backendPid])
      assert.deepEqual([now[2]!.listens, now[2]!.backendPid], [1, before[2]!.backendPid])
      // And w1 is heard again.
      const live = within(take(it, 1), 5000, 'announced on w1 after its reconnect')
      await sleep(50)
      await announceOn(W1, s, await appendQuietly(s))
      assert.deepEqual((await live).map((e) => e.index), [2])
    } finally {
      await store.close()
    }
  })

  it("without nodeConnection, a node's connection is the store's pool settings at the node's address", async () => {
    // PGDATABASE names another database: the pool's `database` must be the one used.
    assert.notEqual(process.env['PGDATABASE'] ?? 'postgres', DB)
    const p = pool(DB)
    const store = a2Store({ client: p, schema: 'fake_one', pollIntervalMs: NO_POLL })
    try {
      const s = session()
      const it = store.stream(s)
      const listener = listenerOf(store)!
      await until(() => listener.nodes.length === 1 && listener.nodes[0]!.listening, 5000, 'one node LISTENs')
      assert.equal(listener.nodes[0]!.port, Number(process.env['PGPORT']))
      assert.equal(await datnameOf(listener.nodes[0]!.backendPid), DB)
      const live = within(take(it, 1), 5000, 'announced by a2 on the node')
      await sleep(50)
      await writerStore.append(s, [{ type: 'x' }])
      assert.deepEqual((await live).map((e) => e.index), [1])
    } finally {
      await store.close()
    }
  })

  it('a missing a2_is_distributed() (a2 0.1.0) means one node: the store LISTENs on its own connection', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, schema: 'old', pollIntervalMs: NO_POLL })
    try {
      const s = session()
      const it = store.stream(s)
      const listener = listenerOf(store)!
      await until(() => listener.listening, 5000, 'LISTEN')
      assert.equal(listener.distributed, false)
      assert.deepEqual(listener.nodes, [])
      assert.notEqual(listener.backendPid, null)
      const live = within(take(it, 1), 5000, 'announced')
      await sleep(50)
      await writerStore.append(s, [{ type: 'x' }])
      assert.deepEqual((await live).map((e) => e.index), [1])
    } finally {
      await store.close()
    }
  })

  it('distributed with no node listed keeps the LISTEN on its own connection (and does not spin)', async () => {
    const p = pool(DB)
    const store = a2Store({ client: p, schema: 'fake_none', pollIntervalMs: NO_POLL })
    try {
      const s = session()
      const it = store.stream(s)
      const listener = listenerOf(store)!
      await until(() => listener.listening, 5000, 'LISTEN')
      assert.equal(listener.distributed, true)
      assert.deepEqual(listener.nodes, [])
      const live = within(take(it, 1), 5000, 'announced')
      await sleep(50)
      await writerStore.append(s, [{ type: 'x' }])
      assert.deepEqual((await live).map((e) => e.index), [1])
      assert.equal(listener.listens, 1)
    } finally {
      await store.close()
    }
  })

  it('node settings: pool options keep credentials and drop pool-only keys; URLs get the node address', () => {
    const fakePool = { query: async () => ({ rows: [] }), options: { user: 'u', database: 'd', max: 4, ssl: { rejectUnauthorized: false } } }
    Object.defineProperty(fakePool.options, 'password', { value: 'secret', enumerable: false })
    const base = storeSettings(undefined, fakePool)!
    assert.deepEqual(nodeClientConfig(base, { host: '10.0.0.2', port: 6432 }), {
      user: 'u',
      database: 'd',
      ssl: { rejectUnauthorized: false },
      password: 'secret',
      host: '10.0.0.2',
      port: 6432,
    } satisfies NodeClientConfig)
    assert.equal(storeSettings(undefined, { query: async () => ({ rows: [] }) }), null)
    const url = (s: string, host: string, port: number): unknown =>
      nodeClientConfig(storeSettings(s, fakePool)!, { host, port })['connectionString']
    assert.equal(url('postgres://u:p%40ss@coord:5432/db?sslmode=require', 'w1', 5433), 'postgres://u:p%40ss@w1:5433/db?sslmode=require')
    assert.equal(url('postgresql://u@/db?host=%2Fsock&port=1', '10.0.0.3', 7), 'postgresql://u@10.0.0.3:7/db')
    assert.equal(url('postgresql://u@coord/db', '::1', 7), 'postgresql://u@[::1]:7/db')
    assert.equal(url('postgresql://u@coord/db', '/run/pg', 7), 'postgresql://u@/db?host=%2Frun%2Fpg&port=7')
    assert.throws(() => url('host=coord dbname=db', 'w1', 1), /pass nodeConnection/)
  })
})
