/**
 * Test databases on the cluster that PGHOST/PGPORT/PGUSER name (as
 * scripts/test.sh exports them): a fresh database with a2, the dashboard's
 * demo seed, and two login roles: a monitor (a2_grant_monitor) and a
 * worker with the documented extra grant (a2_grant_worker +
 * a2_grant_monitor).
 */

import pg from 'pg'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import { Dashboard, DEFAULTS, type Options } from '../src/server.js'

export const MONITOR = 'a2_dash_monitor'
export const WORKER = 'a2_dash_worker'
const SEED = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'seed.sql')

export const urlFor = (db: string, user = process.env.PGUSER ?? 'postgres'): string => {
  const host = process.env.PGHOST ?? '/var/run/postgresql'
  const port = process.env.PGPORT ?? '5432'
  return host.startsWith('/')
    ? `postgresql://${encodeURIComponent(user)}@/${db}?host=${encodeURIComponent(host)}&port=${port}`
    : `postgresql://${encodeURIComponent(user)}@${host}:${port}/${db}`
}

/** The same database through the transaction-mode pgbouncer of scripts/pgbouncer.sh (A2_PGBOUNCER_URL), or null. */
export const pooledUrlFor = (db: string, user = 'postgres'): string | null => {
  const base = process.env.A2_PGBOUNCER_URL
  if (!base) return null
  const u = new URL(base)
  u.pathname = `/${db}`
  u.username = user
  return u.toString()
}

export async function freshDatabase(db: string, opts: { seed?: boolean } = {}): Promise<pg.Client> {
  const admin = new pg.Client({ connectionString: urlFor('postgres') })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${db}`)
  for (const role of [MONITOR, WORKER]) {
    const r = await admin.query('SELECT 1 FROM pg_roles WHERE rolname = $1', [role])
    if (r.rowCount === 0) await admin.query(`CREATE ROLE ${role} LOGIN`)
  }
  await admin.end()
  const c = new pg.Client({ connectionString: urlFor(db) })
  await c.connect()
  await c.query('CREATE EXTENSION a2')
  await c.query(`SELECT a2_grant_monitor('${MONITOR}'), a2_grant_worker('${WORKER}'), a2_grant_monitor('${WORKER}')`)
  if (opts.seed !== false) {
    const sql = readFileSync(SEED, 'utf8').split('\n').filter((l) => !l.startsWith('\\')).join('\n')
    await c.query(sql)
  }
  return c
}

export async function dropDatabase(db: string): Promise<void> {
  const admin = new pg.Client({ connectionString: urlFor('postgres') })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`)
  await admin.end()
}

export async function startDashboard(databaseUrl: string, opts: Partial<Options> = {}): Promise<{ d: Dashboard; base: string }> {
  const d = new Dashboard({ ...DEFAULTS, port: 0, pollMs: 300, ...opts, databaseUrl })
  const { port } = await d.listen()
  return { d, base: `http://127.0.0.1:${port}${opts.basePath ?? ''}` }
}

/** A browser-like session: keeps cookies, reads the CSRF field of a page. */
export class Agent {
  cookies = new Map<string, string>()
  constructor(
    readonly base: string,
    readonly headers: Record<string, string> = {},
  ) {}

  async req(path: string, init: { method?: string; form?: [string, string][]; headers?: Record<string, string> } = {}): Promise<{ status: number; text: string; headers: Headers }> {
    const headers: Record<string, string> = { ...this.headers, ...init.headers }
    if (this.cookies.size > 0) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ')
    let body: string | undefined
    if (init.form) {
      body = new URLSearchParams(init.form).toString()
      headers['content-type'] = 'application/x-www-form-urlencoded'
    }
    const r = await fetch(this.base + path, { method: init.method ?? (body ? 'POST' : 'GET'), headers, body, redirect: 'manual' })
    for (const c of r.headers.getSetCookie()) {
      const [kv] = c.split(';')
      const i = kv!.indexOf('=')
      this.cookies.set(kv!.slice(0, i), kv!.slice(i + 1))
    }
    return { status: r.status, text: await r.text(), headers: r.headers }
  }

  async csrf(): Promise<string> {
    const page = await this.req('/')
    const m = /name="csrf" value="([^"]+)"/.exec(page.text)
    return m ? m[1]! : this.cookies.get('a2dash_csrf')!
  }
}
