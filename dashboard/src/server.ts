/**
 * The dashboard's HTTP server (node:http, no framework): server-rendered
 * pages, server-sent events for the live charts, /metrics for Prometheus,
 * and POST-only actions behind privilege checks and CSRF protection.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { Db, STATEMENTS, type Capabilities, type Json, type JsonObject } from './db.js'
import { renderMetrics, Sampler } from './metrics.js'
import { h, qs, Html } from './html.js'

export type Options = {
  databaseUrl: string
  host: string
  port: number
  /** Serve the pages (default true). */
  pages: boolean
  /** Serve /metrics (default true). */
  metrics: boolean
  /** Show payloads and snapshot values (default true). */
  payloads: boolean
  /** Never offer or perform actions, whatever the role may do. */
  readOnly: boolean
  /** Bearer token (header, or a cookie set by /login). */
  token: string | null
  /** user:password for HTTP basic auth. */
  basicAuth: string | null
  /** a2_metrics() poll interval for the charts. */
  pollMs: number
  /** A path prefix when served under a reverse proxy at a sub-path, e.g. /a2 */
  basePath: string
}

export const DEFAULTS: Omit<Options, 'databaseUrl'> = {
  host: '127.0.0.1',
  port: 8450,
  pages: true,
  metrics: true,
  payloads: true,
  readOnly: false,
  token: null,
  basicAuth: null,
  pollMs: 5000,
  basePath: '',
}

const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'static')
const CSRF_COOKIE = 'a2dash_csrf'
const TOKEN_COOKIE = 'a2dash_token'
const PAGE = 50
const MAX_REDRIVE_ALL = 1000
/** A state filter reads at most this many sessions (or, for "dead", dead letters per walk step) per request. */
const FILTER_SCAN = 200

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

const sameSecret = (a: string, b: string): boolean => {
  const x = createHash('sha256').update(a).digest()
  const y = createHash('sha256').update(b).digest()
  return timingSafeEqual(x, y)
}

const cookies = (req: IncomingMessage): Map<string, string> => {
  const m = new Map<string, string>()
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const i = part.indexOf('=')
    if (i > 0) m.set(part.slice(0, i).trim(), decodeURIComponent(part.slice(i + 1).trim()))
  }
  return m
}

const readBody = async (req: IncomingMessage, limit = 1 << 20): Promise<string> => {
  let size = 0
  const chunks: Buffer[] = []
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > limit) throw new HttpError(413, 'request body too large')
    chunks.push(chunk as Buffer)
  }
  return Buffer.concat(chunks).toString('utf8')
}

const str = (v: Json | undefined): string => (v === null || v === undefined ? '' : typeof v === 'string' ? v : JSON.stringify(v))
const int = (v: string | null, min: number, max: number): number | null => {
  if (v === null || !/^\d{1,15}$/.test(v)) return null
  const n = Number(v)
  return n < min || n > max ? null : n
}
const fmtTime = (v: Json | undefined): string => (typeof v === 'string' ? v.replace('T', ' ').replace(/\.\d+/, '').replace(/\+00:00$|Z$/, ' UTC') : '')
const fmtNum = (v: Json | undefined): string => (v === null || v === undefined ? '—' : typeof v === 'number' ? v.toLocaleString('en-US') : String(v))

/** The state of one StoredEvent as the session timeline shows it. */
export function eventState(e: JsonObject, now: number): string {
  if (e.cancelledAt !== undefined && e.cancelledAt !== null) return 'cancelled'
  if (e.processedAt !== null && e.processedAt !== undefined) return e.processedByAttempt === null || e.processedByAttempt === undefined ? 'settled' : 'completed'
  if (e.failedAt !== null && e.failedAt !== undefined) return 'dead-lettered'
  if (typeof e.claimExpiresAt === 'string' && Date.parse(e.claimExpiresAt) > now) return 'leased'
  if (typeof e.notBefore === 'string' && Date.parse(e.notBefore) > now) return 'scheduled'
  return 'pending'
}

export class Dashboard {
  readonly db: Db
  readonly sampler: Sampler
  readonly server: Server
  caps: Capabilities | null = null
  #capsAt = 0
  #sse = new Set<ServerResponse>()

  constructor(readonly opts: Options) {
    this.db = new Db(opts.databaseUrl)
    this.sampler = new Sampler(() => this.db.metrics(), opts.pollMs)
    this.server = createServer((req, res) => {
      this.handle(req, res).catch((err: unknown) => this.fail(res, err))
    })
  }

