/**
 * HTTP tests against a real database: pages, /metrics against a2_metrics(),
 * privileges (read-only refusal), CSRF, auth, flags, actions and the
 * feature-detected 0.4.0 pages, and the whole thing through a
 * transaction-mode pgbouncer when A2_PGBOUNCER_URL names one.
 */

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import type pg from 'pg'
import { Agent, dropDatabase, freshDatabase, MONITOR, pooledUrlFor, startDashboard, urlFor, WORKER } from './fixtures.js'
import { parsePrometheus, valueOf } from './prom.js'
import { QUEUE_STATES } from '../src/metrics.js'
import type { Dashboard } from '../src/server.js'

const DB = 'a2_dash_http'
let c: pg.Client
const running: Dashboard[] = []

const start = async (...args: Parameters<typeof startDashboard>) => {
  const r = await startDashboard(...args)
  running.push(r.d)
  return r
}

const deadCount = async (): Promise<number> => Number((await c.query('SELECT dead_letters FROM a2_metrics()')).rows[0].dead_letters)
const deadOf = async (s: string): Promise<number[]> =>
  (await c.query('SELECT idx FROM a2_events WHERE session_id = $1 AND failed_at IS NOT NULL ORDER BY idx', [s])).rows.map((r) => Number(r.idx))

before(async () => {
  c = await freshDatabase(DB)
})

after(async () => {
  for (const d of running) await d.close()
  await c.end()
  await dropDatabase(DB)
})

