// One benchmark point: N clients, each on its own connection and its own
// session, running append(1 event) -> claim -> complete(1 settled child)
// cycles for T seconds.
//
//   node bench/node/cycle.mjs a2|a2q|b3 CLIENTS SECONDS PREFIX URL
//
// a2: the cycle through clients/node (3 statements, 3 round trips).
// a2q: the same on connections with a2.notify = off (no NOTIFY at commit),
//     for reference: PostgreSQL serializes notifying commits.
// b3: the statements store-postgres 0.5.0 (../shared/seeds/000_*) sends for
//     the same cycle, written from the seed's SQL and sent through pg one
//     by one: 16 round trips, 3 transactions. Event ids are made in the
//     client (randomUUID), timestamps from Date.now(), as the seed does.
//
// A2_BENCH_PG_OPTIONS (e.g. "-c synchronous_commit=off") is sent as the
// connections' startup options, to both loops alike.
//
// Prints one JSON line: {mode, clients, seconds, cycles, cps}.

import { randomUUID } from 'node:crypto'
import { createRequire } from 'node:module'

import { a2Store } from '../../clients/node/dist/index.js'

const require = createRequire(new URL('../../clients/node/package.json', import.meta.url))
const pg = require('pg')

const [mode, clientsArg, secondsArg, prefix, url] = process.argv.slice(2)
const clients = Number(clientsArg)
const seconds = Number(secondsArg)
if (!['a2', 'a2q', 'b3'].includes(mode) || !(clients >= 1) || !(seconds > 0) || !prefix || !url) {
  console.error('usage: cycle.mjs a2|a2q|b3 CLIENTS SECONDS PREFIX URL')
  process.exit(2)
}

const extra = process.env.A2_BENCH_PG_OPTIONS ?? ''
const optionsFor = (m) => [extra, m === 'a2q' ? '-c a2.notify=off' : ''].filter(Boolean).join(' ')
const withOptions = (config, m) => (optionsFor(m) ? { ...config, options: optionsFor(m) } : config)

// --- a2, through the client ---------------------------------------------

const a2Loop = async (sessionId, deadline) => {
  const pool = new pg.Pool(withOptions({ connectionString: url, max: 1 }, mode))
  const store = a2Store({ client: pool })
  await store.read(sessionId) // connect before the clock starts
  let cycles = 0
  const start = Date.now()
  while (Date.now() < deadline) {
    await store.append(sessionId, [{ type: 'job', payload: { n: 1 } }])
    const claim = await store.claimAvailable({ sessionId, holder: 'bench', ttlMs: 30_000 })
    if (claim.outcome !== 'claimed') throw new Error(`a2: claim ${claim.outcome}`)
    for (const e of claim.events) {
      const r = await store.completeAttempt({
        sessionId,
        index: e.index,
        attempt: e.attemptCount,
        events: [{ id: `${sessionId}/${e.index}/done`, type: 'done', payload: { n: 2 }, settled: true }],
      })
      if (r.outcome !== 'completed') throw new Error(`a2: complete ${r.outcome}`)
    }
    cycles++
  }
  const ms = Date.now() - start
  await store.close()
  return { cycles, ms }
}

// --- B3: the seed's statements ------------------------------------------

const INSERT = `insert into a2_events
   (session_id, idx, event_type, payload, event_id, created_at,
    cause, lane, lane_ready, processed_at)
 values (
   $1, $2, $3, $4::jsonb, $5, $6, $7::jsonb, $8,
   $8::text is null or not exists (
     select 1 from a2_events
      where session_id = $1 and lane = $8 and processed_at is null
   ),
   $9
 )`

