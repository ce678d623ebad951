/**
 * store.stream(): live feeds of sessions over one shared LISTEN.
 *
 * One `Listener` per store holds a dedicated connection (checked out with
 * `client.connect()`) that runs `LISTEN a2_events` while at least one
 * stream is open. A notification `{sessionId, index}` marks the streams of
 * that session "dirty"; a dirty stream whose consumer is waiting reads the
 * rest with `a2_read(session, last, NULL, pageSize)` through the ordinary
 * client (never on the listening connection).
 *
 * No gaps: a stream's first read waits until the LISTEN is active (or has
 * failed), and every time a LISTEN becomes active (first start and every
 * reconnect) every open stream is marked dirty and catches up. An event
 * committed before the LISTEN is therefore found by that catch-up, and
 * one committed after it is announced. A read that was already running
 * when a stream was marked again is followed by another read (a mark
 * counter, not a flag, decides).
 *
 * Each once, in order: a stream remembers the greatest index it delivered
 * and asks only for events after it.
 *
 * Distributed mode (a2 on Citus, see nodes.ts): when the listener starts
 * (the first stream opens while none is open) it asks once, on its first
 * connection, `a2_is_distributed()`; when true it LISTENs on every node
 * `a2_notify_nodes()` lists, one dedicated connection per node, each
 * reconnecting on its own with its own backoff. Each node's LISTEN
 * becoming active marks every stream, so the no-gap argument above holds
 * per node; `ready()` waits for every node's first attempt. A single node
 * (false, or no such function: a2 0.1.0) keeps the connection above.
 *
 * Without notifications (no `connect()`, `listen: false`, a pooler in
 * front, `a2.notify = off`, or while the listener reconnects) a waiting
 * stream re-reads its session every `pollIntervalMs` (default 1000 ms)
 * with no notification in between; that poll runs always, so a lost
 * notification delays an event by at most that interval.
 *
 * Errors: a STORE_UNAVAILABLE read is retried after `pollIntervalMs`
 * (capped at 1 s); any other error (bad input) ends the stream and is
 * thrown from `next()`. `return()` ends one stream, `close()` all. When
 * the last stream ends the listener UNLISTENs and releases its connection;
 * one it was still connecting is released untouched (no LISTEN), and none
 * is taken once no stream is left; `stopped()` resolves when that is done.
 */

import type { PostgresClient } from './client.js'
import { isUnavailable, toA2Error } from './errors.js'
import type { A2Node } from './nodes.js'
import type { StoredEvent } from './types.js'

export const DEFAULT_POLL_INTERVAL_MS = 1000
export const DEFAULT_PAGE_SIZE = 500
const RECONNECT_MIN_MS = 50
const RECONNECT_MAX_MS = 2000

export type ReadPage = (
  sessionId: string,
  afterIndex: number,
  limit: number,
) => Promise<StoredEvent[]>

export type StreamSettings = {
  listen: boolean
  pollIntervalMs: number
  pageSize: number
}

/** The parts of a pg connection a LISTEN needs (a pg PoolClient has them). */
type ListenConnection = {
  query(text: string): Promise<unknown>
  /** A pool's connection returns at once; a node's resolves once it is closed. */
  release(err?: Error | boolean): unknown
  on(event: 'notification', fn: (msg: { channel: string; payload?: string }) => void): unknown
  on(event: 'error' | 'end', fn: (err?: Error) => void): unknown
  removeListener?(event: string, fn: (...args: never[]) => void): unknown
}

const canListen = (c: unknown): c is ListenConnection =>
  typeof (c as { on?: unknown }).on === 'function'

const ignore = (): void => {}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** What `Listener.nodes` reports for one node in distributed mode. */
export type NodeListenStatus = {
  host: string
  port: number
  listening: boolean
  /** How many LISTENs on this node became active. */
  listens: number
  /** How many a2_events notifications this node delivered. */
  notifications: number
  backendPid: number | null
}

