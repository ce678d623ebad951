/**
 * Recurring schedules (a2 0.4.0, docs/time.md "Schedules"): define,
 * list, pause, resume and remove them, and run the fire pass. One
 * statement per call, like the store's other calls; an injected clock
 * rides along as a transaction-local a2.now (client.ts).
 */

import { isoText, jsonText } from './codec.js'
import type { Queryable, Statements } from './client.js'
import { toA2Error } from './errors.js'
import type { Clock } from './types.js'

/** What happens to ticks missed while the server was down or the schedule paused. */
export type MissedTicks = 'skip' | 'latest' | 'backfill'

/** The event each tick appends: as `append` takes one, without id, cause or notBefore. */
export type ScheduleEvent = {
  type: string
  payload?: unknown
  lane?: string | null
  settled?: boolean
  [key: string]: unknown
}

export type ScheduleOptions = {
  /** An IANA zone the cron spec is evaluated in (default 'UTC'). */
  timezone?: string
  /** Default 'latest'. */
  missed?: MissedTicks
  /** With 'backfill': at most this many missed ticks (default 100). */
  backfillLimit?: number
  /** With 'skip': how late a tick may be and still fire (default 60000). */
  graceMs?: number
  /** Create it paused. */
  paused?: boolean
}

export type ScheduleInfo = {
  name: string
  spec: string
  timezone: string
  sessionId: string
  event: ScheduleEvent
  missed: MissedTicks
  backfillLimit: number
  graceMs: number
  paused: boolean
  nextTickAt: Date
  lastTickAt: Date | null
  firedCount: number
  createdAt: Date
  updatedAt: Date
}

/** One event a fire pass appended. */
export type FiredTick = {
  name: string
  tickAt: Date
  sessionId: string
  index: number
  eventId: string
}

export type ScheduleOperations = {
  /** Create or replace the schedule `name`; resolves its next tick. */
  schedule(name: string, spec: string, sessionId: string, event: ScheduleEvent, options?: ScheduleOptions): Promise<Date>
  /** Remove it; false when there was none. */
  unschedule(name: string): Promise<boolean>
  /** Every schedule, by name. */
  listSchedules(): Promise<ScheduleInfo[]>
  /** Pause it (NOT_FOUND when there is none); resolves its next tick. */
  pauseSchedule(name: string): Promise<Date>
  /** Resume it; missed ticks follow its policy at the next fire pass. */
  resumeSchedule(name: string): Promise<Date>
  /** Fire every tick due at the store clock (the injected clock, if any). */
  fireSchedules(): Promise<FiredTick[]>
}

const date = (v: unknown): Date => (v instanceof Date ? v : new Date(String(v)))

export function scheduleOperations(
  sql: Statements,
  clock: Clock | undefined,
  handle: () => Promise<Queryable>,
): ScheduleOperations {
  /*
   * One statement whose column r is the answer; `inner` is a SQL
   * expression over $1..$n. With a clock, the setting is made in a FROM
   * subquery, which runs before the select list, and `inner` refers to it
   * (a2_clock.c) so that it is evaluated after, per row.
   */
  const query = async (inner: (clockRef: string) => string, values: unknown[], useClock = true) => {
    try {
      let text: string
      let args = values
      if (clock !== undefined && useClock) {
        const n = values.length + 1
        text = `SELECT ${inner('a2_clock.c IS NOT NULL')} AS r FROM (SELECT pg_catalog.set_config('a2.now', $${n}::text, true) AS c) AS a2_clock`
        args = [...values, isoText(clock.now(), 'clock.now()')]
      } else {
        text = `SELECT ${inner('true')} AS r`
      }
      const c = await handle()
      const { rows } = await c.query(text, args)
      return rows[0]?.['r']
    } catch (err) {
      throw toA2Error(err)
    }
  }

  return {
    async schedule(name, spec, sessionId, event, options = {}) {
      const opts: Record<string, unknown> = {}
      for (const key of ['timezone', 'missed', 'backfillLimit', 'graceMs', 'paused'] as const) {
        if (options[key] !== undefined) opts[key] = options[key]
      }
      const r = await query(
        () => `${sql.fn('a2_schedule')}($1::text, $2::text, $3::text, $4::jsonb, $5::jsonb)`,
        [name, spec, sessionId, jsonText(event), jsonText(opts)],
      )
      return date(r)
    },

    async unschedule(name) {
      return (await query(() => `${sql.fn('a2_unschedule')}($1::text)`, [name], false)) === true
    },

    async listSchedules() {
      const r = (await query(
        () => `(SELECT COALESCE(pg_catalog.json_agg(s), '[]'::json) FROM ${sql.fn('a2_list_schedules')}() s)`,
        [],
        false,
      )) as Record<string, unknown>[]
      return (typeof r === 'string' ? (JSON.parse(r) as Record<string, unknown>[]) : r).map((s) => ({
        name: String(s['name']),
        spec: String(s['spec']),
        timezone: String(s['timezone']),
        sessionId: String(s['session_id']),
        event: s['event'] as ScheduleEvent,
        missed: s['missed'] as MissedTicks,
        backfillLimit: Number(s['backfill_limit']),
        graceMs: Number(s['grace_ms']),
        paused: s['paused'] === true,
        nextTickAt: date(s['next_tick_at']),
        lastTickAt: s['last_tick_at'] === null ? null : date(s['last_tick_at']),
        firedCount: Number(s['fired_count']),
        createdAt: date(s['created_at']),
        updatedAt: date(s['updated_at']),
      }))
    },

    async pauseSchedule(name) {
      return date(await query(() => `${sql.fn('a2_pause_schedule')}($1::text)`, [name]))
    },

    async resumeSchedule(name) {
      return date(await query(() => `${sql.fn('a2_resume_schedule')}($1::text)`, [name]))
    },

    async fireSchedules() {
      const r = (await query(
        (after) =>
          `(SELECT COALESCE(pg_catalog.json_agg(f), '[]'::json) FROM ${sql.fn('a2_fire_schedules')}() f WHERE ${after})`,
        [],
      )) as Record<string, unknown>[]
      return (typeof r === 'string' ? (JSON.parse(r) as Record<string, unknown>[]) : r).map((f) => ({
        name: String(f['name']),
        tickAt: date(f['tick_at']),
        sessionId: String(f['session_id']),
        index: Number(f['event_index']),
        eventId: String(f['event_id']),
      }))
    },
  }
}
