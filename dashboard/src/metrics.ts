/**
 * /metrics in the Prometheus text exposition format (version 0.0.4), from
 * one a2_metrics() row and one a2_notify_status() row, read per scrape.
 */

import type { JsonObject } from './db.js'

type Known = { name: string; type: 'gauge' | 'counter'; help: string; scale?: 'ms' | 'time' }

/** a2_metrics() columns and their metric names (docs/operations.md, "Monitoring"). */
export const METRIC_COLUMNS: Record<string, Known> = {
  sessions_with_eligible_work: { name: 'a2_sessions_with_eligible_work', type: 'gauge', help: 'Sessions with at least one eligible event.' },
  eligible_events: { name: 'a2_eligible_events', type: 'gauge', help: 'Events a claim would take now (backlog), expired leases included.' },
  leased_events: { name: 'a2_leased_events', type: 'gauge', help: 'Events under a lease that has not expired.' },
  expired_leases: { name: 'a2_expired_leases', type: 'gauge', help: 'Eligible events whose lease expired and nobody re-claimed yet.' },
  dead_letters: { name: 'a2_dead_letters', type: 'gauge', help: 'Dead-lettered events.' },
  lane_waiting_events: { name: 'a2_lane_waiting_events', type: 'gauge', help: 'Unprocessed events waiting behind an earlier event of their lane.' },
  oldest_eligible_created_at: { name: 'a2_oldest_eligible_created_timestamp_seconds', type: 'gauge', help: 'createdAt of the oldest eligible event, Unix seconds (absent: none).', scale: 'time' },
  oldest_eligible_age_ms: { name: 'a2_oldest_eligible_age_seconds', type: 'gauge', help: 'Claim lag: store clock minus createdAt of the oldest eligible event, seconds (0: none).', scale: 'ms' },
  events_estimate: { name: 'a2_events_estimate', type: 'gauge', help: 'Live rows of a2_events (statistics estimate).' },
  dead_rows_estimate: { name: 'a2_dead_rows_estimate', type: 'gauge', help: 'Dead row versions of a2_events (statistics estimate).' },
  events_inserted_estimate: { name: 'a2_events_inserted_estimate_total', type: 'counter', help: 'Rows inserted into a2_events since the statistics were reset (estimate; use rate()).' },
  measured_at: { name: 'a2_measured_timestamp_seconds', type: 'gauge', help: 'The store clock when the gauges were read, Unix seconds.', scale: 'time' },
  scheduled_events: { name: 'a2_scheduled_events', type: 'gauge', help: 'Unprocessed, live events whose notBefore is still in the future.' },
  earliest_due_at: { name: 'a2_earliest_due_timestamp_seconds', type: 'gauge', help: 'The earliest notBefore of the scheduled events, Unix seconds (absent: none).', scale: 'time' },
}

/** a2_metrics().queues: each queue's counts by state (0.4.0), and the label value of each. */
export const QUEUE_STATES: Record<string, string> = {
  eligible: 'eligible', leased: 'leased', scheduled: 'scheduled', laneWaiting: 'lane_waiting', deadLetters: 'dead_letters',
}

/** a2_notify_status() columns. */
export const NOTIFY_COLUMNS: Record<string, Known> = {
  queue_size: { name: 'a2_notifier_queue_size', type: 'gauge', help: 'Slots in the notifier\'s shared queue (a2.notify_queue_size).' },
  queue_depth: { name: 'a2_notifier_queue_depth', type: 'gauge', help: 'Entries in the notifier\'s queue now.' },
  waiting: { name: 'a2_notifier_waiting', type: 'gauge', help: 'Queue entries of transactions still running or prepared.' },
  recorded: { name: 'a2_notifier_recorded_total', type: 'counter', help: 'Queue entries recorded since the server started.' },
  announced: { name: 'a2_notifier_announced_total', type: 'counter', help: 'NOTIFYs the notifier sent since the server started.' },
  coalesced: { name: 'a2_notifier_coalesced_total', type: 'counter', help: 'Entries merged into a later one of the same session.' },
  fallbacks: { name: 'a2_notifier_fallbacks_total', type: 'counter', help: 'Transactions that found the queue full and sent NOTIFY themselves.' },
  dropped: { name: 'a2_notifier_dropped_total', type: 'counter', help: 'Entries of transactions that aborted after recording.' },
}