/** Distributed mode: how the listener finds the nodes and connects to them. */
export type Cluster = {
  /**
   * The nodes to LISTEN on, or null for a single node. Asked once per
   * listener start, on the listener's first connection.
   */
  nodes(conn: { query(text: string): Promise<unknown> }): Promise<A2Node[] | null>
  /** A dedicated listening connection to one node. */
  connect(node: A2Node): Promise<ListenConnection>
}

/** One LISTEN's bookkeeping: the single-node listener's, or one node's. */
type Tap = {
  conn: ListenConnection | null
  backendPid: number | null
  listens: number
  notifications: number
}

export class Listener {
  readonly #client: () => Promise<PostgresClient>
  readonly #read: ReadPage
  readonly #cluster: Cluster | null
  readonly settings: StreamSettings
  readonly #streams = new Map<string, Set<SessionStream>>()
  readonly #single: Tap = { conn: null, backendPid: null, listens: 0, notifications: 0 }
  #nodes: (Tap & A2Node)[] = []
  #running = false
  #stopped: Promise<void> = Promise.resolve()
  #ready: Promise<void> | null = null
  /** Resolved when the listener must stop (close(), or the last stream ended). */
  readonly #wakers = new Set<() => void>()
  #closed = false
  /** How many LISTENs became active, on all nodes (tests watch reconnects with it). */
  listens = 0
  /**
   * Whether the last listener start found a2 distributed (a2_is_distributed());
   * null before the first detection. False too when the store has no way
   * to connect to other nodes (then the server is not asked).
   */
  distributed: boolean | null = null

  constructor(
    client: () => Promise<PostgresClient>,
    read: ReadPage,
    settings: StreamSettings,
    cluster: Cluster | null = null,
  ) {
    this.#client = client
    this.#read = read
    this.settings = settings
    this.#cluster = cluster
  }

  get listening(): boolean {
    return this.#single.conn !== null || this.#nodes.some((n) => n.conn !== null)
  }

  /** The backend pid of the single-node listening connection, when there is one. */
  get backendPid(): number | null {
    return this.#single.backendPid
  }

