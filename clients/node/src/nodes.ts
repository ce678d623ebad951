/**
 * Distributed mode (a2 on Citus): which nodes the stream's listener
 * LISTENs on, and how it connects to each.
 *
 * In distributed mode a delegated call announces its session on the
 * worker that ran it, a coordinator-run call on the coordinator, so one
 * LISTEN hears only part of the store. When a listener starts it asks,
 * on its own connection, `a2_is_distributed()` (a missing function, an
 * a2 0.1.0 install, means no) and then `a2_notify_nodes()`, and LISTENs
 * on every node listed, each over a dedicated `pg` Client.
 *
 * A node's connection settings: `nodeConnection(node)` when the store has
 * that option; otherwise the store's own settings (its connectionString,
 * or the options of the injected pg Pool: user, password, database, ssl,
 * ...) with the node's host and port in place of the store's. A client
 * that is neither (no `options`, no `nodeConnection`) keeps the
 * single-node listener: it hears the node it is connected to and polls
 * for the rest.
 */

import type { PostgresClient } from './client.js'

/** A node a consumer must LISTEN on, as `a2_notify_nodes()` lists it. */
export type A2Node = { host: string; port: number }

/**
 * The settings of one node's listening connection: a `pg` ClientConfig
 * (kept structural so that the package's types do not need `@types/pg`).
 */
export type NodeClientConfig = {
  host?: string
  port?: number
  user?: string
  database?: string
  password?: string | (() => string | Promise<string>)
  connectionString?: string
  ssl?: unknown
  connectionTimeoutMillis?: number
  [setting: string]: unknown
}

/** Maps a listed node to its connection settings (an address override, other credentials). */
export type NodeConnection = (node: A2Node) => NodeClientConfig | Promise<NodeClientConfig>

/** A node's listening connection, in the shape the listener uses. */
export type NodeListenConnection = {
  query(text: string): Promise<unknown>
  /** Ends the connection; resolves once it is closed. */
  release(err?: Error | boolean): Promise<void>
  on(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): unknown
  on(event: 'error' | 'end', fn: (err?: Error) => void): unknown
  removeListener(event: string, fn: (...args: never[]) => void): unknown
}

/** A node is connected within this long unless its settings say otherwise. */
export const NODE_CONNECT_TIMEOUT_MS = 10_000

type PgClient = NodeListenConnection & {
  connect(): Promise<unknown>
  end(): Promise<void>
}
type PgClientClass = new (config: NodeClientConfig) => PgClient

const ignore = (): void => {}

/**
 * The store's own settings, as a base for a node's: `{ connectionString }`,
 * or a copy of a pg Pool's `options` (its password is not enumerable
 * there, so it is copied by name). null when there are none.
 */
export const storeSettings = (
  connectionString: string | undefined,
  client: PostgresClient,
): NodeClientConfig | null => {
  if (connectionString !== undefined) return { connectionString }
  const options = (client as { options?: unknown }).options
  if (options === null || typeof options !== 'object') return null
  const base: NodeClientConfig = { ...(options as NodeClientConfig) }
  const password = (options as NodeClientConfig).password
  if (password !== undefined) base.password = password
  // Pool-only settings mean nothing to a Client.
  for (const k of ['max', 'min', 'maxUses', 'allowExitOnIdle', 'maxLifetimeSeconds', 'idleTimeoutMillis', 'Client', 'log']) {
    delete base[k]
  }
  return base
}

/**
 * `base` with the node's host and port. A connectionString is rewritten
 * (it would override a separate host and port): it must be a
 * postgres:// or postgresql:// URL; its host and port, including
 * `?host=` and `?port=` parameters, become the node's.
 */
export const nodeClientConfig = (base: NodeClientConfig, node: A2Node): NodeClientConfig => {
  if (typeof base.connectionString !== 'string') return { ...base, host: node.host, port: node.port }
  // scheme, user info, host and port, path, query (WHATWG URL refuses user@/db).
  const m = /^(postgres(?:ql)?:\/\/)(?:([^@/?#]*)@)?([^/?#]*)([^?#]*)(?:\?([^#]*))?$/.exec(base.connectionString)
  if (m === null) {
    throw new TypeError(
      'distributed mode: cannot place a node in a connectionString that is not a postgres:// URL; pass nodeConnection',
    )
  }
  const [, scheme, userInfo, , path, query] = m
  const params = new URLSearchParams(query ?? '')
  params.delete('host')
  params.delete('port')
  let address: string
  if (node.host.startsWith('/')) {
    // A socket directory: pg takes it from ?host=.
    address = ''
    params.set('host', node.host)
    params.set('port', String(node.port))
  } else {
    address = `${node.host.includes(':') ? `[${node.host}]` : node.host}:${node.port}`
  }
  const rest = params.toString()
  const connectionString = `${scheme}${userInfo === undefined ? '' : `${userInfo}@`}${address}${path}${rest === '' ? '' : `?${rest}`}`
  return { ...base, connectionString }
}

/**
 * Connects one node's listening connection: a `pg` Client (the injected
 * Pool's own Client class when it has one), ended by `release()`.
 */
export const connectNode = async (
  Client: PgClientClass,
  config: NodeClientConfig,
): Promise<NodeListenConnection> => {
  const c = new Client({ connectionTimeoutMillis: NODE_CONNECT_TIMEOUT_MS, ...config })
  // An error event with no handler would crash the process.
  c.on('error', ignore)
  try {
    await c.connect()
  } catch (err) {
    void c.end().catch(ignore)
    throw err
  }
  return {
    query: (text) => c.query(text),
    release: () => c.end().catch(ignore),
    on: (event: string, fn: (...args: never[]) => void) => c.on(event as 'error', fn as () => void),
    removeListener: (event, fn) => c.removeListener(event, fn),
  }
}

/** The `pg` Client class: the pool's own, else the `pg` package's. */
export const clientClass = async (client: PostgresClient): Promise<PgClientClass> => {
  const own = (client as { Client?: unknown }).Client
  if (typeof own === 'function') return own as PgClientClass
  const pg = await import('pg')
  return pg.default.Client as unknown as PgClientClass
}
