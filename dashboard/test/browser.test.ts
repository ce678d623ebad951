/**
 * The dashboard in a real browser: Debian's chromium driven by
 * playwright-core. Each page loads without console errors; navigation
 * overview → sessions → a session → an event; a redrive clicked in the
 * page changes the database and the page shows it; a read-only role sees
 * no action and gets 403 when it posts anyway; the live chart moves when
 * events are appended. Screenshots of each page go to
 * dashboard/screenshots/ (git-ignored) for review.
 *
 * The browser is A2_CHROMIUM, else /usr/bin/chromium; without one the
 * file skips (the suite installs it, test/suites/89-dashboard.sh).
 */

import { test, before, after } from 'node:test'
import assert from 'node:assert/strict'
import { existsSync, mkdirSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'
import type pg from 'pg'
import { chromium, type Browser, type Page } from 'playwright-core'
import { dropDatabase, freshDatabase, MONITOR, startDashboard, urlFor, WORKER } from './fixtures.js'
import type { Dashboard } from '../src/server.js'

const DB = 'a2_dash_browser'
const SHOTS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'screenshots')
const executablePath = process.env.A2_CHROMIUM ?? '/usr/bin/chromium'
const haveBrowser = existsSync(executablePath)

let c: pg.Client
let browser: Browser
let worker: { d: Dashboard; base: string }
let monitor: { d: Dashboard; base: string }

/** A page that records console errors and uncaught exceptions. */
async function open(): Promise<{ page: Page; errors: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1360, height: 900 } })
  const page = await context.newPage()
  const errors: string[] = []
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`${page.url()}: ${m.text()}`)
  })
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`))
  page.on('dialog', (d) => void d.accept())
  return { page, errors }
}

const shot = (page: Page, name: string) => page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })

before(async () => {
  if (!haveBrowser) return
  mkdirSync(SHOTS, { recursive: true })
  c = await freshDatabase(DB)
  browser = await chromium.launch({ executablePath, args: ['--no-sandbox', '--disable-dev-shm-usage'] })
  worker = await startDashboard(urlFor(DB, WORKER), { pollMs: 250 })
  monitor = await startDashboard(urlFor(DB, MONITOR), { pollMs: 250 })
})

after(async () => {
  if (!haveBrowser) return
  await browser?.close()
  await worker?.d.close()
  await monitor?.d.close()
  await c?.end()
  await dropDatabase(DB)
})

test('every page loads without console errors; overview → sessions → a session → an event', { skip: !haveBrowser && `no chromium at ${executablePath}` }, async () => {
  const { page, errors } = await open()
  await page.goto(worker.base + '/')
  await page.waitForSelector('#live-status:text("live")')
  assert.equal(await page.textContent('#m-dead'), '20')
  await shot(page, 'overview')
  await page.click('#nav-sessions')
  await page.waitForURL(/\/sessions/)
  await page.fill('#prefix', 'shop-00')
  await page.selectOption('#state', 'dead')
  await page.click('#session-search button')
  await page.waitForURL(/prefix=shop-00/)
  const ids = await page.$$eval('a.session-link', (as) => as.map((a) => a.textContent))
  assert.deepEqual([...ids].sort(), ['shop-003', 'shop-006', 'shop-009'])
  await shot(page, 'sessions')
  await page.click('a.session-link:text("shop-003")')
  await page.waitForSelector('#timeline')
  assert.equal(await page.textContent('#session-id'), 'shop-003')
  assert.ok((await page.$$('#timeline .badge.dead-lettered')).length > 0)
  await page.click('#timeline details summary')
  assert.match((await page.textContent('#timeline pre.json')) ?? '', /"sku": "SKU-3"/)
  await shot(page, 'session')
  await page.click('a.event-link:text("#1")')
  await page.waitForSelector('#event-json')
  assert.match((await page.textContent('#event-json')) ?? '', /"sessionId": "shop-003"/)
  await shot(page, 'event')
  await page.click('#back-to-session')
  await page.waitForSelector('#timeline')
  await page.click('#nav-failures')
  await page.waitForSelector('#groups')
  await shot(page, 'failures')
  await page.click('a.group-link:text("card declined")')
  await page.waitForSelector('#error-filter')
  assert.equal((await page.$$('#dead-letters tbody tr')).length, 6)
  assert.deepEqual(errors, [])
  await page.context().close()
})

test('a redrive clicked in the page changes the database and the page shows it', { skip: !haveBrowser && `no chromium at ${executablePath}` }, async () => {
  const { page, errors } = await open()
  const dead = async (s: string) => (await c.query('SELECT idx FROM a2_events WHERE session_id = $1 AND failed_at IS NOT NULL ORDER BY idx', [s])).rows.map((r) => Number(r.idx))
  const [first, second] = await dead('shop-018')
  assert.ok(first !== undefined && second !== undefined)
  // one event, from its session's timeline
  await page.goto(`${worker.base}/session?id=shop-018`)
  await page.click(`#event-${first} form.action-redrive button`)
  await page.waitForSelector('#confirm-question')
  assert.match((await page.textContent('#confirm-question')) ?? '', new RegExp(`Redrive event #${first} of session shop-018`))
  assert.deepEqual(await dead('shop-018'), [first, second], 'nothing happens before the confirmation')
  await shot(page, 'confirm')
  await page.click('#confirm')
  await page.waitForSelector('#result')
  assert.equal(await page.textContent('#result'), `Redrove event #${first} of session shop-018.`)
  await shot(page, 'result')
  assert.deepEqual(await dead('shop-018'), [second])
  await page.click('#back')
  await page.waitForSelector('#timeline')
  assert.equal(await page.textContent(`#event-${first} .badge`), 'pending')
  assert.equal(await page.textContent(`#event-${second} .badge`), 'dead-lettered')
  // a selection on the dead-letters page
  await page.goto(`${worker.base}/failures`)
  await page.check(`#dead-letters input[value='${JSON.stringify(['shop-018', second])}']`)
  await page.click('#redrive-selected')
  await page.waitForSelector('#confirm-question')
  await page.click('#confirm')
  await page.waitForSelector('#result')
  assert.equal(await page.textContent('#result'), 'Redrove 1 of 1 selected event.')
  assert.deepEqual(await dead('shop-018'), [])
  await page.goto(`${worker.base}/failures`)
  assert.equal(await page.$(`#dead-letters input[value='${JSON.stringify(['shop-018', second])}']`), null)
  assert.deepEqual(errors, [])
  await page.context().close()
})