const NOTIFY_MODES = ['notifier', 'in-transaction', 'off']

const fmt = (n: number): string => (Number.isFinite(n) ? String(n) : n > 0 ? '+Inf' : n < 0 ? '-Inf' : 'NaN')
const labelValue = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"')
const helpText = (v: string): string => v.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')

/** The value of one column as a Prometheus sample, or null when absent/NULL/not numeric. */
export function sampleValue(value: unknown, scale?: 'ms' | 'time'): number | null {
  if (value === null || value === undefined) return null
  if (scale === 'time') {
    const t = typeof value === 'string' ? Date.parse(value) : NaN
    return Number.isNaN(t) ? null : t / 1000
  }
  const n = typeof value === 'number' ? value : typeof value === 'string' && value.trim() !== '' ? Number(value) : NaN
  if (Number.isNaN(n)) return null
  return scale === 'ms' ? n / 1000 : n
}

export function renderMetrics(metrics: JsonObject | null, notify: JsonObject | null, extra: { up: boolean }): string {
  const out: string[] = []
  const emit = (name: string, type: string, help: string, samples: [string, number][]): void => {
    out.push(`# HELP ${name} ${helpText(help)}`, `# TYPE ${name} ${type}`)
    for (const [labels, v] of samples) out.push(`${name}${labels} ${fmt(v)}`)
  }
  emit('a2_up', 'gauge', 'Whether the dashboard could read a2_metrics() for this scrape.', [['', extra.up ? 1 : 0]])
  if (metrics) {
    for (const [col, value] of Object.entries(metrics)) {
      const known = METRIC_COLUMNS[col]
      if (col === 'paused_queues' || col === 'keys_at_limit') {
        // 0.4.0's dispatch controls: one sample of 1 per queue or key (none: no sample)
        const [name, label, help] = col === 'paused_queues'
          ? ['a2_queue_paused', 'queue', 'A queue that is paused (a2_metrics().paused_queues): 1 per paused queue.']
          : ['a2_key_at_limit', 'key', 'A concurrency key at its concurrency or rate limit now (a2_metrics().keys_at_limit): 1 per key.']
        const names = Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []
        emit(name, 'gauge', help, names.map((n) => [`{${label}="${labelValue(n)}"}`, 1]))
      } else if (col === 'queues') {
        // per queue with unprocessed events, its events by state; they sum to the whole-store gauges
        const queues = value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {}
        const samples: [string, number][] = []
        for (const q of Object.keys(queues).sort()) {
          const counts = queues[q] !== null && typeof queues[q] === 'object' ? (queues[q] as Record<string, unknown>) : {}
          for (const [key, state] of Object.entries(QUEUE_STATES)) {
            const v = sampleValue(counts[key])
            if (v !== null) samples.push([`{queue="${labelValue(q)}",state="${state}"}`, v])
          }
        }
        emit('a2_queue_events', 'gauge', 'Unprocessed events per queue and state (a2_metrics().queues): eligible, leased, scheduled, lane_waiting, dead_letters.', samples)
      } else if (known) {
        const v = sampleValue(value, known.scale)
        // A NULL age means no eligible work: a lag of 0 keeps alerts simple.
        if (v === null && known.scale === 'ms') emit(known.name, known.type, known.help, [['', 0]])
        else if (v !== null) emit(known.name, known.type, known.help, [['', v]])
        else emit(known.name, known.type, known.help, [])
      } else if (/^[a-z_][a-z0-9_]*$/.test(col)) {
        // A column of a newer a2 (e.g. 0.4.0's cancelled events): a gauge of the same name.
        const v = sampleValue(value, typeof value === 'string' && /^\d{4}-\d\d-\d\dT/.test(value) ? 'time' : undefined)
        if (v !== null) emit(`a2_${col}`, 'gauge', `a2_metrics() column ${col}.`, [['', v]])
      }
    }
  }
  if (notify) {
    const mode = typeof notify.mode === 'string' ? notify.mode : ''
    emit('a2_notifier_mode', 'gauge', 'How announcements are sent (a2_notify_status().mode): 1 for the current mode.',
      [...new Set([...NOTIFY_MODES, mode].filter((m) => m !== ''))].map((m) => [`{mode="${labelValue(m)}"}`, m === mode ? 1 : 0]))
    emit('a2_notifier_up', 'gauge', 'Whether the background notifier process is running (a2_notify_status().notifier_pid is set).',
      [['', notify.notifier_pid === null || notify.notifier_pid === undefined ? 0 : 1]])
    for (const [col, known] of Object.entries(NOTIFY_COLUMNS)) {
      const v = sampleValue(notify[col])
      emit(known.name, known.type, known.help, v === null ? [] : [['', v]])
    }
  }
  return out.join('\n') + '\n'
}