  async listen(): Promise<{ host: string; port: number }> {
    await this.capabilities(true)
    if (this.opts.pages) this.sampler.start()
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject)
      this.server.listen(this.opts.port, this.opts.host, () => resolve())
    })
    const a = this.server.address()
    return { host: this.opts.host, port: typeof a === 'object' && a ? a.port : this.opts.port }
  }

  async close(): Promise<void> {
    this.sampler.stop()
    for (const r of this.#sse) r.end()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
    this.server.closeAllConnections?.()
    await this.db.close()
  }

  /** Privileges and optional functions, re-read at most once a minute. */
  async capabilities(force = false): Promise<Capabilities> {
    if (!force && this.caps && Date.now() - this.#capsAt < 60_000) return this.caps
    this.caps = await this.db.capabilities()
    this.#capsAt = Date.now()
    return this.caps
  }

  has(caps: Capabilities, fn: string): boolean {
    return caps.functions.has(fn)
  }

  /** May this dashboard run the action that calls fn? */
  canAct(caps: Capabilities, fn: string): boolean {
    return !this.opts.readOnly && caps.canWriteEvents && caps.functions.get(fn) === true
  }

  // ---- request handling --------------------------------------------------

  url(path: string): string {
    return this.opts.basePath + path
  }

  async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://dashboard.invalid')
    let path = url.pathname
    if (this.opts.basePath !== '') {
      if (path === this.opts.basePath) path = '/'
      else if (path.startsWith(this.opts.basePath + '/')) path = path.slice(this.opts.basePath.length)
    }
    res.setHeader('X-Content-Type-Options', 'nosniff')
    res.setHeader('Referrer-Policy', 'same-origin')
    if (path === '/favicon.ico') {
      res.statusCode = 204
      res.end()
      return
    }
    if (path === '/healthz') return this.send(res, 200, 'text/plain; charset=utf-8', 'ok\n')
    if (path === '/login' && this.opts.token !== null) return this.login(req, res)
    if (!this.authorized(req, res)) return
    const method = req.method ?? 'GET'

    if (path === '/metrics') {
      if (!this.opts.metrics) throw new HttpError(404, 'not found')
      if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'use GET')
      return this.metrics(res)
    }
    if (!this.opts.pages) throw new HttpError(404, 'not found')
    if (path.startsWith('/static/')) return this.static(res, path.slice('/static/'.length))
    if (path.startsWith('/actions/')) {
      if (method !== 'POST') {
        res.setHeader('Allow', 'POST')
        throw new HttpError(405, 'actions are POST only')
      }
      return this.action(req, res, path.slice('/actions/'.length))
    }
    if (method !== 'GET' && method !== 'HEAD') throw new HttpError(405, 'use GET')
    const csrf = this.csrfCookie(req, res)
    const caps = await this.capabilities()
    switch (path) {
      case '/':
        return this.page(res, caps, 'overview', 'Overview', await this.overview(caps, csrf))
      case '/sessions':
        return this.page(res, caps, 'sessions', 'Sessions', await this.sessions(url))
      case '/session':
        return this.page(res, caps, 'sessions', 'Session', await this.session(url, caps, csrf))
      case '/event':
        return this.page(res, caps, 'sessions', 'Event', await this.event(url))
      case '/failures':
        return this.page(res, caps, 'failures', 'Dead letters', await this.failures(url, caps, csrf))
      case '/queues':
        if (!this.has(caps, 'a2_list_queues')) throw new HttpError(404, 'queues need a2 0.4.0 queues (a2_list_queues)')
        return this.page(res, caps, 'queues', 'Queues', await this.queues(caps, csrf))
      case '/schedules':
        if (!this.has(caps, 'a2_list_schedules')) throw new HttpError(404, 'schedules need a2 0.4.0 schedules (a2_list_schedules)')
        return this.page(res, caps, 'schedules', 'Schedules', await this.schedules(caps, csrf))
      case '/api/history':
        return this.json(res, { intervalMs: this.opts.pollMs, samples: this.sampler.samples })
      case '/api/stream':
        return this.stream(req, res)
      default:
        throw new HttpError(404, 'not found')
    }
  }

  authorized(req: IncomingMessage, res: ServerResponse): boolean {
    if (this.opts.basicAuth !== null) {
      const m = /^Basic\s+(.+)$/i.exec(req.headers.authorization ?? '')
      const given = m ? Buffer.from(m[1]!, 'base64').toString('utf8') : ''
      if (!m || !sameSecret(given, this.opts.basicAuth)) {
        res.setHeader('WWW-Authenticate', 'Basic realm="a2 dashboard", charset="UTF-8"')
        this.send(res, 401, 'text/plain; charset=utf-8', 'authentication required\n')
        return false
      }
    }
    if (this.opts.token !== null) {
      const m = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '')
      const given = m ? m[1]! : (cookies(req).get(TOKEN_COOKIE) ?? '')
      if (!sameSecret(given, this.opts.token)) {
        res.statusCode = 401
        res.setHeader('Content-Type', 'text/html; charset=utf-8')
        res.end(this.loginForm().value)
        return false
      }
    }
    return true
  }

  loginForm(error = ''): Html {
    return h`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>a2 dashboard: sign in</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="${this.url('/static/style.css')}"></head><body><main>
<h1>a2 dashboard</h1><form method="post" action="${this.url('/login')}">
<label>Token <input type="password" name="token" autocomplete="current-password" autofocus></label>
<button type="submit">Sign in</button></form>${error ? h`<p class="error">${error}</p>` : ''}</main></body></html>`
  }

  async login(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST') {
      res.setHeader('Content-Type', 'text/html; charset=utf-8')
      res.end(this.loginForm().value)
      return
    }
    const form = new URLSearchParams(await readBody(req, 4096))
    if (!sameSecret(form.get('token') ?? '', this.opts.token ?? '')) {
      res.statusCode = 401
      res.setHeader('Content-Type', 'text/html; charset=utf-8')
      res.end(this.loginForm('wrong token').value)
      return
    }
    res.setHeader('Set-Cookie', `${TOKEN_COOKIE}=${encodeURIComponent(form.get('token') ?? '')}; Path=${this.url('/') || '/'}; HttpOnly; SameSite=Strict`)
    res.statusCode = 303
    res.setHeader('Location', this.url('/'))
    res.end()
  }

  /** The CSRF token: a random value in a SameSite=Strict cookie, echoed by every form (double submit). */
  csrfCookie(req: IncomingMessage, res: ServerResponse): string {
    const have = cookies(req).get(CSRF_COOKIE)
    if (have && /^[A-Za-z0-9_-]{32,}$/.test(have)) return have
    const token = randomBytes(24).toString('base64url')
    res.setHeader('Set-Cookie', `${CSRF_COOKIE}=${token}; Path=${this.url('/') || '/'}; HttpOnly; SameSite=Strict`)
    return token
  }

  checkCsrf(req: IncomingMessage, form: URLSearchParams): void {
    const cookie = cookies(req).get(CSRF_COOKIE) ?? ''
    const field = form.get('csrf') ?? ''
    if (cookie === '' || field === '' || !sameSecret(cookie, field)) throw new HttpError(403, 'missing or wrong CSRF token: reload the page and try again')
    // A browser always sends Origin on a cross-site POST; when present it must be this site.
    const origin = req.headers.origin
    const host = req.headers['x-forwarded-host'] ?? req.headers.host
    if (origin !== undefined && origin !== 'null' && host !== undefined) {
      let oh = ''
      try {
        oh = new URL(origin).host
      } catch {
        oh = ''
      }
      if (oh !== String(host).split(',')[0]!.trim()) throw new HttpError(403, 'cross-origin request refused')
    }
  }

  send(res: ServerResponse, status: number, type: string, body: string): void {
    res.statusCode = status
    res.setHeader('Content-Type', type)
    res.end(body)
  }

  json(res: ServerResponse, value: unknown): void {
    res.setHeader('Cache-Control', 'no-store')
    this.send(res, 200, 'application/json; charset=utf-8', JSON.stringify(value))
  }

  fail(res: ServerResponse, err: unknown): void {
    if (res.headersSent) {
      res.end()
      return
    }
    const status = err instanceof HttpError ? err.status : 500
    const pgErr = err as { code?: string; message?: string }
    const message = err instanceof HttpError ? err.message : `${pgErr.code ? pgErr.code + ': ' : ''}${pgErr.message ?? String(err)}`
    if (status === 500) console.error(`a2-dashboard: ${message}`)
    res.statusCode = status
    res.setHeader('Content-Type', 'text/html; charset=utf-8')
    res.end(
      h`<!doctype html><html lang="en"><head><meta charset="utf-8"><title>a2 dashboard: ${status}</title><link rel="icon" href="data:,">
<link rel="stylesheet" href="${this.url('/static/style.css')}"></head><body><main><h1>${status}</h1>
<p class="error" id="error">${message}</p><p><a href="${this.url('/')}">Overview</a></p></main></body></html>`.value,
    )
  }

  async static(res: ServerResponse, name: string): Promise<void> {
    const types: Record<string, string> = { 'app.js': 'text/javascript; charset=utf-8', 'style.css': 'text/css; charset=utf-8' }
    const type = types[name]
    if (!type) throw new HttpError(404, 'not found')
    res.setHeader('Cache-Control', 'no-cache')
    this.send(res, 200, type, await readFile(join(STATIC_DIR, name), 'utf8'))
  }

  page(res: ServerResponse, caps: Capabilities, tab: string, title: string, body: Html): void {
    const tabs: [string, string, string][] = [
      ['overview', '/', 'Overview'],
      ['sessions', '/sessions', 'Sessions'],
      ['failures', '/failures', 'Dead letters'],
    ]
    if (this.has(caps, 'a2_list_queues')) tabs.push(['queues', '/queues', 'Queues'])
    if (this.has(caps, 'a2_list_schedules')) tabs.push(['schedules', '/schedules', 'Schedules'])
    const mode = this.opts.readOnly || !caps.canWriteEvents ? 'read-only' : 'actions allowed'
    res.setHeader('Cache-Control', 'no-store')
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    )
    res.setHeader('X-Frame-Options', 'DENY')
    this.send(
      res,
      200,
      'text/html; charset=utf-8',
      h`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · a2 dashboard</title><link rel="icon" href="data:,"><link rel="stylesheet" href="${this.url('/static/style.css')}">
<script src="${this.url('/static/app.js')}" defer></script></head>
<body data-base="${this.opts.basePath}" data-page="${tab}">
<header><span class="brand">a2</span><nav>${tabs.map(([id, href, label]) => h`<a href="${this.url(href)}" class="${id === tab ? 'active' : ''}" id="nav-${id}">${label}</a>`)}</nav>
<span class="who" id="role">role ${caps.role} · <span id="mode">${mode}</span></span></header>
<main>${body}</main></body></html>`.value,
    )
  }

  // ---- overview ----------------------------------------------------------

  async overview(caps: Capabilities, _csrf: string): Promise<Html> {
    const [m, notify, workers] = await Promise.all([
      this.db.metrics(),
      caps.canNotifyStatus ? this.db.notifyStatus() : Promise.resolve(null),
      this.db.backgroundWorkers().catch(() => []),
    ])
    const card = (id: string, label: string, value: Json | undefined, hint = ''): Html =>
      h`<div class="card"><div class="label">${label}</div><div class="value" id="${id}">${fmtNum(value)}</div>${hint ? h`<div class="hint">${hint}</div>` : ''}</div>`
    const lag = typeof m.oldest_eligible_age_ms === 'number' ? (m.oldest_eligible_age_ms / 1000).toFixed(1) + ' s' : '0 s'
    const last = this.sampler.samples.at(-1)
    const schedulers = workers.filter((w) => w.type.includes('scheduler'))
    return h`<h1>Overview</h1>
<section class="cards">
${card('m-backlog', 'Backlog (eligible)', m.eligible_events, `${fmtNum(m.sessions_with_eligible_work)} sessions`)}
${card('m-leased', 'Leased', m.leased_events, `${fmtNum(m.expired_leases)} expired leases`)}
${card('m-scheduled', 'Scheduled', m.scheduled_events, m.earliest_due_at ? `next due ${fmtTime(m.earliest_due_at)}` : 'nothing due')}
${card('m-dead', 'Dead-lettered', m.dead_letters)}
${card('m-cancelled', 'Cancelled', m.cancelled_events === undefined ? 'n/a' : m.cancelled_events, m.cancelled_events === undefined ? 'needs a2 0.4.0 cancel' : '')}
${card('m-lane', 'Waiting in lanes', m.lane_waiting_events)}
<div class="card"><div class="label">Claim lag</div><div class="value" id="m-lag">${lag}</div><div class="hint">age of the oldest available work</div></div>
<div class="card"><div class="label">Appends / s</div><div class="value" id="m-appends">${last?.appendsPerSecond?.toFixed(1) ?? '…'}</div><div class="hint">estimate (pg_stat)</div></div>
<div class="card"><div class="label">Finished / s</div><div class="value" id="m-finished">${last?.finishedPerSecond?.toFixed(1) ?? '…'}</div><div class="hint">appends minus backlog growth</div></div>
</section>
<section class="charts">
<figure><figcaption>Backlog, leased, scheduled, dead-lettered (last hour)</figcaption><canvas id="chart-counts" width="640" height="200" data-series="eligible,leased,scheduled,dead"></canvas></figure>
<figure><figcaption>Appends and finished per second</figcaption><canvas id="chart-rates" width="640" height="200" data-series="appendsPerSecond,finishedPerSecond"></canvas></figure>
<figure><figcaption>Claim lag, seconds</figcaption><canvas id="chart-lag" width="640" height="200" data-series="lagSeconds"></canvas></figure>
<p class="hint">Polled from <code>a2_metrics()</code> every ${this.opts.pollMs / 1000} s, pushed live; <span id="live-status">connecting…</span> · <span id="sample-count">${this.sampler.samples.length}</span> samples</p>
</section>
<section class="status"><h2>Notifier and scheduler</h2><table>
<tr><th>notifier mode</th><td id="notifier-mode">${notify ? str(notify.mode) : caps.canNotifyStatus ? 'unknown' : 'no privilege (a2_grant_monitor)'}</td></tr>
<tr><th>notifier process</th><td id="notifier-pid">${notify ? (notify.notifier_pid === null ? 'not running' : `pid ${str(notify.notifier_pid)}`) : '—'}</td></tr>
${notify ? h`<tr><th>notifier queue</th><td>${fmtNum(notify.queue_depth)} of ${fmtNum(notify.queue_size)} (waiting ${fmtNum(notify.waiting)}); announced ${fmtNum(notify.announced)}, coalesced ${fmtNum(notify.coalesced)}, fallbacks ${fmtNum(notify.fallbacks)}, dropped ${fmtNum(notify.dropped)}</td></tr>` : ''}
<tr><th>scheduler</th><td id="scheduler">${schedulers.length > 0 ? schedulers.map((w) => `${w.type} (pid ${w.pid})`).join(', ') : !caps.canSeeWorkers ? 'not visible to this role (pg_monitor or pg_read_all_stats shows it)' : Number(m.scheduled_events ?? 0) > 0 ? 'not running (due events are announced once one starts)' : 'idle: nothing scheduled'}</td></tr>
<tr><th>extension</th><td>a2 ${caps.extVersion ?? '?'}; measured at ${fmtTime(m.measured_at)}</td></tr>
</table></section>`
  }

  // ---- sessions ----------------------------------------------------------

  async sessions(url: URL): Promise<Html> {
    const prefix = url.searchParams.get('prefix') ?? ''
    const state = url.searchParams.get('state') ?? ''
    const cursor = url.searchParams.get('cursor')
    if (!['', 'pending', 'dead', 'finished'].includes(state)) throw new HttpError(400, 'state must be pending, dead or finished')
    if (prefix.length > 1024 || (cursor ?? '').length > 1024) throw new HttpError(400, 'prefix and cursor are at most 1024 characters')
    // Unfiltered: one page of a2_list_sessions. "dead": sessions met on a
    // walk of the dead letters (a2_dead_letters, newest failure first),
    // then their summaries, one a2_list_sessions probe each. "pending" and
    // "finished": one page of FILTER_SCAN sessions, filtered (bounded; the
    // cursor goes on from there). No filter reads more than a bounded
    // number of sessions or dead letters, whatever the table holds.
    const rows: JsonObject[] = []
    let next: string | null = null
    if (state === 'dead') {
      let dc: Json = null
      if (cursor !== null) {
        try {
          dc = JSON.parse(cursor) as Json
        } catch {
          throw new HttpError(400, 'bad cursor')
        }
      }
      const ids: string[] = []
      let scanned = 0
      // The page ends just before the dead letter of a session that would
      // be the (PAGE+1)th, so a session's later dead letters right after
      // the page's own do not bring it back on the next page.
      let prev: Json = dc
      walk: while (scanned < 10 * FILTER_SCAN) {
        const page: JsonObject = await this.db.one<JsonObject>(STATEMENTS.deadLetters, [null, dc === null ? null : JSON.stringify(dc), 200, FILTER_SCAN])
        scanned += Number(page.scanned ?? 0)
        for (const e of (page.events ?? []) as JsonObject[]) {
          const sid = str(e.sessionId)
          if (sid.startsWith(prefix) && !ids.includes(sid)) {
            if (ids.length >= PAGE) {
              dc = prev
              break walk
            }
            ids.push(sid)
          }
          prev = [Date.parse(str(e.failedAt)), sid, Number(e.index)]
        }
        dc = page.cursor ?? null
        if (dc === null) break
      }
      next = dc === null ? null : JSON.stringify(dc)
      const summaries = await this.db.rows(STATEMENTS.sessionSummaries, [ids])
      summaries.forEach((r, k) => {
        const s = (((r.r as JsonObject).sessions ?? []) as JsonObject[])[0]
        if (s && s.sessionId === ids[k]) rows.push(s)
      })
    } else {
      const r = await this.db.one<JsonObject>(STATEMENTS.listSessions, [prefix, cursor, state === '' ? PAGE : FILTER_SCAN])
      next = typeof r.cursor === 'string' ? r.cursor : null
      for (const s of (r.sessions ?? []) as JsonObject[]) {
        const pending = Number(s.pendingCount ?? 0)
        const dead = Number(s.failedCount ?? 0)
        if (state === '' || (state === 'pending' && pending > 0) || (state === 'finished' && pending === 0 && dead === 0)) rows.push(s)
        if (state !== '' && rows.length >= PAGE) {
          next = String(s.sessionId)
          break
        }
      }
    }
    const opt = (v: string, label: string): Html => h`<option value="${v}" ${v === state ? new Html('selected') : ''}>${label}</option>`
    return h`<h1>Sessions</h1>
<form method="get" action="${this.url('/sessions')}" class="filters" id="session-search">
<label>Id prefix <input name="prefix" value="${prefix}" id="prefix" autocomplete="off"></label>
<label>State <select name="state" id="state">${opt('', 'any')}${opt('pending', 'with unfinished work')}${opt('dead', 'with dead letters')}${opt('finished', 'all finished')}</select></label>
<button type="submit">Search</button></form>
${state === 'dead' ? h`<p class="hint">Sessions with dead letters, most recent failure first.</p>` : state !== '' ? h`<p class="hint">Each page looks at the next ${FILTER_SCAN} sessions in id order.</p>` : ''}
<table class="list" id="sessions"><thead><tr><th>session</th><th>events</th><th>unfinished</th><th>dead-lettered</th><th>attempts</th><th>failures</th><th>first event</th><th>updated</th></tr></thead><tbody>
${rows.map(
  (s) => h`<tr><td><a class="session-link" href="${this.url('/session' + qs({ id: str(s.sessionId) }))}">${str(s.sessionId)}</a></td><td>${fmtNum(s.eventCount)}</td><td>${fmtNum(s.pendingCount)}</td><td class="${Number(s.failedCount) > 0 ? 'bad' : ''}">${fmtNum(s.failedCount)}</td><td>${fmtNum(s.attemptCount)}</td><td>${fmtNum(s.failureCount)}</td><td>${fmtTime(s.firstEventAt)}</td><td>${fmtTime(s.updatedAt)}</td></tr>`,
)}
</tbody></table>
${rows.length === 0 ? h`<p id="empty">No sessions${state !== '' && next !== null ? ' in this stretch' : ''}.</p>` : ''}
<p class="pager">${cursor !== null ? h`<a href="${this.url('/sessions' + qs({ prefix, state }))}">First page</a> ` : ''}${next !== null ? h`<a id="next-page" href="${this.url('/sessions' + qs({ prefix, state, cursor: next }))}">Next page →</a>` : h`<span>Last page</span>`}</p>`
  }

  // ---- one session -------------------------------------------------------

  async session(url: URL, caps: Capabilities, csrf: string): Promise<Html> {
    const id = url.searchParams.get('id') ?? ''
    if (id === '' || id.length > 1024) throw new HttpError(400, 'id is a session id of 1 to 1024 characters')
    const after = int(url.searchParams.get('after'), 0, Number.MAX_SAFE_INTEGER) ?? 0
    const events = (await this.db.one<JsonObject[]>(STATEMENTS.read, [id, after, null, PAGE + 1])) ?? []
    const more = events.length > PAGE
    if (more) events.pop()
    if (events.length === 0 && after === 0) throw new HttpError(404, `no session ${id}`)
    const [snapshots, presence, lastRow] = await Promise.all([
      this.db.one<JsonObject[]>(STATEMENTS.snapshots, [id]).catch(() => null),
      this.db.store.presence.read(id).catch(() => null),
      this.db.rows(STATEMENTS.lastIndex, [id]),
    ])
    const lastIndex = Number(lastRow[0]?.n ?? 0)
    const now = Date.now()
    const byId = new Map<string, number>()
    for (const e of events) byId.set(str(e.id), Number(e.index))
    const canRedrive = this.canAct(caps, 'a2_redrive')
    const canCancel = this.has(caps, 'a2_cancel') && this.canAct(caps, 'a2_cancel')
    const row = (e: JsonObject): Html => {
      const state = eventState(e, now)
      const cause = e.cause as JsonObject | null
      const children = ((e.returnedEventIds ?? []) as string[]).map((rid) => (byId.has(rid) ? h`<a href="#event-${byId.get(rid)!}">#${byId.get(rid)!}</a> ` : h`<code>${rid}</code> `))
      return h`<tr id="event-${str(e.index)}" class="state-${state}">
<td><a class="event-link" href="${this.url('/event' + qs({ session: id, index: str(e.index) }))}">#${str(e.index)}</a></td>
<td>${str(e.type)}</td><td><span class="badge ${state}">${state}</span></td>
<td>${fmtNum(e.attemptCount)} / ${fmtNum(e.failureCount)}</td>
<td>${e.claimHolder ? h`${str(e.claimHolder)}<br><small>until ${fmtTime(e.claimExpiresAt)}</small>` : ''}</td>
<td>${e.lane ? str(e.lane) : ''}</td>
<td>${cause ? h`${byId.has(str(cause.eventId)) ? h`<a href="#event-${byId.get(str(cause.eventId))!}">${str(cause.eventId)}</a>` : str(cause.eventId)} <small>${cause.attempt !== undefined ? `attempt ${str(cause.attempt)}` : ''}</small>` : ''}</td>
<td>${children}</td>
<td>${e.notBefore ? fmtTime(e.notBefore) : ''}${e.waitFor ? h`<br><small class="wait">waits for ${JSON.stringify(e.waitFor)}${e.waitResult ? h`; ${JSON.stringify(e.waitResult)}` : ''}</small>` : ''}</td>
<td class="error-text">${e.lastError ? str(e.lastError) : ''}${e.lastFailedAt ? h`<br><small>${fmtTime(e.lastFailedAt)}</small>` : ''}</td>
<td>${fmtTime(e.createdAt)}${e.processedAt ? h`<br><small>done ${fmtTime(e.processedAt)}</small>` : ''}</td>
<td class="actions">${state === 'dead-lettered' && canRedrive ? this.actionForm('redrive', csrf, 'Redrive', { target: 'one', session: id, index: str(e.index), back: `/session${qs({ id })}` }) : ''}${
        canCancel && (state === 'pending' || state === 'leased' || state === 'scheduled' || state === 'dead-lettered')
          ? this.actionForm('cancel', csrf, 'Cancel', { session: id, index: str(e.index), back: `/session${qs({ id })}` })
          : ''
      }</td></tr>
${this.opts.payloads ? h`<tr class="payload-row"><td></td><td colspan="11"><details><summary>payload</summary><pre class="json">${JSON.stringify(e.payload, null, 2)}</pre></details></td></tr>` : ''}`
    }
    return h`<h1>Session <code id="session-id">${id}</code></h1>
<p>${fmtNum(lastIndex)} events. ${canRedrive && events.some((e) => e.failedAt) ? this.actionForm('redrive', csrf, 'Redrive all dead letters of this session', { target: 'session', session: id, back: `/session${qs({ id })}` }) : ''}</p>
<h2>Timeline</h2>
<table class="list timeline" id="timeline"><thead><tr><th>#</th><th>type</th><th>state</th><th>attempts / failures</th><th>lease holder</th><th>lane</th><th>cause</th><th>children</th><th>notBefore / wait</th><th>last error</th><th>created</th><th></th></tr></thead><tbody>
${events.map(row)}
</tbody></table>
<p class="pager">${after > 0 ? h`<a href="${this.url('/session' + qs({ id }))}">First events</a> ` : ''}${more ? h`<a id="next-page" href="${this.url('/session' + qs({ id, after: str(events.at(-1)!.index) }))}">Next ${PAGE} →</a>` : ''}</p>
<h2>Snapshots and pins</h2>
${snapshots === null ? h`<p>Not readable by this role.</p>` : snapshots.length === 0 ? h`<p id="no-snapshots">No snapshots.</p>` : h`<table class="list" id="snapshots"><thead><tr><th>reducer</th><th>index</th><th>updated</th><th>kind</th></tr></thead><tbody>${snapshots.map((s) => h`<tr><td>${str(s.reducerName)}</td><td>${str(s.index)}</td><td>${fmtTime(s.updatedAt)}</td><td>${s.head === false ? 'history, held by a pin' : 'head'}</td></tr>`)}</tbody></table>`}
<h2>Presence</h2>
${presence === null ? h`<p>Not readable by this role.</p>` : presence.length === 0 ? h`<p id="no-presence">Nobody present (namespace <code>${id}</code>).</p>` : h`<table class="list" id="presence"><thead><tr><th>participant</th><th>expires</th>${this.opts.payloads ? h`<th>values</th>` : ''}</tr></thead><tbody>${presence.map((p) => { const o = p as unknown as JsonObject; return h`<tr><td>${str(o.participantId ?? o.participant)}</td><td>${o.expiresAt instanceof Date ? (o.expiresAt as Date).toISOString() : str(o.expiresAt)}</td>${this.opts.payloads ? h`<td><pre class="json">${JSON.stringify(o.values ?? o.value ?? null, null, 2)}</pre></td>` : ''}</tr>` })}</tbody></table>`}`
  }

  async event(url: URL): Promise<Html> {
    const id = url.searchParams.get('session') ?? ''
    const index = int(url.searchParams.get('index'), 1, Number.MAX_SAFE_INTEGER)
    if (id === '' || id.length > 1024 || index === null) throw new HttpError(400, 'session and index are needed')
    const rows = (await this.db.one<JsonObject[]>(STATEMENTS.read, [id, index - 1, index, 1])) ?? []
    const e = rows[0]
    if (!e) throw new HttpError(404, `no event ${index} in session ${id}`)
    const shown: JsonObject = { ...e }
    if (!this.opts.payloads) shown.payload = '(hidden: the dashboard runs with --no-payloads)'
    return h`<h1>Event <code>#${index}</code> of <a href="${this.url('/session' + qs({ id }))}#event-${index}" id="back-to-session">${id}</a></h1>
<p>State: <span class="badge ${eventState(e, Date.now())}" id="event-state">${eventState(e, Date.now())}</span></p>
<pre class="json" id="event-json">${JSON.stringify(shown, null, 2)}</pre>`
  }

  // ---- dead letters ------------------------------------------------------

  async failures(url: URL, caps: Capabilities, csrf: string): Promise<Html> {
    const error = url.searchParams.get('error')
    const cursorText = url.searchParams.get('cursor')
    let cursor: Json = null
    if (cursorText !== null) {
      try {
        cursor = JSON.parse(cursorText) as Json
      } catch {
        throw new HttpError(400, 'bad cursor')
      }
    }
    const [groups, page] = await Promise.all([
      this.db.rows(STATEMENTS.failureGroups, [50, 10000]),
      this.db.one<JsonObject>(STATEMENTS.deadLetters, [error, cursor === null ? null : JSON.stringify(cursor), PAGE, 10000]),
    ])
    const canRedrive = this.canAct(caps, 'a2_redrive')
    const canCancel = this.has(caps, 'a2_cancel') && this.canAct(caps, 'a2_cancel')
    const gs = groups.map((r) => r.g as JsonObject)
    const complete = gs.length === 0 || gs[0]!.complete === true
    const events = (page.events ?? []) as JsonObject[]
    const back = `/failures${qs({ error })}`
    return h`<h1>Dead letters and failures</h1>
<h2>Errors, grouped by message</h2>
${gs.length === 0 ? h`<p id="no-failures">No dead letters.</p>` : h`<table class="list" id="groups"><thead><tr><th>error</th><th>events</th><th>sessions</th><th>first</th><th>last</th><th>sample</th><th></th></tr></thead><tbody>
${gs.map(
  (g) => h`<tr><td class="error-text"><a class="group-link" href="${this.url('/failures' + qs({ error: str(g.error) }))}">${str(g.error) || '(no message)'}</a></td><td>${fmtNum(g.events)}</td><td>${fmtNum(g.sessions)}</td><td>${fmtTime(g.first_failed_at)}</td><td>${fmtTime(g.last_failed_at)}</td>
<td><a href="${this.url('/session' + qs({ id: str(g.sample_session_id) }))}#event-${str(g.sample_index)}">${str(g.sample_session_id)} #${str(g.sample_index)}</a></td>
<td>${canRedrive ? this.actionForm('redrive', csrf, 'Redrive all', { target: 'matching', error: str(g.error), back: '/failures' }) : ''}</td></tr>`,
)}</tbody></table>
<p class="hint">${complete ? 'All dead letters counted.' : `Counted over the newest ${fmtNum(gs[0]!.scanned)} dead letters (a bounded walk).`}</p>`}
<h2>${error !== null ? h`Dead letters with error <q id="error-filter">${error}</q> <a href="${this.url('/failures')}">(all)</a>` : 'Dead letters, newest first'}</h2>
${canRedrive ? h`<form method="post" action="${this.url('/actions/redrive')}" id="selection">
<input type="hidden" name="csrf" value="${csrf}"><input type="hidden" name="target" value="selected"><input type="hidden" name="back" value="${back}">` : ''}
<table class="list" id="dead-letters"><thead><tr>${canRedrive ? h`<th></th>` : ''}<th>event</th><th>type</th><th>error</th><th>failed</th><th>failures</th><th>lane</th></tr></thead><tbody>
${events.map(
  (e) => h`<tr>${canRedrive ? h`<td><input type="checkbox" name="item" value="${JSON.stringify([e.sessionId, e.index])}" aria-label="select"></td>` : ''}
<td><a href="${this.url('/session' + qs({ id: str(e.sessionId) }))}#event-${str(e.index)}">${str(e.sessionId)} #${str(e.index)}</a></td><td>${str(e.type)}</td><td class="error-text">${str(e.lastError)}</td><td>${fmtTime(e.failedAt)}</td><td>${fmtNum(e.failureCount)}</td><td>${str(e.lane)}</td></tr>`,
)}</tbody></table>
${events.length === 0 ? h`<p>None${page.cursor !== null ? ' in this stretch' : ''}.</p>` : ''}
${canRedrive ? h`${events.length > 0 ? h`<button type="submit" id="redrive-selected">Redrive selected</button>` : ''}</form>` : ''}
${canRedrive && error !== null && events.length > 0 ? this.actionForm('redrive', csrf, `Redrive all with this error`, { target: 'matching', error, back }) : ''}
${canCancel && events.length > 0 ? h`<p class="hint">Cancel a dead letter from its session's page.</p>` : ''}
<p class="pager">${page.cursor !== null ? h`<a id="next-page" href="${this.url('/failures' + qs({ error, cursor: JSON.stringify(page.cursor) }))}">Next page →</a>` : ''}</p>`
  }

  // ---- queues and schedules (a2 0.4.0, feature-detected) -----------------

  async queues(caps: Capabilities, csrf: string): Promise<Html> {
    const rows = (await this.db.rows(STATEMENTS.listQueues)).map((r) => r.q as JsonObject)
    const canPause = this.canAct(caps, 'a2_pause_queue') && this.canAct(caps, 'a2_resume_queue')
    const cols = rows.length > 0 ? Object.keys(rows[0]!).filter((k) => k !== 'queue' && k !== 'paused') : []
    return h`<h1>Queues</h1>
