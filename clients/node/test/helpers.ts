/**
 * Test helpers: a fresh database with the extension per test file, on the
 * cluster that PGHOST/PGPORT/PGUSER name (scripts/test.sh exports them;
 * `pg` reads them itself).
 */

import pg from 'pg'

import { a2Store, type A2PostgresStore, type A2StoreOptions } from '../src/index.js'

export const { Pool, Client } = pg

/** Drop and create `name`, with a2 installed (in `schema` when given). */
export const freshDatabase = async (name: string, schema?: string): Promise<void> => {
  const admin = new Client({ database: 'postgres' })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
    await admin.query(`CREATE DATABASE ${name}`)
  } finally {
    await admin.end()
  }
  const c = new Client({ database: name })
  await c.connect()
  try {
    if (schema) {
      await c.query(`CREATE SCHEMA ${schema}`)
      await c.query(`CREATE EXTENSION a2 SCHEMA ${schema}`)
    } else {
      await c.query('CREATE EXTENSION a2')
    }
  } finally {
    await c.end()
  }
}

export const dropDatabase = async (name: string): Promise<void> => {
  const admin = new Client({ database: 'postgres' })
  await admin.connect()
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
  } finally {
    await admin.end()
  }
}

/** A pool on `database` that swallows idle-connection errors (terminations). */
export const pool = (database: string, max = 4): pg.Pool => {
  const p = new Pool({ database, max })
  p.on('error', () => {})
  return p
}

export const storeOn = (
  database: string,
  options: Omit<A2StoreOptions, 'client' | 'connectionString'> = {},
): { store: A2PostgresStore; pool: pg.Pool } => {
  const p = pool(database)
  return { store: a2Store({ ...options, client: p }), pool: p }
}

/** A clock the test moves by hand. */
export class ManualClock {
  ms: number
  constructor(iso = '2026-01-01T00:00:00.000Z') {
    this.ms = Date.parse(iso)
  }
  now(): Date {
    return new Date(this.ms)
  }
  advance(ms: number): void {
    this.ms += ms
  }
}

/** Rejects after `ms` unless `p` settles first. */
export const within = <T>(p: Promise<T>, ms: number, what: string): Promise<T> =>
  new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms: ${what}`)), ms)
    p.then(
      (v) => {
        clearTimeout(t)
        resolve(v)
      },
      (e: unknown) => {
        clearTimeout(t)
        reject(e)
      },
    )
  })

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms))

/** Take the next `n` values of an iterator. */
export const take = async <T>(it: AsyncIterator<T>, n: number): Promise<T[]> => {
  const out: T[] = []
  while (out.length < n) {
    const r = await it.next()
    if (r.done) break
    out.push(r.value)
  }
  return out
}