test('a read-only role sees no action and gets 403 when it posts anyway', { skip: !haveBrowser && `no chromium at ${executablePath}` }, async () => {
  const { page, errors } = await open()
  for (const path of ['/', '/sessions', '/session?id=shop-015', '/failures']) {
    await page.goto(monitor.base + path)
    assert.equal(await page.textContent('#mode'), 'read-only')
    assert.equal((await page.$$('form[method=post]')).length, 0, `${path}: no action form`)
    assert.equal((await page.$$('button:text("Redrive")')).length, 0, `${path}: no redrive button`)
  }
  await shot(page, 'failures-read-only')
  const before = (await c.query('SELECT count(*) FROM a2_events WHERE failed_at IS NOT NULL')).rows[0].count
  // the CSRF cookie is the browser's own; post with it, as a crafted form would
  const csrf = (await page.context().cookies()).find((k) => k.name === 'a2dash_csrf')?.value ?? ''
  assert.ok(csrf.length >= 32)
  const r = await page.request.post(monitor.base + '/actions/redrive', { form: { csrf, target: 'session', session: 'shop-015', confirmed: 'yes' } })
  assert.equal(r.status(), 403)
  assert.match(await r.text(), /may not run a2_redrive/)
  assert.equal((await c.query('SELECT count(*) FROM a2_events WHERE failed_at IS NOT NULL')).rows[0].count, before)
  assert.deepEqual(errors, [])
  await page.context().close()
})

test('the live chart moves when events are appended', { skip: !haveBrowser && `no chromium at ${executablePath}` }, async () => {
  const { page, errors } = await open()
  await page.goto(worker.base + '/')
  await page.waitForFunction(() => Number(document.querySelector('#chart-counts')?.getAttribute('data-points')) >= 2)
  const eligible = async () => Number(/eligible=(\d+)/.exec((await page.getAttribute('#chart-counts', 'data-last')) ?? '')?.[1])
  const points = async () => Number(await page.getAttribute('#chart-counts', 'data-points'))
  const was = await eligible()
  const p0 = await points()
  await c.query(`SELECT a2_append('live-' || g, '[{"type": "job"}, {"type": "job"}]') FROM generate_series(1, 25) g`)
  await page.waitForFunction((w) => /eligible=(\d+)/.exec(document.querySelector('#chart-counts')?.getAttribute('data-last') ?? '')?.[1] === String(w), was + 50, { timeout: 10000 })
  assert.equal(await eligible(), was + 50)
  assert.ok((await points()) > p0, 'new points arrived')
  assert.equal(await page.textContent('#m-backlog'), (was + 50).toLocaleString('en-US'))
  await shot(page, 'overview-live')
  assert.deepEqual(errors, [])
  await page.context().close()
})