test('every page answers 200 with its content, and bad input is a 4xx, never SQL', async () => {
  const { base } = await start(urlFor(DB))
  const a = new Agent(base)
  const overview = await a.req('/')
  assert.equal(overview.status, 200)
  assert.match(overview.text, /id="m-dead">20</)
  assert.match(overview.text, /notifier-mode">notifier</)
  assert.match(overview.headers.get('content-security-policy') ?? '', /script-src 'self'/)
  const sessions = await a.req('/sessions?prefix=shop-00')
  assert.equal((sessions.text.match(/class="session-link"/g) ?? []).length, 9)
  const dead = await a.req('/sessions?state=dead')
  assert.ok((dead.text.match(/class="session-link"/g) ?? []).length === 10, 'ten seeded sessions have dead letters')
  const finished = await a.req('/sessions?state=finished&prefix=shop-')
  assert.match(finished.text, /shop-001/)
  assert.doesNotMatch(finished.text, />shop-003</)
  const session = await a.req('/session?id=shop-003')
  assert.equal(session.status, 200)
  assert.match(session.text, /badge dead-lettered/)
  assert.match(session.text, /address not found|card declined|timeout talking/)
  assert.match(session.text, /SKU-3/, 'payloads shown')
  const event = await a.req('/event?session=shop-003&index=1')
  assert.match(event.text, /&quot;sessionId&quot;: &quot;shop-003&quot;/)
  const failures = await a.req('/failures')
  assert.match(failures.text, /timeout talking to the warehouse/)
  assert.equal((failures.text.match(/name="item"/g) ?? []).length, 20)
  const filtered = await a.req('/failures?error=' + encodeURIComponent('card declined'))
  assert.equal((filtered.text.match(/name="item"/g) ?? []).length, 6)
  // hostile input is data: a quote in a prefix finds nothing, fails nothing
  const quote = await a.req(`/sessions?prefix=${encodeURIComponent("x'; DROP TABLE a2_events; --")}`)
  assert.equal(quote.status, 200)
  assert.match(quote.text, /No sessions/)
  assert.equal((await a.req('/session?id=' + encodeURIComponent('<script>x</script>'))).status, 404)
  assert.equal((await a.req('/sessions?state=bogus')).status, 400)
  assert.equal((await a.req('/failures?cursor=nonsense')).status, 400)
  assert.equal((await a.req('/event?session=shop-003&index=-1')).status, 400)
  assert.equal((await a.req('/nope')).status, 404)
  // the 0.4.0 pages are there with their functions...
  assert.match(overview.text, /id="nav-queues"/)
  assert.match(overview.text, /id="nav-schedules"/)
  assert.equal((await a.req('/queues')).status, 200)
  // ...and absent where a function is not the extension's (an older a2):
  // a2_list_queues taken out of the extension for this check, then put back
  await c.query('ALTER EXTENSION a2 DROP FUNCTION a2_list_queues()')
  try {
    const older = new Agent((await start(urlFor(DB))).base)
    assert.equal((await older.req('/queues')).status, 404)
    assert.doesNotMatch((await older.req('/')).text, /nav-queues/)
  } finally {
    await c.query('ALTER EXTENSION a2 ADD FUNCTION a2_list_queues()')
  }
  const history = JSON.parse((await a.req('/api/history')).text)
  assert.ok(Array.isArray(history.samples))
})

test('sessions page through every session with the cursor', async () => {
  await c.query(`SELECT a2_append('page-' || lpad(g::text, 4, '0'), '[{"type": "x", "settled": true}]') FROM generate_series(1, 120) g`)
  const { base } = await start(urlFor(DB))
  const a = new Agent(base)
  let path: string | null = '/sessions?prefix=page-'
  const seen: string[] = []
  while (path) {
    const r = await a.req(path)
    seen.push(...[...r.text.matchAll(/class="session-link" href="[^"]*">([^<]+)</g)].map((m) => m[1]!))
    const next = /id="next-page" href="([^"]+)"/.exec(r.text)
    path = next ? next[1]!.replace(/&amp;/g, '&') : null
  }
  assert.equal(seen.length, 120)
  assert.equal(new Set(seen).size, 120)
  assert.deepEqual(seen, [...seen].sort())
})

test('the "with dead letters" filter pages through every such session once', async () => {
  await c.query(`DO $$
    DECLARE g int;
    BEGIN
      FOR g IN 1..70 LOOP
        PERFORM a2_append('dpage-' || lpad(g::text, 3, '0'), '[{"type": "job"}, {"type": "job"}]');
        PERFORM a2_claim('dpage-' || lpad(g::text, 3, '0'), 'w', 60000);
        PERFORM a2_fail('dpage-' || lpad(g::text, 3, '0'), 1, 1, 'paged', 1);
        PERFORM a2_fail('dpage-' || lpad(g::text, 3, '0'), 2, 1, 'paged', 1);
      END LOOP;
    END $$`)
  const { base } = await start(urlFor(DB))
  const a = new Agent(base)
  let path: string | null = '/sessions?state=dead&prefix=dpage-'
  const seen: string[] = []
  let pages = 0
  while (path && pages < 10) {
    const r = await a.req(path)
    assert.equal(r.status, 200)
    pages++
    seen.push(...[...r.text.matchAll(/class="session-link" href="[^"]*">([^<]+)</g)].map((m) => m[1]!))
    const next = /id="next-page" href="([^"]+)"/.exec(r.text)
    path = next ? next[1]!.replace(/&amp;/g, '&') : null
  }
  assert.equal(path, null, 'the walk ends')
  assert.equal(new Set(seen).size, 70)
  assert.equal(seen.length, 70, 'each session once, although each has two dead letters')
  await c.query("SELECT a2_redrive('dpage-' || lpad(g::text, 3, '0')) FROM generate_series(1, 70) g")
})

test('/metrics is Prometheus text that agrees with a2_metrics()', async () => {
  const { base } = await start(urlFor(DB))
  await c.query("SELECT a2_pause_queue('metrics-idle')")
  const r = await fetch(base + '/metrics')
  assert.equal(r.status, 200)
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/)
  const fams = parsePrometheus(await r.text())
  const m = (await c.query('SELECT * FROM a2_metrics()')).rows[0]
  for (const [col, name] of [
    ['eligible_events', 'a2_eligible_events'], ['leased_events', 'a2_leased_events'], ['dead_letters', 'a2_dead_letters'],
    ['expired_leases', 'a2_expired_leases'], ['lane_waiting_events', 'a2_lane_waiting_events'],
    ['sessions_with_eligible_work', 'a2_sessions_with_eligible_work'], ['scheduled_events', 'a2_scheduled_events'],
  ] as const) {
    assert.equal(valueOf(fams, name), Number(m[col]), `${name} = a2_metrics().${col}`)
  }
  assert.equal(valueOf(fams, 'a2_earliest_due_timestamp_seconds'), (m.earliest_due_at as Date).getTime() / 1000)
  assert.equal(valueOf(fams, 'a2_oldest_eligible_created_timestamp_seconds'), (m.oldest_eligible_created_at as Date).getTime() / 1000)
  assert.ok(Math.abs(valueOf(fams, 'a2_oldest_eligible_age_seconds')! - Number(m.oldest_eligible_age_ms) / 1000) < 5)
  // 0.4.0: each queue's events by state, the paused queues and the keys at a limit
  const queues = m.queues as Record<string, Record<string, number>>
  assert.ok(Object.keys(queues).length > 0, 'the fixtures leave unprocessed events')
  for (const [q, counts] of Object.entries(queues)) {
    for (const [key, state] of Object.entries(QUEUE_STATES)) {
      assert.equal(valueOf(fams, 'a2_queue_events', { queue: q, state }), counts[key], `a2_queue_events{queue=${q},state=${state}}`)
    }
  }
  assert.equal(fams.get('a2_queue_events')?.samples.length, Object.keys(queues).length * 5)
  assert.deepEqual(fams.get('a2_queue_paused')?.samples.map((x) => x.labels.queue), m.paused_queues)
  assert.deepEqual(fams.get('a2_key_at_limit')?.samples.map((x) => x.labels.key), m.keys_at_limit)
  assert.equal(valueOf(fams, 'a2_queue_paused', { queue: 'metrics-idle' }), 1)
  await c.query("SELECT a2_resume_queue('metrics-idle')")
  const n = (await c.query('SELECT * FROM a2_notify_status()')).rows[0]
  assert.equal(valueOf(fams, 'a2_notifier_mode', { mode: n.mode }), 1)
  assert.equal(valueOf(fams, 'a2_notifier_queue_size'), Number(n.queue_size))
  assert.equal(valueOf(fams, 'a2_up'), 1)
})