const b3Loop = async (sessionId, deadline) => {
  const c = new pg.Client(withOptions({ connectionString: url }, mode))
  await c.connect()
  const q = (text, values) => c.query(text, values)
  let cycles = 0
  const start = Date.now()
  while (Date.now() < deadline) {
    // append(sessionId, [{type, payload}]): 5 round trips
    await q('begin')
    await q('select pg_advisory_xact_lock(hashtext($1))', [sessionId])
    const { rows: maxRows } = await q(
      `select coalesce(max(idx), 0) as max,
              exists(
                select 1 from a2_events pending
                where pending.session_id = $1
                  and pending.processed_at is null
              ) as session_has_pending
         from a2_events
        where session_id = $1`,
      [sessionId],
    )
    let now = Date.now()
    await q(INSERT, [sessionId, Number(maxRows[0].max) + 1, 'job', JSON.stringify({ n: 1 }), randomUUID(), now, null, null, null])
    await q('commit')

    // claimAvailable: 3 round trips (the busy/settled query only runs when nothing was claimed)
    await q('begin')
    now = Date.now()
    const { rows: claimed } = await q(
      `with eligible as materialized (
         select event.idx
           from a2_events event
          where event.session_id = $1
            and event.processed_at is null
            and event.failed_at is null
            and event.lane_ready
            and (event.claim_expires_at is null or event.claim_expires_at <= $2)
            and not (event.idx = any($5::bigint[]))
          for update of event
       )
       update a2_events claimed set
         attempt_count = claimed.attempt_count + 1,
         first_claimed_at = coalesce(claimed.first_claimed_at, $2),
         last_claimed_at = $2,
         claim_holder = $3,
         claim_expires_at = $4
       from eligible
       where claimed.session_id = $1 and claimed.idx = eligible.idx
       returning claimed.*`,
      [sessionId, now, 'bench', now + 30_000, []],
    )
    await q('commit')
    if (claimed.length === 0) throw new Error('b3: nothing claimed')

    // completeAttempt(1 settled child): 8 round trips (no lane: no promotion)
    for (const e of claimed) {
      const index = Number(e.idx)
      const attempt = Number(e.attempt_count)
      const ids = [`${sessionId}/${index}/done`]
      await q('begin')
      const { rows: parentRows } = await q(
        `select * from a2_events
          where session_id = $1 and idx = $2
          for update`,
        [sessionId, index],
      )
      if (parentRows.length !== 1 || parentRows[0].processed_at !== null) throw new Error('b3: bad parent')
      await q('select pg_advisory_xact_lock(hashtext($1))', [sessionId])
      const { rows: existing } = await q('select event_id from a2_events where event_id = any($1::text[])', [ids])
      if (existing.length > 0) throw new Error('b3: id exists')
      const { rows: m } = await q('select coalesce(max(idx), 0) as max from a2_events where session_id = $1', [sessionId])
      now = Date.now()
      await q(`${INSERT} returning *`, [
        sessionId,
        Number(m[0].max) + 1,
        'done',
        JSON.stringify({ n: 2 }),
        ids[0],
        now,
        JSON.stringify({ index, attempt }),
        null,
        now,
      ])
      await q(
        `update a2_events set
           processed_at = $1,
           processed_by_attempt = $2,
           returned_event_ids = $5::jsonb,
           lane_ready = false,
           claim_holder = null,
           claim_expires_at = null
         where session_id = $3 and idx = $4`,
        [now, attempt, sessionId, index, JSON.stringify(ids)],
      )
      await q('commit')
    }
    cycles++
  }
  const ms = Date.now() - start
  await c.end()
  return { cycles, ms }
}

const loop = mode === 'b3' ? b3Loop : a2Loop
const deadline = Date.now() + seconds * 1000
const results = await Promise.all(
  Array.from({ length: clients }, (_, i) => loop(`${prefix}-${i}`, deadline)),
)
const cycles = results.reduce((s, r) => s + r.cycles, 0)
const ms = Math.max(...results.map((r) => r.ms))
console.log(JSON.stringify({ mode, clients, seconds: ms / 1000, cycles, cps: Math.round((cycles * 1000) / ms) }))
