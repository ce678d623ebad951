/**
 * a2Store(options): the A2Store of experimental-a2 over the a2 extension.
 *
 * Construction does no I/O. The first call creates the client: the
 * injected `client`, or a `pg` Pool for `connectionString` (imported
 * lazily; `pg` is a peer dependency). Unlike store-postgres it never runs
 * DDL: the schema is the extension's (`CREATE EXTENSION a2`).
 */

import { Statements, type PostgresClient, type PostgresConnection, type Queryable } from './client.js'
import { parseResult, toStored } from './codec.js'
import { A2Error, toA2Error } from './errors.js'
import { operations, type A2ContractOperations, type A2Operations, type SupersededForm } from './operations.js'
import { scheduleOperations, type ScheduleOperations } from './schedules.js'
import { clientClass, connectNode, nodeClientConfig, storeSettings, type A2Node, type NodeClientConfig, type NodeConnection } from './nodes.js'
import { DEFAULT_PAGE_SIZE, DEFAULT_POLL_INTERVAL_MS, Listener, type Cluster } from './stream.js'
import type { A2Store, Clock, IdSource, StoredEvent } from './types.js'

const LISTENER = Symbol('a2-client.listener')

export type A2StoreOptions = {
  /** Creates a `pg` Pool lazily (requires the peer dependency `pg`). */
  connectionString?: string | undefined
  /** Bring your own client: a `pg` Pool, or anything of the PostgresClient shape. */
  client?: PostgresClient | undefined
  /**
   * Injectable clock. When given, every call sends its reading as
   * `a2.now` in the same statement; when absent the server's clock is used.
   */
  clock?: Clock | undefined
  /** Fills the id of every appended event that has none, before the call. */
  ids?: IdSource | undefined
  /** The schema the extension is installed in, when it is not on search_path. */
  schema?: string | undefined
  /** stream(): LISTEN for notifications (default true); false polls only. */
  listen?: boolean | undefined
  /** stream(): re-read a waiting stream after this long without news (default 1000 ms). */
  pollIntervalMs?: number | undefined
  /** stream(): events per catch-up read (default 500). */
  pageSize?: number | undefined
  /**
   * stream() in distributed mode: the connection settings of the node
   * `a2_notify_nodes()` lists (an address map, other credentials).
   * Default: the store's own settings with the node's host and port.
   */
  nodeConnection?: NodeConnection | undefined
  /**
   * How the store's completeAttempt and failAttempt report a stale attempt
   * (README "Stale attempts"). `'return'` (the default): the contract's
   * `{ outcome: 'superseded' }`, with `failureCount` for failAttempt.
   * `'throw'`: A2Error('SUPERSEDED_ATTEMPT'), as a caused append. Inside
   * `store.transaction` both forms throw, so a stale attempt rolls back the
   * handler's writes.
   */
  superseded?: SupersededForm | undefined
}

/** What a `store.transaction` callback gets: the store's calls on one connection, and `query`. */
export type A2Transaction = A2Operations & ScheduleOperations & {
  /** Your own SQL, in the same transaction (errors are pg's, not mapped). */
  query(text: string, values?: unknown[]): Promise<{ rows: Record<string, unknown>[] }>
}

/** What both forms of the store have besides the A2Store calls. */
export type A2StoreExtras = Pick<A2Store, 'stream'> & ScheduleOperations & {
  /**
   * Runs `fn` in one transaction on one connection: BEGIN, fn(tx), COMMIT.
   * A throw rolls everything back (the handler's writes and the a2 calls)
   * and is rethrown. `tx`'s calls are the strict form: a stale attempt
   * throws SUPERSEDED_ATTEMPT, whatever the store's `superseded` option.
   */
  transaction<T>(fn: (tx: A2Transaction) => Promise<T>): Promise<T>
  /** Ends every stream, the listener, and the client (when it has `end`). */
  close(): Promise<void>
}

/** The default store: an A2Store whose calls answer as the contract does. */
export type A2PostgresStore = A2ContractOperations & A2StoreExtras

/** The store with `superseded: 'throw'`: a stale attempt always throws. */
export type A2StrictStore = A2Operations & A2StoreExtras

/** Lazy, and retried after a failure (a missing `pg` can be installed). */
const lazy = <T>(make: () => Promise<T>): { get: () => Promise<T>; peek: () => Promise<T> | null } => {
  let current: Promise<T> | null = null
  return {
    get() {
      if (!current) {
        current = make()
        current.catch(() => {
          current = null
        })
      }
      return current
    },
    peek: () => current,
  }
}