<table class="list" id="queues"><thead><tr><th>queue</th><th>paused</th>${cols.map((c) => h`<th>${c.replace(/_/g, ' ')}</th>`)}<th></th></tr></thead><tbody>
${rows.map(
  (q) => h`<tr><td>${str(q.queue)}</td><td>${q.paused === true ? 'paused' : 'running'}</td>${cols.map((c) => h`<td>${typeof q[c] === 'object' && q[c] !== null ? JSON.stringify(q[c]) : fmtNum(q[c])}</td>`)}
<td>${canPause ? this.actionForm('queue', csrf, q.paused === true ? 'Resume' : 'Pause', { queue: str(q.queue), op: q.paused === true ? 'resume' : 'pause', back: '/queues' }) : ''}</td></tr>`,
)}</tbody></table>${rows.length === 0 ? h`<p>No queues.</p>` : ''}`
  }

  async schedules(caps: Capabilities, csrf: string): Promise<Html> {
    const rows = (await this.db.rows(STATEMENTS.listSchedules)).map((r) => r.s as JsonObject)
    const canPause = this.canAct(caps, 'a2_pause_schedule') && this.canAct(caps, 'a2_resume_schedule')
    const cols = rows.length > 0 ? Object.keys(rows[0]!).filter((k) => k !== 'name' && k !== 'paused' && (this.opts.payloads || k !== 'event')) : []
    return h`<h1>Schedules</h1>
