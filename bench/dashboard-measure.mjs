// bench/dashboard-measure.mjs BASE_URL DATABASE_URL LABEL [REQUESTS]
//
// For each dashboard page: 3 warm-up requests, then pg_stat_statements is
// reset and REQUESTS (default 20) requests are made one after another.
// Prints one JSON line per page: the median and p90 request time (ms,
// through HTTP), and per request the shared buffers (hit + read) and the
// executor time of every statement the dashboard sent (pg_stat_statements,
// track = top: a function's inner statements count in its caller's row).
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { dirname, join } from 'node:path'

const require = createRequire(join(dirname(fileURLToPath(import.meta.url)), '..', 'dashboard', 'package.json'))
const pg = require('pg')

const [base, databaseUrl, label, n = '20'] = process.argv.slice(2)
const requests = Number(n)
const PAGES = [
  ['overview', '/'],
  ['sessions', '/sessions'],
  ['sessions, prefix', '/sessions?prefix=m:77'],
  ['sessions, state=dead', '/sessions?state=dead'],
  ['a session (100 events)', '/session?id=view:1'],
  ['an event', '/event?session=view:1&index=50'],
  ['dead letters', '/failures'],
  ['dead letters, one error', '/failures?error=card%20declined'],
  ['/metrics', '/metrics'],
]

const c = new pg.Client({ connectionString: databaseUrl })
await c.connect()
const stats = async () =>
  (
    await c.query(
      `SELECT COALESCE(sum(shared_blks_hit + shared_blks_read), 0)::float8 AS blks, COALESCE(sum(calls), 0)::float8 AS calls,
              COALESCE(sum(total_exec_time), 0)::float8 AS exec_ms
         FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid
        WHERE s.dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND r.rolname = 'a2_dash_bench'`,
    )
  ).rows[0]
for (const [name, path] of PAGES) {
  for (let i = 0; i < 3; i++) {
    const r = await fetch(base + path)
    if (r.status !== 200) throw new Error(`${path}: ${r.status} ${await r.text()}`)
    await r.arrayBuffer()
  }
  await c.query('SELECT pg_stat_statements_reset()')
  const times = []
  for (let i = 0; i < requests; i++) {
    const t0 = performance.now()
    const r = await fetch(base + path)
    await r.arrayBuffer()
    times.push(performance.now() - t0)
  }
  const s = await stats()
  times.sort((a, b) => a - b)
  console.log(
    JSON.stringify({
      label,
      page: name,
      path,
      median_ms: +times[Math.floor(times.length / 2)].toFixed(2),
      p90_ms: +times[Math.floor(times.length * 0.9)].toFixed(2),
      buffers_per_request: +(s.blks / requests).toFixed(1),
      statements_per_request: +(s.calls / requests).toFixed(1),
      sql_ms_per_request: +(s.exec_ms / requests).toFixed(2),
    }),
  )
}
await c.end()
