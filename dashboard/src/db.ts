/**
 * Every statement the dashboard sends. Each is a fixed text with
 * positional parameters: nothing from a request is ever spliced into SQL.
 * Reads go through a `pg` Pool; actions run through clients/node's
 * `store.transaction` on the same pool. No session state (SET, LISTEN,
 * named prepared statements) is used, so a transaction-mode pooler works.
 */

import pg from 'pg'
import { a2Store, type A2PostgresStore } from 'a2-client'

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json }
export type JsonObject = { [k: string]: Json }

/** What the connected role may do, and which optional a2 functions exist. */
export type Capabilities = {
  role: string
  /** a2 functions in the database (pg_proc, extension members), with EXECUTE for this role. */
  functions: Map<string, boolean>
  /** UPDATE on a2_events: the protocol's actions (redrive, cancel) need it. */
  canWriteEvents: boolean
  canRead: boolean
  canMetrics: boolean
  canNotifyStatus: boolean
  /** pg_read_all_stats (e.g. through pg_monitor): other roles' background workers are visible. */
  canSeeWorkers: boolean
  extVersion: string | null
}

export const STATEMENTS = {
  capabilities: `
    SELECT current_user::text AS role, e.extversion,
           pg_catalog.pg_has_role('pg_read_all_stats', 'USAGE') AS see_workers,
           COALESCE((SELECT json_object_agg(p.proname, has_function_privilege(p.oid, 'EXECUTE'))
                       FROM pg_catalog.pg_depend d
                       JOIN pg_catalog.pg_proc p ON p.oid = d.objid
                      WHERE d.classid = 'pg_catalog.pg_proc'::regclass
                        AND d.refclassid = 'pg_catalog.pg_extension'::regclass
                        AND d.refobjid = e.oid AND d.deptype = 'e'), '{}') AS functions,
           COALESCE((SELECT has_table_privilege(c.oid, 'UPDATE') FROM pg_catalog.pg_class c
                      WHERE c.relname = 'a2_events' AND c.relnamespace = e.extnamespace), false) AS can_write,
           COALESCE((SELECT has_table_privilege(c.oid, 'SELECT') FROM pg_catalog.pg_class c
                      WHERE c.relname = 'a2_events' AND c.relnamespace = e.extnamespace), false) AS can_read
      FROM pg_catalog.pg_extension e WHERE e.extname = 'a2'`,
  metrics: 'SELECT pg_catalog.to_jsonb(m) AS m FROM a2_metrics() m',
  notifyStatus: 'SELECT pg_catalog.to_jsonb(s) AS s FROM a2_notify_status() s',
  backgroundWorkers: `
    SELECT backend_type, pid FROM pg_catalog.pg_stat_activity
     WHERE backend_type LIKE 'a2 %' AND (datname IS NULL OR datname = current_database())
     ORDER BY backend_type, pid`,
  listSessions: 'SELECT a2_list_sessions($1::text, $2::text, $3::integer) AS r',
  /** One summary per id: a2_list_sessions(id, NULL, 1) starts at the id itself (the least id with that prefix). */
  sessionSummaries: 'SELECT a2_list_sessions(x, NULL, 1) AS r FROM pg_catalog.unnest($1::text[]) WITH ORDINALITY AS u(x, n) ORDER BY n',
  read: 'SELECT a2_read($1::text, $2::bigint, $3::bigint, $4::integer) AS r',
  lastIndex: 'SELECT max(idx) AS n FROM a2_events WHERE session_id = $1::text',
  snapshots: 'SELECT a2_list_snapshots($1::text, true) AS r',
  failureGroups: 'SELECT pg_catalog.to_jsonb(g) AS g FROM a2_failure_groups($1::integer, $2::integer) g',
  deadLetters: 'SELECT a2_dead_letters($1::text, $2::jsonb, $3::integer, $4::integer) AS r',
  redrive: 'SELECT a2_redrive($1::text, $2::bigint) AS r',
  redriveSession: 'SELECT a2_redrive($1::text) AS r',
  cancel: 'SELECT a2_cancel($1::text, $2::bigint[], $3::text) AS r',
  listQueues: 'SELECT pg_catalog.to_jsonb(q) AS q FROM a2_list_queues() q',
  pauseQueue: 'SELECT a2_pause_queue($1::text) AS r',
  resumeQueue: 'SELECT a2_resume_queue($1::text) AS r',
  listSchedules: 'SELECT pg_catalog.to_jsonb(s) AS s FROM a2_list_schedules() s',
  pauseSchedule: 'SELECT a2_pause_schedule($1::text) AS r',
  resumeSchedule: 'SELECT a2_resume_schedule($1::text) AS r',
} as const

export class Db {
  readonly pool: pg.Pool
  readonly store: A2PostgresStore

  constructor(connectionString: string, max = 4) {
    this.pool = new pg.Pool({ connectionString, max, application_name: 'a2-dashboard' })
    // Idle clients that lose their server (a restart) must not crash the process.
    this.pool.on('error', () => {})
    this.store = a2Store({ client: this.pool, listen: false })
  }

  async rows(text: string, values: unknown[] = []): Promise<Record<string, unknown>[]> {
    const r = await this.pool.query(text, values)
    return r.rows
  }

  async one<T = Json>(text: string, values: unknown[] = []): Promise<T> {
    const rows = await this.rows(text, values)
    const row = rows[0]
    if (!row) throw new Error('no row')
    return Object.values(row)[0] as T
  }

  async capabilities(): Promise<Capabilities> {
    const rows = await this.rows(STATEMENTS.capabilities)
    const row = rows[0]
    if (!row) throw new Error('extension a2 is not installed in this database (CREATE EXTENSION a2)')
    const functions = new Map(Object.entries((row.functions ?? {}) as Record<string, boolean>))
    return {
      role: String(row.role),
      functions,
      canWriteEvents: row.can_write === true,
      canRead: row.can_read === true,
      canMetrics: functions.get('a2_metrics') === true,
      canNotifyStatus: functions.get('a2_notify_status') === true,
      canSeeWorkers: row.see_workers === true,
      extVersion: (row.extversion as string | null) ?? null,
    }
  }

  async metrics(): Promise<JsonObject> {
    return this.one<JsonObject>(STATEMENTS.metrics)
  }

  async notifyStatus(): Promise<JsonObject | null> {
    try {
      return await this.one<JsonObject>(STATEMENTS.notifyStatus)
    } catch {
      return null
    }
  }

  async backgroundWorkers(): Promise<{ type: string; pid: number }[]> {
    const rows = await this.rows(STATEMENTS.backgroundWorkers)
    return rows.map((r) => ({ type: String(r.backend_type), pid: Number(r.pid) }))
  }

  /** An action in one transaction, through clients/node. */
  async act<T>(text: string, values: unknown[]): Promise<T> {
    return this.store.transaction(async (tx) => {
      const r = await tx.query(text, values)
      return Object.values(r.rows[0] ?? {})[0] as T
    })
  }

  async close(): Promise<void> {
    await this.store.close()
    await this.pool.end().catch(() => {})
  }
}