<table class="list" id="schedules"><thead><tr><th>name</th><th>paused</th>${cols.map((c) => h`<th>${c.replace(/_/g, ' ')}</th>`)}<th></th></tr></thead><tbody>
${rows.map(
  (s) => h`<tr><td>${str(s.name)}</td><td>${s.paused === true ? 'paused' : 'active'}</td>${cols.map((c) => h`<td>${typeof s[c] === 'object' && s[c] !== null ? JSON.stringify(s[c]) : typeof s[c] === 'string' && /^\d{4}-\d\d-\d\dT/.test(s[c] as string) ? fmtTime(s[c]) : fmtNum(s[c])}</td>`)}
<td>${canPause ? this.actionForm('schedule', csrf, s.paused === true ? 'Resume' : 'Pause', { name: str(s.name), op: s.paused === true ? 'resume' : 'pause', back: '/schedules' }) : ''}</td></tr>`,
)}</tbody></table>${rows.length === 0 ? h`<p>No schedules.</p>` : ''}`
  }

  // ---- actions -----------------------------------------------------------

  actionForm(action: string, csrf: string, label: string, fields: Record<string, string>): Html {
    return h`<form method="post" action="${this.url('/actions/' + action)}" class="inline action-${action}">
<input type="hidden" name="csrf" value="${csrf}">${Object.entries(fields).map(([k, v]) => h`<input type="hidden" name="${k}" value="${v}">`)}
<button type="submit">${label}</button></form>`
  }

  /**
   * Every action: POST, CSRF-checked, refused with 403 unless the role may
   * act; the first POST answers a confirmation page, the confirmed POST
   * acts and says what it did.
   */
  async action(req: IncomingMessage, res: ServerResponse, name: string): Promise<void> {
    const form = new URLSearchParams(await readBody(req))
    this.checkCsrf(req, form)
    const caps = await this.capabilities(true)
    const fn = { redrive: 'a2_redrive', cancel: 'a2_cancel', queue: form.get('op') === 'resume' ? 'a2_resume_queue' : 'a2_pause_queue', schedule: form.get('op') === 'resume' ? 'a2_resume_schedule' : 'a2_pause_schedule' }[name]
    if (fn === undefined) throw new HttpError(404, 'no such action')
    if (!this.has(caps, fn)) throw new HttpError(404, `${fn} does not exist in this database`)
    if (!this.canAct(caps, fn))
      throw new HttpError(403, this.opts.readOnly ? 'the dashboard runs read-only (--read-only)' : `role ${caps.role} may not run ${fn} (read-only: it needs UPDATE on a2_events and EXECUTE on ${fn}; see docs/operations.md)`)
    const backRaw = form.get('back') ?? '/'
    const back = /^\/[A-Za-z0-9_/?=&%.~+-]*$/.test(backRaw) && !backRaw.startsWith('//') ? backRaw : '/'
    const csrf = form.get('csrf') ?? ''
    const plan = this.plan(name, form)
    if (form.get('confirmed') !== 'yes') {
      const fields: [string, string][] = [...form.entries()].filter(([k]) => k !== 'confirmed')
      return this.page(res, caps, name === 'queue' ? 'queues' : name === 'schedule' ? 'schedules' : 'failures', 'Confirm', h`<h1>Confirm</h1>
