import { test } from 'node:test'
import assert from 'node:assert/strict'
import { h, escapeHtml, qs, Html } from '../src/html.js'
import { renderMetrics, toSample, sampleValue } from '../src/metrics.js'
import { eventState } from '../src/server.js'
import { parsePrometheus, valueOf } from './prom.js'

test('h escapes every value and keeps Html values', () => {
  const evil = `<script>alert("x")</script>&'`
  const out = h`<p title="${evil}">${evil}${new Html('<b>ok</b>')}${[1, h`<i>${'<'}</i>`]}${null}${false}</p>`.value
  assert.equal(out, `<p title="${escapeHtml(evil)}">&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;<b>ok</b>1<i>&lt;</i></p>`)
  assert.ok(!out.includes('<script>'))
})

test('qs encodes values and drops empty ones', () => {
  assert.equal(qs({ id: 'a b&c=d', state: '', cursor: null }), '?id=a+b%26c%3Dd')
  assert.equal(qs({}), '')
})

const metricsRow = {
  sessions_with_eligible_work: 3, eligible_events: 10, leased_events: 2, expired_leases: 1, dead_letters: 4,
  lane_waiting_events: 5, oldest_eligible_created_at: '2026-01-01T00:00:00+00:00', oldest_eligible_age_ms: 1500,
  events_estimate: 100, dead_rows_estimate: 7, events_inserted_estimate: 120, measured_at: '2026-01-01T00:00:01.5+00:00',
  scheduled_events: 6, earliest_due_at: null, cancelled_events: 9,
}
const notifyRow = { mode: 'notifier', notifier_pid: 42, queue_size: 4096, queue_depth: 0, waiting: 0, recorded: 11, announced: 10, coalesced: 1, fallbacks: 0, dropped: 0 }

test('renderMetrics is valid exposition text with every column', () => {
  const fams = parsePrometheus(renderMetrics(metricsRow, notifyRow, { up: true }))
  assert.equal(valueOf(fams, 'a2_up'), 1)
  assert.equal(valueOf(fams, 'a2_eligible_events'), 10)
  assert.equal(valueOf(fams, 'a2_dead_letters'), 4)
  assert.equal(valueOf(fams, 'a2_oldest_eligible_age_seconds'), 1.5)
  assert.equal(valueOf(fams, 'a2_oldest_eligible_created_timestamp_seconds'), Date.UTC(2026, 0, 1) / 1000)
  assert.equal(valueOf(fams, 'a2_measured_timestamp_seconds'), Date.UTC(2026, 0, 1) / 1000 + 1.5)
  assert.equal(fams.get('a2_events_inserted_estimate_total')?.type, 'counter')
  assert.equal(fams.get('a2_earliest_due_timestamp_seconds')?.samples.length, 0, 'a NULL time has no sample')
  assert.equal(valueOf(fams, 'a2_cancelled_events'), 9, 'an unknown (newer) column is a gauge of its own name')
  assert.equal(valueOf(fams, 'a2_notifier_up'), 1)
  assert.equal(valueOf(fams, 'a2_notifier_mode', { mode: 'notifier' }), 1)
  assert.equal(valueOf(fams, 'a2_notifier_mode', { mode: 'off' }), 0)
  assert.equal(valueOf(fams, 'a2_notifier_announced_total'), 10)
  for (const f of fams.values()) {
    assert.ok(f.help && f.help.length > 5, `${f.name} has HELP`)
    assert.ok(f.type, `${f.name} has TYPE`)
    assert.match(f.name, /^a2_/)
  }
})