test('flags: --metrics-only serves no page, --no-metrics no /metrics, --no-payloads hides payloads', async () => {
  const only = await start(urlFor(DB), { pages: false })
  assert.equal((await fetch(only.base + '/')).status, 404)
  assert.equal((await fetch(only.base + '/sessions')).status, 404)
  assert.equal((await fetch(only.base + '/metrics')).status, 200)
  const pages = await start(urlFor(DB), { metrics: false })
  assert.equal((await fetch(pages.base + '/metrics')).status, 404)
  assert.equal((await fetch(pages.base + '/')).status, 200)
  const hidden = await start(urlFor(DB), { payloads: false })
  const a = new Agent(hidden.base)
  const s = await a.req('/session?id=shop-003')
  assert.doesNotMatch(s.text, /SKU-3/)
  const e = await a.req('/event?session=shop-003&index=1')
  assert.doesNotMatch(e.text, /SKU-3/)
  assert.match(e.text, /hidden/)
})

test('a monitor role is read-only: no action shown, 403 on POST, nothing changes', async () => {
  const { base } = await start(urlFor(DB, MONITOR))
  const a = new Agent(base)
  const page = await a.req('/failures')
  assert.equal(page.status, 200)
  assert.match(page.text, /id="mode">read-only</)
  assert.doesNotMatch(page.text, /\/actions\//)
  assert.doesNotMatch((await a.req('/session?id=shop-003')).text, /\/actions\//)
  const csrf = await a.csrf()
  const [s, i] = ['shop-003', (await deadOf('shop-003'))[0]!]
  const before = await deadCount()
  for (const confirmed of ['', 'yes']) {
    const r = await a.req('/actions/redrive', { form: [['csrf', csrf], ['target', 'one'], ['session', s], ['index', String(i)], ['confirmed', confirmed]] })
    assert.equal(r.status, 403)
    assert.match(r.text, /may not run a2_redrive/)
  }
  assert.equal(await deadCount(), before)
  // /metrics works for the monitor (a2_metrics and a2_notify_status are granted)
  const fams = parsePrometheus(await (await fetch(base + '/metrics')).text())
  assert.equal(valueOf(fams, 'a2_dead_letters'), before)
  assert.ok(fams.has('a2_notifier_up'))
})

test('--read-only refuses actions even for a role that may act', async () => {
  const { base } = await start(urlFor(DB, WORKER), { readOnly: true })
  const a = new Agent(base)
  assert.doesNotMatch((await a.req('/failures')).text, /\/actions\//)
  const r = await a.req('/actions/redrive', { form: [['csrf', await a.csrf()], ['target', 'session'], ['session', 'shop-003'], ['confirmed', 'yes']] })
  assert.equal(r.status, 403)
})

test('actions need POST, the CSRF token and the same origin', async () => {
  const { base } = await start(urlFor(DB, WORKER))
  const a = new Agent(base)
  const csrf = await a.csrf()
  const before = await deadCount()
  const form = (token: string): [string, string][] => [['csrf', token], ['target', 'session'], ['session', 'shop-003'], ['confirmed', 'yes']]
  assert.equal((await a.req('/actions/redrive?target=session&session=shop-003&confirmed=yes')).status, 405)
  assert.equal((await a.req('/actions/redrive', { form: form('') })).status, 403)
  assert.equal((await a.req('/actions/redrive', { form: form('x'.repeat(32)) })).status, 403)
  const stranger = new Agent(base)
  assert.equal((await stranger.req('/actions/redrive', { form: form(csrf) })).status, 403, 'the token without its cookie')
  assert.equal((await a.req('/actions/redrive', { form: form(csrf), headers: { origin: 'http://evil.example' } })).status, 403)
  assert.equal(await deadCount(), before)
})

test('a worker role with the extra grant redrives: confirm, act, say what it did', async () => {
  const { base } = await start(urlFor(DB, WORKER))
  const a = new Agent(base)
  const page = await a.req('/failures')
  assert.match(page.text, /id="mode">actions allowed</)
  const csrf = await a.csrf()
  // one event
  const [i] = await deadOf('shop-006')
  const one: [string, string][] = [['csrf', csrf], ['target', 'one'], ['session', 'shop-006'], ['index', String(i)], ['back', '/session?id=shop-006']]
  const ask = await a.req('/actions/redrive', { form: one })
  assert.equal(ask.status, 200)
  assert.match(ask.text, /id="confirm-question">Redrive event #\d+ of session shop-006\?/)
  assert.deepEqual(await deadOf('shop-006'), (await deadOf('shop-006')), 'asking changes nothing')
  assert.ok((await deadOf('shop-006')).includes(i!))
  const done = await a.req('/actions/redrive', { form: [...one, ['confirmed', 'yes']] })
  assert.equal(done.status, 200)
  assert.match(done.text, new RegExp(`Redrove event #${i} of session shop-006\\.`))
  assert.ok(!(await deadOf('shop-006')).includes(i!))
  const again = await a.req('/actions/redrive', { form: [...one, ['confirmed', 'yes']] })
  assert.match(again.text, /already redriven; nothing changed/)
  // a selection
  const sel = [...(await deadOf('shop-009')).map((x) => ['item', JSON.stringify(['shop-009', x])] as [string, string])]
  assert.equal(sel.length, 2)
  const r = await a.req('/actions/redrive', { form: [['csrf', csrf], ['target', 'selected'], ...sel, ['confirmed', 'yes']] })
  assert.match(r.text, /Redrove 2 of 2 selected events\./)
  assert.deepEqual(await deadOf('shop-009'), [])
  // all that match one error
  const err = (await c.query("SELECT last_error FROM a2_events WHERE failed_at IS NOT NULL GROUP BY 1 ORDER BY count(*) DESC LIMIT 1")).rows[0].last_error as string
  const n = Number((await c.query('SELECT count(*) FROM a2_events WHERE failed_at IS NOT NULL AND last_error = $1', [err])).rows[0].count)
  const all = await a.req('/actions/redrive', { form: [['csrf', csrf], ['target', 'matching'], ['error', err], ['confirmed', 'yes']] })
  assert.match(all.text, new RegExp(`Redrove ${n} dead letters? with error`))
  assert.equal(Number((await c.query('SELECT count(*) FROM a2_events WHERE failed_at IS NOT NULL AND last_error = $1', [err])).rows[0].count), 0)
  // a bad request is a 400 and changes nothing
  assert.equal((await a.req('/actions/redrive', { form: [['csrf', csrf], ['target', 'selected'], ['item', '["x", "1; DROP"]'], ['confirmed', 'yes']] })).status, 400)
  assert.equal((await a.req('/actions/redrive', { form: [['csrf', csrf], ['target', 'one'], ['session', 'nope'], ['index', '1'], ['confirmed', 'yes']] })).status, 500)
})

test('token and basic auth', async () => {
  const t = await start(urlFor(DB), { token: 's3cret-token' })
  assert.equal((await fetch(t.base + '/')).status, 401)
  assert.equal((await fetch(t.base + '/metrics')).status, 401)
  assert.equal((await fetch(t.base + '/metrics', { headers: { authorization: 'Bearer wrong' } })).status, 401)
  assert.equal((await fetch(t.base + '/metrics', { headers: { authorization: 'Bearer s3cret-token' } })).status, 200)
  const a = new Agent(t.base)
  assert.equal((await a.req('/login', { form: [['token', 'nope']] })).status, 401)
  assert.equal((await a.req('/login', { form: [['token', 's3cret-token']] })).status, 303)
  assert.equal((await a.req('/')).status, 200, 'the login cookie is enough afterwards')
  const b = await start(urlFor(DB), { basicAuth: 'ops:pw' })
  const r = await fetch(b.base + '/')
  assert.equal(r.status, 401)
  assert.match(r.headers.get('www-authenticate') ?? '', /^Basic/)
  assert.equal((await fetch(b.base + '/', { headers: { authorization: 'Basic ' + Buffer.from('ops:pw').toString('base64') } })).status, 200)
  assert.equal((await fetch(b.base + '/', { headers: { authorization: 'Basic ' + Buffer.from('ops:no').toString('base64') } })).status, 401)
})

test('served under a base path, as behind a reverse proxy', async () => {
  const { base } = await start(urlFor(DB), { basePath: '/a2' })
  const a = new Agent(base)
  const r = await a.req('/sessions')
  assert.equal(r.status, 200)
  assert.match(r.text, /href="\/a2\/session\?id=/)
  assert.match(r.text, /src="\/a2\/static\/app\.js"/)
  assert.equal((await a.req('/static/app.js')).status, 200)
})

test('queues, cancel and schedules pages light up with the 0.4.0 functions', async () => {
  // the extension's own a2_list_queues/a2_pause_queue, a2_cancel and
  // schedule functions, found by the dashboard's pg_proc detection
  await c.query(`
    SELECT a2_append('mail-1', '[{"type": "mail.send", "queue": "emails"}]');
    SELECT a2_schedule('nightly', '0 3 * * *', 'reports', '{"type": "report.nightly"}');
  `)
  try {
    const { base } = await start(urlFor(DB))
    const a = new Agent(base)
    const overview = await a.req('/')
    assert.match(overview.text, /id="nav-queues"/)
    assert.match(overview.text, /id="nav-schedules"/)
    const q = await a.req('/queues')
    assert.equal(q.status, 200)
    assert.match(q.text, /emails/)
    const csrf = await a.csrf()
    const done = await a.req('/actions/queue', { form: [['csrf', csrf], ['queue', 'emails'], ['op', 'pause'], ['confirmed', 'yes']] })
    assert.match(done.text, /Paused queue emails\./)
    assert.equal((await c.query("SELECT paused FROM a2_list_queues() WHERE queue = 'emails'")).rows[0].paused, true)
    assert.match((await a.req('/queues')).text, /Resume/)
    // cancel: a button on a live event of a session's timeline, and the real a2_cancel
    const sp = await a.req('/session?id=shop-004')
    assert.match(sp.text, /action-cancel/)
    const i = /id="event-(\d+)" class="state-pending"/.exec(sp.text)![1]!
    const cancelled = await a.req('/actions/cancel', { form: [['csrf', csrf], ['session', 'shop-004'], ['index', i], ['confirmed', 'yes']] })
    assert.match(cancelled.text, new RegExp(`Cancel of event #${i} of shop-004`))
    assert.equal((await c.query("SELECT cancelled_at IS NOT NULL AS cancelled FROM a2_events WHERE session_id = 'shop-004' AND idx = $1", [i])).rows[0].cancelled, true)
    const s = await a.req('/schedules')
    assert.match(s.text, /nightly/)
    await a.req('/actions/schedule', { form: [['csrf', csrf], ['name', 'nightly'], ['op', 'pause'], ['confirmed', 'yes']] })
    assert.equal((await c.query("SELECT paused FROM a2_list_schedules() WHERE name = 'nightly'")).rows[0].paused, true)
    // the monitor sees the pages but no pause button, and is refused
    const m = await start(urlFor(DB, MONITOR))
    const ma = new Agent(m.base)
    const mq = await ma.req('/queues')
    assert.equal(mq.status, 200)
    assert.doesNotMatch(mq.text, /\/actions\//)
    assert.doesNotMatch((await ma.req('/session?id=shop-004')).text, /action-cancel/)
    assert.equal((await ma.req('/actions/queue', { form: [['csrf', await ma.csrf()], ['queue', 'emails'], ['op', 'resume'], ['confirmed', 'yes']] })).status, 403)
  } finally {
    await c.query(`
      SELECT a2_unschedule('nightly');
      SELECT a2_resume_queue('emails');
      SELECT a2_cancel('mail-1');`)
  }
})

test('through pgbouncer in transaction mode (A2_PGBOUNCER_URL)', async (t) => {
  const pooled = pooledUrlFor(DB, WORKER)
  if (pooled === null) {
    if (process.env.A2_DASHBOARD_REQUIRE_PGBOUNCER === '1') assert.fail('A2_PGBOUNCER_URL is not set')
    t.skip('A2_PGBOUNCER_URL is not set')
    return
  }
  const { base, d } = await start(pooled)
  const a = new Agent(base)
  // Many requests at once over a pool of 2 server connections.
  const pages = ['/', '/sessions', '/sessions?state=dead', '/session?id=shop-003', '/event?session=shop-003&index=1', '/failures', '/metrics', '/api/history']
  const results = await Promise.all([...pages, ...pages, ...pages].map((p) => a.req(p)))
  for (const [k, r] of results.entries()) assert.equal(r.status, 200, `${[...pages, ...pages, ...pages][k]} through pgbouncer`)
  await d.sampler.tick()
  assert.equal(d.sampler.lastError, null)
  // an action: redrive a whole session in one transaction
  await c.query("SELECT a2_append('bouncer-1', '[{\"type\": \"job\"}, {\"type\": \"job\"}]')")
  for (const e of (await c.query("SELECT (x->>'index')::int AS i, (x->>'attemptCount')::int AS n FROM jsonb_array_elements(a2_claim('bouncer-1', 'w', 60000) -> 'events') x")).rows)
    await c.query("SELECT a2_fail('bouncer-1', $1, $2, 'boom', 1)", [e.i, e.n])
  assert.equal((await deadOf('bouncer-1')).length, 2)
  const r = await a.req('/actions/redrive', { form: [['csrf', await a.csrf()], ['target', 'session'], ['session', 'bouncer-1'], ['confirmed', 'yes']] })
  assert.match(r.text, /Redrove 2 events of session bouncer-1\./)
  assert.deepEqual(await deadOf('bouncer-1'), [])
})