<p id="confirm-question">${plan.question}</p>
<form method="post" action="${this.url('/actions/' + name)}" id="confirm-form">${fields.map(([k, v]) => h`<input type="hidden" name="${k}" value="${v}">`)}
<input type="hidden" name="confirmed" value="yes"><button type="submit" id="confirm">${plan.verb}</button> <a href="${this.url(back)}" id="cancel-action">Back</a></form>`)
    }
    const message = await plan.run()
    void csrf
    this.page(res, caps, 'failures', 'Done', h`<h1>Done</h1><p id="result" class="ok">${message}</p><p><a href="${this.url(back)}" id="back">Back</a></p>`)
  }

  plan(name: string, form: URLSearchParams): { question: string; verb: string; run: () => Promise<string> } {
    const need = (k: string): string => {
      const v = form.get(k)
      if (v === null || v === '' || v.length > 1024) throw new HttpError(400, `${k} is required (1 to 1024 characters)`)
      return v
    }
    const index = (v: string | null): number => {
      const n = int(v, 1, Number.MAX_SAFE_INTEGER)
      if (n === null) throw new HttpError(400, 'index must be a positive integer')
      return n
    }
    if (name === 'redrive') {
      const target = form.get('target')
      if (target === 'one') {
        const s = need('session')
        const i = index(form.get('index'))
        return {
          question: `Redrive event #${i} of session ${s}? It becomes claimable at once.`,
          verb: 'Redrive',
          run: async () => {
            const r = await this.db.act<JsonObject>(STATEMENTS.redrive, [s, i])
            return r.outcome === 'already_redriven' ? `Event #${i} of ${s} was already redriven; nothing changed.` : `Redrove event #${i} of session ${s}.`
          },
        }
      }
      if (target === 'session') {
        const s = need('session')
        return {
          question: `Redrive every dead-lettered event of session ${s}?`,
          verb: 'Redrive all of this session',
          run: async () => {
            const r = await this.db.act<JsonObject>(STATEMENTS.redriveSession, [s])
            const n = ((r.events ?? []) as Json[]).length
            return `Redrove ${n} event${n === 1 ? '' : 's'} of session ${s}.`
          },
        }
      }
      if (target === 'selected') {
        const items = form.getAll('item').map((v) => {
          let p: unknown
          try {
            p = JSON.parse(v)
          } catch {
            throw new HttpError(400, 'bad selection')
          }
          if (!Array.isArray(p) || typeof p[0] !== 'string' || p[0] === '' || p[0].length > 1024) throw new HttpError(400, 'bad selection')
          return [p[0], index(String(p[1]))] as [string, number]
        })
        if (items.length === 0) throw new HttpError(400, 'select at least one event')
        if (items.length > MAX_REDRIVE_ALL) throw new HttpError(400, `at most ${MAX_REDRIVE_ALL} events at once`)
        return {
          question: `Redrive the ${items.length} selected event${items.length === 1 ? '' : 's'}: ${items.slice(0, 10).map(([s, i]) => `${s} #${i}`).join(', ')}${items.length > 10 ? ', …' : ''}?`,
          verb: `Redrive ${items.length}`,
          run: async () => {
            const outcomes = await this.db.store.transaction(async (tx) => {
              const out: string[] = []
              for (const [s, i] of items) {
                const r = await tx.query(STATEMENTS.redrive, [s, i])
                out.push(String((r.rows[0]?.r as JsonObject).outcome))
              }
              return out
            })
            const done = outcomes.filter((o) => o === 'redriven').length
            return `Redrove ${done} of ${items.length} selected event${items.length === 1 ? '' : 's'}${done < items.length ? ` (${items.length - done} already redriven)` : ''}.`
          },
        }
      }
      if (target === 'matching') {
        const error = form.get('error') ?? ''
        return {
          question: `Redrive every dead letter whose error is “${error}” (up to ${MAX_REDRIVE_ALL} in one go)?`,
          verb: 'Redrive all that match',
          run: async () => {
            let n = 0
            let cursor: Json = null
            let more = false
            // One transaction per page of a2_dead_letters: bounded, and a
            // failure leaves earlier pages done (the message says how many).
            for (;;) {
              const page: JsonObject = await this.db.one<JsonObject>(STATEMENTS.deadLetters, [error, cursor === null ? null : JSON.stringify(cursor), 100, 10000])
              const evs = (page.events ?? []) as JsonObject[]
              if (evs.length > 0) {
                await this.db.store.transaction(async (tx) => {
                  for (const e of evs) await tx.query(STATEMENTS.redrive, [e.sessionId, e.index])
                })
                n += evs.length
              }
              cursor = page.cursor ?? null
              if (cursor === null) break
              if (n >= MAX_REDRIVE_ALL) {
                more = true
                break
              }
            }
            return `Redrove ${n} dead letter${n === 1 ? '' : 's'} with error “${error}”.${more ? ' More remain: run it again.' : ''}`
          },
        }
      }
      throw new HttpError(400, 'target must be one, session, selected or matching')
    }
    if (name === 'cancel') {
      const s = need('session')
      const i = index(form.get('index'))
      return {
        question: `Cancel event #${i} of session ${s}? A cancelled event is never processed.`,
        verb: 'Cancel the event',
        run: async () => {
          const r = await this.db.act<JsonObject>(STATEMENTS.cancel, [s, [i], 'cancelled from the dashboard'])
          return `Cancel of event #${i} of ${s}: ${JSON.stringify(r)}`
        },
      }
    }
    if (name === 'queue' || name === 'schedule') {
      const key = need(name === 'queue' ? 'queue' : 'name')
      const op = form.get('op')
      if (op !== 'pause' && op !== 'resume') throw new HttpError(400, 'op must be pause or resume')
      const text = name === 'queue' ? (op === 'pause' ? STATEMENTS.pauseQueue : STATEMENTS.resumeQueue) : op === 'pause' ? STATEMENTS.pauseSchedule : STATEMENTS.resumeSchedule
      return {
        question: `${op === 'pause' ? 'Pause' : 'Resume'} ${name} ${key}?`,
        verb: op === 'pause' ? 'Pause' : 'Resume',
        run: async () => {
          await this.db.act(text, [key])
          return `${op === 'pause' ? 'Paused' : 'Resumed'} ${name} ${key}.`
        },
      }
    }
    throw new HttpError(404, 'no such action')
  }

  // ---- live data and metrics ---------------------------------------------

  stream(req: IncomingMessage, res: ServerResponse): void {
    res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-store', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' })
    res.write(`retry: 2000\nevent: history\ndata: ${JSON.stringify(this.sampler.samples)}\n\n`)
    this.#sse.add(res)
    const off = this.sampler.subscribe((s) => res.write(`event: sample\ndata: ${JSON.stringify(s)}\n\n`))
    const ping = setInterval(() => res.write(': ping\n\n'), 15000)
    req.on('close', () => {
      off()
      clearInterval(ping)
      this.#sse.delete(res)
    })
  }

  async metrics(res: ServerResponse): Promise<void> {
    const caps = await this.capabilities()
    let m: JsonObject | null = null
    try {
      m = await this.db.metrics()
    } catch (err) {
      console.error(`a2-dashboard: /metrics: ${(err as Error).message}`)
    }
    const notify = caps.canNotifyStatus ? await this.db.notifyStatus() : null
    res.setHeader('Cache-Control', 'no-store')
    this.send(res, 200, 'text/plain; version=0.0.4; charset=utf-8', renderMetrics(m, notify, { up: m !== null }))
  }
}