export function a2Store(options: A2StoreOptions & { superseded: 'throw' }): A2StrictStore
export function a2Store(options?: A2StoreOptions): A2PostgresStore
export function a2Store(options: A2StoreOptions = {}): A2PostgresStore {
  if (!options.client && !options.connectionString) {
    throw new TypeError('a2Store() needs a connectionString or an injected client')
  }
  const superseded = options.superseded ?? 'return'
  if (superseded !== 'return' && superseded !== 'throw') {
    throw new TypeError("superseded must be 'return' or 'throw'")
  }
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS
  const pageSize = options.pageSize ?? DEFAULT_PAGE_SIZE
  if (!(pollIntervalMs > 0)) throw new TypeError('pollIntervalMs must be a positive number')
  if (!Number.isInteger(pageSize) || pageSize < 1) throw new TypeError('pageSize must be a positive integer')

  const connection = lazy(async (): Promise<PostgresClient> => {
    if (options.client) return options.client
    const pg = await import('pg').catch((err: unknown) => {
      throw new A2Error(
        'STORE_NOT_CONFIGURED',
        "a2Store with a connectionString needs the 'pg' package (a peer dependency): install it, or inject a client",
        { cause: err },
      )
    })
    const pool = new pg.default.Pool({ connectionString: options.connectionString })
    // An idle connection's error (a restarted server) must not crash the app.
    pool.on('error', () => {})
    return pool as unknown as PostgresClient
  })
  const client = (): Promise<PostgresClient> =>
    connection.get().catch((err: unknown) => {
      throw toA2Error(err)
    })

  const sql = new Statements(options.schema)
  const ctx = { sql, clock: options.clock, ids: options.ids }
  const ops = operations(ctx, client, superseded)

  const readPage = async (sessionId: string, afterIndex: number, limit: number): Promise<StoredEvent[]> => {
    try {
      const c = await client()
      const { rows } = await c.query(
        `SELECT ${sql.fn('a2_read')}($1::text, $2::bigint, NULL, $3::integer) AS r`,
        [sessionId, afterIndex, limit],
      )
      return (parseResult(rows[0]?.['r']) as unknown[]).map(toStored)
    } catch (err) {
      throw toA2Error(err)
    }
  }
  // Distributed mode: the nodes to LISTEN on, and a connection to each.
  const nodeConfig = async (node: A2Node): Promise<NodeClientConfig | null> => {
    if (options.nodeConnection) return options.nodeConnection(node)
    const base = storeSettings(options.connectionString, await client())
    return base === null ? null : nodeClientConfig(base, node)
  }
  // Without nodeConnection: settings to derive from (a pg Pool's, or a URL).
  const canReachNodes = async (): Promise<boolean> => {
    if (options.nodeConnection !== undefined) return true
    const base = storeSettings(options.connectionString, await client())
    if (base === null) return false
    try {
      nodeClientConfig(base, { host: 'node', port: 5432 })
      return true
    } catch {
      return false
    }
  }
  const cluster: Cluster = {
    async nodes(conn) {
      // A client whose settings we cannot derive keeps the single-node listener.
      if (!(await canReachNodes())) return null
      let distributed: unknown
      try {
        const r = (await conn.query(`SELECT ${sql.fn('a2_is_distributed')}() AS d`)) as {
          rows: { d?: unknown }[]
        }
        distributed = r.rows[0]?.d
      } catch (err) {
        // 42883: no such function, an a2 0.1.0 install: a single node.
        if ((err as { code?: unknown }).code === '42883') return null
        throw err
      }
      if (distributed !== true) return null
      const r = (await conn.query(`SELECT node_name, node_port FROM ${sql.fn('a2_notify_nodes')}()`)) as {
        rows: { node_name: unknown; node_port: unknown }[]
      }
      return r.rows.map((row) => ({ host: String(row.node_name), port: Number(row.node_port) }))
    },
    async connect(node) {
      const config = await nodeConfig(node)
      if (config === null) throw new Error('no connection settings for the node')
      return connectNode(await clientClass(await client()), config)
    },
  }
  const listener = new Listener(
    client,
    readPage,
    {
      listen: options.listen ?? true,
      pollIntervalMs,
      pageSize,
    },
    cluster,
  )

  // A client without connect() (one connection) runs transactions one at a time.
  let mutex: Promise<unknown> = Promise.resolve()

  const transaction = async <T>(fn: (tx: A2Transaction) => Promise<T>): Promise<T> => {
    const c = await client()
    // Set when ROLLBACK itself failed: that connection must not be reused.
    let broken: Error | undefined
    const rollback = (q: Queryable): Promise<unknown> =>
      q.query('ROLLBACK').catch((err: Error) => (broken = err))
    const body = async (q: Queryable): Promise<T> => {
      try {
        await q.query('BEGIN')
      } catch (err) {
        throw toA2Error(err)
      }
      const tx: A2Transaction = {
        ...operations(ctx, async () => q, 'throw'),
        ...scheduleOperations(sql, options.clock, async () => q),
        query: (text, values) => q.query(text, values),
      }
      let result: T
      try {
        result = await fn(tx)
      } catch (err) {
        await rollback(q)
        throw err
      }
      try {
        await q.query('COMMIT')
      } catch (err) {
        await rollback(q)
        throw toA2Error(err)
      }
      return result
    }
    if (typeof c.connect === 'function') {
      let conn: PostgresConnection
      try {
        conn = await c.connect()
      } catch (err) {
        throw toA2Error(err)
      }
      try {
        return await body(conn)
      } finally {
        conn.release(broken)
      }
    }
    const run = mutex.then(() => body(c))
    mutex = run.catch(() => {})
    return run
  }

  let closed = false
  const store: A2PostgresStore = {
    ...ops,
    ...scheduleOperations(sql, options.clock, client),

    stream(sessionId, streamOptions) {
      return listener.open(sessionId, streamOptions?.startAfter ?? 0)
    },

    transaction,

    async close() {
      if (closed) return
      closed = true
      await listener.close()
      const current = connection.peek()
      if (!current) return
      const c = await current.catch(() => null)
      await c?.end?.()
    },
  }
  Object.defineProperty(store, LISTENER, { value: listener })
  return store
}

/** For tests and monitoring: the listener behind a store's streams. */
export const listenerOf = (store: A2PostgresStore | A2StrictStore): Listener | undefined =>
  (store as unknown as { [LISTENER]?: Listener })[LISTENER]