test('renderMetrics: paused queues, keys at a limit and each queue\'s events as labelled gauges (0.4.0)', () => {
  const row = {
    ...metricsRow, paused_queues: ['email', 'odd "q"'], keys_at_limit: ['tenant-7'],
    queues: { default: { eligible: 7, leased: 2, scheduled: 6, laneWaiting: 5, deadLetters: 3 }, email: { eligible: 3, leased: 0, scheduled: 0, laneWaiting: 0, deadLetters: 1 } },
  }
  const fams = parsePrometheus(renderMetrics(row, notifyRow, { up: true }))
  assert.equal(valueOf(fams, 'a2_queue_paused', { queue: 'email' }), 1)
  assert.equal(valueOf(fams, 'a2_queue_paused', { queue: 'odd "q"' }), 1, 'label values are escaped')
  assert.equal(fams.get('a2_queue_paused')?.samples.length, 2)
  assert.equal(valueOf(fams, 'a2_key_at_limit', { key: 'tenant-7' }), 1)
  assert.equal(valueOf(fams, 'a2_queue_events', { queue: 'email', state: 'eligible' }), 3)
  assert.equal(valueOf(fams, 'a2_queue_events', { queue: 'default', state: 'lane_waiting' }), 5)
  assert.equal(valueOf(fams, 'a2_queue_events', { queue: 'default', state: 'dead_letters' }), 3)
  assert.equal(fams.get('a2_queue_events')?.samples.length, 10)
  // none paused, none at a limit, nothing unprocessed: the families are there, without samples
  const idle = parsePrometheus(renderMetrics({ ...metricsRow, paused_queues: [], keys_at_limit: [], queues: {} }, notifyRow, { up: true }))
  for (const name of ['a2_queue_paused', 'a2_key_at_limit', 'a2_queue_events']) assert.equal(idle.get(name)?.samples.length, 0, name)
})

test('renderMetrics without a metrics row says a2_up 0, and no lag is 0', () => {
  const down = parsePrometheus(renderMetrics(null, null, { up: false }))
  assert.equal(valueOf(down, 'a2_up'), 0)
  const idle = parsePrometheus(renderMetrics({ ...metricsRow, oldest_eligible_age_ms: null }, { ...notifyRow, notifier_pid: null, mode: 'in-transaction' }, { up: true }))
  assert.equal(valueOf(idle, 'a2_oldest_eligible_age_seconds'), 0)
  assert.equal(valueOf(idle, 'a2_notifier_up'), 0)
  assert.equal(valueOf(idle, 'a2_notifier_mode', { mode: 'in-transaction' }), 1)
})

test('the test parser rejects what Prometheus rejects', () => {
  assert.throws(() => parsePrometheus('a 1'), /newline/)
  assert.throws(() => parsePrometheus('a-b 1\n'), /not a sample/)
  assert.throws(() => parsePrometheus('a 1\n# TYPE a gauge\n'), /after its samples/)
  assert.throws(() => parsePrometheus('# TYPE a nonsense\n'), /bad type/)
  assert.throws(() => parsePrometheus('a 1\na 2\n'), /duplicate/)
  assert.throws(() => parsePrometheus('# TYPE a counter\na -1\n'), /negative/)
  assert.throws(() => parsePrometheus('a x\n'), /bad sample value/)
  assert.equal(valueOf(parsePrometheus('a{b="c\\"d"} 2\n'), 'a', { b: 'c"d' }), 2)
})

test('toSample derives rates from the insert counter and the backlog', () => {
  const a = toSample({ ...metricsRow, events_inserted_estimate: 100, eligible_events: 10, leased_events: 0, expired_leases: 0, lane_waiting_events: 0, scheduled_events: 0 }, 1000, null)
  assert.equal(a.sample.appendsPerSecond, null)
  // 2 s later: 20 appended, backlog grew by 4: 16 finished
  const b = toSample({ ...metricsRow, events_inserted_estimate: 120, eligible_events: 14, leased_events: 0, expired_leases: 0, lane_waiting_events: 0, scheduled_events: 0 }, 3000, a)
  assert.equal(b.sample.appendsPerSecond, 10)
  assert.equal(b.sample.finishedPerSecond, 8)
  assert.equal(b.sample.lagSeconds, 1.5)
  assert.equal(sampleValue('12'), 12)
  assert.equal(sampleValue('x'), null)
})

test('eventState', () => {
  const now = Date.parse('2026-01-01T00:00:00Z')
  assert.equal(eventState({ processedAt: 'x', processedByAttempt: 1 }, now), 'completed')
  assert.equal(eventState({ processedAt: 'x', processedByAttempt: null }, now), 'settled')
  assert.equal(eventState({ processedAt: 'x', cancelledAt: 'x' }, now), 'cancelled')
  assert.equal(eventState({ processedAt: null, failedAt: 'x' }, now), 'dead-lettered')
  assert.equal(eventState({ processedAt: null, failedAt: null, claimExpiresAt: '2026-01-01T00:00:01Z' }, now), 'leased')
  assert.equal(eventState({ processedAt: null, failedAt: null, claimExpiresAt: '2025-01-01T00:00:01Z' }, now), 'pending')
  assert.equal(eventState({ processedAt: null, failedAt: null, notBefore: '2026-01-02T00:00:00Z' }, now), 'scheduled')
})