  /** Distributed mode: each listed node's LISTEN (empty on a single node). */
  get nodes(): NodeListenStatus[] {
    return this.#nodes.map((n) => ({
      host: n.host,
      port: n.port,
      listening: n.conn !== null,
      listens: n.listens,
      notifications: n.notifications,
      backendPid: n.backendPid,
    }))
  }

  open(sessionId: string, startAfter: number): SessionStream {
    if (this.#closed) throw toA2Error(new Error('store is closed'))
    const s = new SessionStream(this, sessionId, startAfter, this.#read)
    let set = this.#streams.get(sessionId)
    if (!set) {
      set = new Set()
      this.#streams.set(sessionId, set)
    }
    set.add(s)
    if (this.settings.listen && !this.#running) this.#run()
    return s
  }

  /** Resolves once a LISTEN is active (on every node), or listening has failed or is off. */
  ready(): Promise<void> {
    return this.#ready ?? Promise.resolve()
  }

  /**
   * Resolves once the listener's current life has ended, i.e. every
   * connection it took is released (at once when it is not running).
   * Tests use it after the last stream ended instead of polling the pool.
   */
  stopped(): Promise<void> {
    return this.#stopped
  }

  drop(s: SessionStream): void {
    const set = this.#streams.get(s.sessionId)
    if (!set) return
    set.delete(s)
    if (set.size === 0) this.#streams.delete(s.sessionId)
    if (this.#streams.size === 0) this.#wakeAll()
  }

  /** Ends every stream and waits until the listening connections are released. */
  async close(): Promise<void> {
    this.#closed = true
    for (const set of [...this.#streams.values()]) for (const s of [...set]) s.end()
    this.#wakeAll()
    await this.#stopped
  }

  #all(): SessionStream[] {
    return [...this.#streams.values()].flatMap((set) => [...set])
  }

  #stopping(): boolean {
    return this.#closed || this.#streams.size === 0
  }

  #wakeAll(): void {
    for (const wake of [...this.#wakers]) wake()
  }

  /** Registers `fn` to run when the listener must stop (at once if it must now). */
  #onStop(fn: () => void): () => void {
    this.#wakers.add(fn)
    if (this.#stopping()) fn()
    return () => this.#wakers.delete(fn)
  }

  // The listener's life: connect, (once) ask whether a2 is distributed,
  // LISTEN, mark everyone, wait for the connection to fail or for the
  // last stream to go; then again. Distributed: the same per listed node.
  #run(): void {
    this.#running = true
    let settle!: () => void
    this.#ready = new Promise((r) => (settle = r))
    this.#stopped = (async () => {
      await this.#life(settle)
      settle()
      this.#running = false
      // A stream opened while we were shutting down starts a new life.
      if (!this.#closed && this.#streams.size > 0) this.#run()
    })()
  }

  async #life(settle: () => void): Promise<void> {
    let backoff = RECONNECT_MIN_MS
    let detected = this.#cluster === null
    while (!this.#stopping()) {
      const conn = await this.#connect().catch(() => null)
      if (conn === null) {
        // No LISTEN possible now: streams poll meanwhile.
        settle()
        if (this.#stopping()) break
        await sleep(backoff)
        backoff = Math.min(backoff * 2, RECONNECT_MAX_MS)
        continue
      }
      if (this.#stopping()) {
        // The last stream went while we connected: nothing to ask or LISTEN.
        conn.removeListener?.('error', ignore)
        conn.release()
        break
      }
      if (!detected) {
        let nodes: A2Node[] | null
        try {
          nodes = await this.#cluster!.nodes(conn)
        } catch (err) {
          // Like a failed LISTEN: this connection is dropped, and we retry.
          conn.removeListener?.('error', ignore)
          conn.release(err as Error)
          settle()
          if (this.#stopping()) break
          for (const s of this.#all()) s.mark()
          await sleep(backoff)
          backoff = Math.min(backoff * 2, RECONNECT_MAX_MS)
          continue
        }
        detected = true
        this.distributed = nodes !== null
        // An empty list (no active primary node) keeps this LISTEN.
        if (nodes !== null && nodes.length > 0) {
          conn.removeListener?.('error', ignore)
          conn.release()
          await this.#distributed(nodes, settle)
          return
        }
        this.#nodes = []
      }
      const { lost, active } = await this.#hold(conn, this.#single, settle)
      if (active) backoff = RECONNECT_MIN_MS
      if (lost !== undefined && !this.#stopping()) {
        // Streams poll while we are away; mark them now too.
        for (const s of this.#all()) s.mark()
        await sleep(backoff)
        backoff = Math.min(backoff * 2, RECONNECT_MAX_MS)
      }
    }
  }

  // Distributed mode: one LISTEN per node, each with its own reconnects.
  // Ready once every node's first attempt has settled (active or failed).
  async #distributed(nodes: A2Node[], settle: () => void): Promise<void> {
    this.#nodes = nodes.map((n) => ({ host: n.host, port: n.port, conn: null, backendPid: null, listens: 0, notifications: 0 }))
    let unsettled = this.#nodes.length
    if (unsettled === 0) settle()
    await Promise.all(
      this.#nodes.map((tap) => {
        let first = true
        const settleOne = (): void => {
          if (!first) return
          first = false
          if (--unsettled === 0) settle()
        }
        return this.#nodeLife(tap, settleOne)
      }),
    )
  }

  async #nodeLife(tap: Tap & A2Node, settle: () => void): Promise<void> {
    let backoff = RECONNECT_MIN_MS
    while (!this.#stopping()) {
      const conn = await this.#connectNode(tap)
      if (conn !== null) {
        const { lost, active } = await this.#hold(conn, tap, settle)
        if (active) backoff = RECONNECT_MIN_MS
        if (lost === undefined || this.#stopping()) continue
        // This node's announcements are lost until it is back: every
        // stream reads now, and again when its LISTEN is active.
        for (const s of this.#all()) s.mark()
      } else {
        settle()
        if (this.#stopping()) break
      }
      await this.#pause(backoff)
      backoff = Math.min(backoff * 2, RECONNECT_MAX_MS)
    }
  }

  /** A node's connection, or null when it failed or the listener stopped first. */
  async #connectNode(node: A2Node): Promise<ListenConnection | null> {
    const attempt = this.#cluster!.connect({ host: node.host, port: node.port })
    let stop!: () => void
    const stopped = new Promise<'stop'>((r) => (stop = () => r('stop')))
    const off = this.#onStop(stop)
    const won = await Promise.race([attempt.catch(() => null), stopped])
    off()
    if (won === 'stop') {
      // Connected after all: nobody needs it.
      attempt.then((c) => c.release(), ignore)
      return null
    }
    return won
  }

  /** Waits `ms`, or less when the listener must stop. */
  #pause(ms: number): Promise<void> {
    return new Promise((resolve) => {
      let t: NodeJS.Timeout | undefined
      const done = (): void => {
        clearTimeout(t)
        this.#wakers.delete(done)
        resolve()
      }
      t = setTimeout(done, ms)
      this.#wakers.add(done)
      if (this.#stopping()) done()
    })
  }

  // One LISTEN on `conn` until the connection fails or the listener must
  // stop; then the connection is released (destroyed when broken).
  async #hold(
    conn: ListenConnection,
    tap: Tap,
    settle: () => void,
  ): Promise<{ lost: Error | undefined; active: boolean }> {
    let lost: Error | undefined
    let active = false
    let onError!: (err?: Error) => void
    let onEnd!: () => void
    let wake!: () => void
    const onNotification = (msg: { channel: string; payload?: string }): void => {
      if (msg.channel === 'a2_events') tap.notifications += 1
      this.#notify(msg.channel, msg.payload)
    }
    const gone = new Promise<void>((resolve) => {
      wake = resolve
      onError = (err) => {
        lost = err ?? new Error('listener connection lost')
        resolve()
      }
      onEnd = () => {
        lost ??= new Error('listener connection ended')
        resolve()
      }
    })
    if (this.#stopping()) {
      // The last stream went (or close() came) while we connected: no
      // LISTEN is needed, the connection goes back untouched.
      conn.removeListener?.('error', ignore)
      await conn.release()
      settle()
      return { lost: undefined, active: false }
    }
    this.#wakers.add(wake)
    conn.on('error', onError)
    conn.on('end', onEnd)
    conn.on('notification', onNotification)
    try {
      await conn.query('LISTEN a2_events')
      const pid = (await conn.query('SELECT pg_catalog.pg_backend_pid() AS pid')) as {
        rows: { pid: number }[]
      }
      tap.backendPid = pid.rows[0]?.pid ?? null
      tap.conn = conn
      tap.listens += 1
      this.listens += 1
      active = true
      settle()
      for (const s of this.#all()) s.mark()
      // The last stream may have gone (or close() come) while we
      // connected, before `wake` was registered.
      if (this.#stopping()) wake()
      await gone
    } catch (err) {
      lost = err as Error
      settle()
    }
    this.#wakers.delete(wake)
    tap.conn = null
    tap.backendPid = null
    conn.removeListener?.('notification', onNotification)
    conn.removeListener?.('error', onError)
    conn.removeListener?.('end', onEnd)
    conn.removeListener?.('error', ignore)
    // A broken connection is destroyed, a healthy one returned clean.
    if (lost === undefined) {
      await conn.query('UNLISTEN a2_events').catch((err: Error) => (lost = err))
    }
    await conn.release(lost ?? undefined)
    return { lost, active }
  }

  async #connect(): Promise<ListenConnection | null> {
    const client = await this.#client()
    if (typeof client.connect !== 'function') return null
    // Stopped while the client was resolved: take no connection at all.
    if (this.#stopping()) return null
    const conn = await client.connect()
    if (!canListen(conn)) {
      conn.release()
      return null
    }
    // An error event with no handler would crash the process.
    conn.on('error', ignore)
    return conn
  }

  #notify(channel: string, payload: string | undefined): void {
    if (channel !== 'a2_events' || payload === undefined) return
    let msg: { sessionId?: unknown; index?: unknown }
    try {
      msg = JSON.parse(payload) as typeof msg
    } catch {
      return
    }
    if (typeof msg.sessionId !== 'string') return
    const index = Number(msg.index)
    for (const s of this.#streams.get(msg.sessionId) ?? []) {
      if (!(index <= s.last)) s.mark()
    }
  }
}

type Waiter = {
  resolve: (r: IteratorResult<StoredEvent>) => void
  reject: (err: unknown) => void
}

export class SessionStream implements AsyncIterableIterator<StoredEvent> {
  readonly sessionId: string
  /** The greatest index delivered (or startAfter). */
  last: number
  readonly #hub: Listener
  readonly #read: ReadPage
  #buffer: StoredEvent[] = []
  #waiter: Waiter | null = null
  #done = false
  #failure: unknown = undefined
  #marks = 1
  #clean = 0
  #reading = false
  #timer: NodeJS.Timeout | null = null

  constructor(hub: Listener, sessionId: string, startAfter: number, read: ReadPage) {
    this.#hub = hub
    this.sessionId = sessionId
    this.last = startAfter
    this.#read = read
  }

  [Symbol.asyncIterator](): this {
    return this
  }

  next(): Promise<IteratorResult<StoredEvent>> {
    const e = this.#buffer.shift()
    if (e) return Promise.resolve({ done: false, value: e })
    if (this.#failure !== undefined) {
      const f = this.#failure
      this.#failure = undefined
      return Promise.reject(f)
    }
    if (this.#done) return Promise.resolve({ done: true, value: undefined })
    if (this.#waiter) return Promise.reject(new Error('stream.next() called before the previous one settled'))
    return new Promise((resolve, reject) => {
      this.#waiter = { resolve, reject }
      this.#pump()
    })
  }

  async return(): Promise<IteratorResult<StoredEvent>> {
    this.end()
    return { done: true, value: undefined }
  }

  /** Ends the stream: a waiting next() resolves done. */
  end(): void {
    if (this.#done) return
    this.#done = true
    this.#buffer = []
    this.#clearTimer()
    this.#hub.drop(this)
    const w = this.#waiter
    this.#waiter = null
    w?.resolve({ done: true, value: undefined })
  }

  /** Something may be new: read when the consumer is waiting. */
  mark(): void {
    this.#marks += 1
    this.#pump()
  }

  #clearTimer(): void {
    if (this.#timer) clearTimeout(this.#timer)
    this.#timer = null
  }

  #arm(ms: number): void {
    this.#clearTimer()
    if (!Number.isFinite(ms)) return
    this.#timer = setTimeout(() => {
      this.#timer = null
      this.mark()
    }, ms)
  }

  #pump(): void {
    if (this.#done || this.#reading || !this.#waiter) return
    if (this.#clean === this.#marks) {
      this.#arm(this.#hub.settings.pollIntervalMs)
      return
    }
    this.#clearTimer()
    this.#reading = true
    const marks = this.#marks
    void (async () => {
      let retry = false
      try {
        await this.#hub.ready()
        const page = await this.#read(this.sessionId, this.last, this.#hub.settings.pageSize)
        if (this.#done) return
        const fresh = page.filter((e) => e.index > this.last)
        if (fresh.length > 0) this.last = fresh[fresh.length - 1]!.index
        // A full page may have more behind it: stay dirty.
        if (page.length < this.#hub.settings.pageSize) this.#clean = marks
        this.#buffer.push(...fresh)
      } catch (err) {
        if (this.#done) return
        if (isUnavailable(err)) {
          retry = true
        } else {
          this.#failure = err
          this.#done = true
          this.#hub.drop(this)
        }
      } finally {
        this.#reading = false
      }
      this.#deliver()
      if (retry) this.#arm(Math.min(this.#hub.settings.pollIntervalMs, 1000))
      else this.#pump()
    })()
  }

  #deliver(): void {
    const w = this.#waiter
    if (!w) return
    const e = this.#buffer.shift()
    if (e) {
      this.#waiter = null
      w.resolve({ done: false, value: e })
    } else if (this.#failure !== undefined) {
      this.#waiter = null
      const f = this.#failure
      this.#failure = undefined
      w.reject(f)
    } else if (this.#done) {
      this.#waiter = null
      w.resolve({ done: true, value: undefined })
    }
  }
}