export type Sample = {
  /** ms since epoch, the dashboard's clock */
  t: number
  eligible: number
  leased: number
  scheduled: number
  dead: number
  laneWaiting: number
  cancelled: number | null
  lagSeconds: number
  appendsPerSecond: number | null
  finishedPerSecond: number | null
  inserted: number | null
}

const num = (v: unknown): number => sampleValue(v) ?? 0

/** Unfinished events: what is still to be done (the backlog in the wide sense). */
const unfinished = (m: JsonObject): number =>
  num(m.eligible_events) + num(m.leased_events) - num(m.expired_leases) + num(m.lane_waiting_events) + num(m.scheduled_events)

/**
 * One chart point from a metrics row and the previous point. a2 keeps no
 * completion counter, so "finished per second" is derived: appended minus
 * the growth of unfinished work (completions, dead-letterings and
 * cancellations together, plus settled appends); it is an estimate, as
 * the insert counter is.
 */
export function toSample(m: JsonObject, t: number, prev: { sample: Sample; unfinished: number } | null): { sample: Sample; unfinished: number } {
  const inserted = sampleValue(m.events_inserted_estimate)
  const u = unfinished(m)
  let appendsPerSecond: number | null = null
  let finishedPerSecond: number | null = null
  if (prev && inserted !== null && prev.sample.inserted !== null && t > prev.sample.t) {
    const dt = (t - prev.sample.t) / 1000
    const appended = Math.max(0, inserted - prev.sample.inserted)
    appendsPerSecond = appended / dt
    finishedPerSecond = Math.max(0, appended - (u - prev.unfinished)) / dt
  }
  return {
    unfinished: u,
    sample: {
      t,
      eligible: num(m.eligible_events),
      leased: num(m.leased_events),
      scheduled: num(m.scheduled_events),
      dead: num(m.dead_letters),
      laneWaiting: num(m.lane_waiting_events),
      cancelled: m.cancelled_events === undefined ? null : num(m.cancelled_events),
      lagSeconds: (sampleValue(m.oldest_eligible_age_ms) ?? 0) / 1000,
      appendsPerSecond,
      finishedPerSecond,
      inserted,
    },
  }
}

/** Keeps the last hour of samples; polls a2_metrics() and tells listeners. */
export class Sampler {
  readonly samples: Sample[] = []
  latest: JsonObject | null = null
  lastError: string | null = null
  #prev: { sample: Sample; unfinished: number } | null = null
  #timer: NodeJS.Timeout | null = null
  #listeners = new Set<(s: Sample) => void>()
  #running = false

  constructor(
    private readonly read: () => Promise<JsonObject>,
    private readonly intervalMs: number,
    private readonly windowMs = 3600_000,
  ) {}

  start(): void {
    if (this.#timer) return
    void this.tick()
    this.#timer = setInterval(() => void this.tick(), this.intervalMs)
    this.#timer.unref()
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer)
    this.#timer = null
  }

  subscribe(fn: (s: Sample) => void): () => void {
    this.#listeners.add(fn)
    return () => this.#listeners.delete(fn)
  }

  async tick(): Promise<void> {
    if (this.#running) return
    this.#running = true
    try {
      const m = await this.read()
      const now = Date.now()
      const next = toSample(m, now, this.#prev)
      this.#prev = next
      this.latest = m
      this.lastError = null
      this.samples.push(next.sample)
      while (this.samples.length > 0 && this.samples[0]!.t < now - this.windowMs) this.samples.shift()
      for (const fn of this.#listeners) fn(next.sample)
    } catch (err) {
      this.lastError = err instanceof Error ? err.message : String(err)
    } finally {
      this.#running = false
    }
  }
}
