/**
 * The differential run: a seeded random sequence of A2Store calls
 * (appends, caused appends, claims, renewals, completions and failures of
 * current and stale attempts, with the injected clock moving leases on)
 * sent both to the store and to a reference model of the contract, kept
 * here in memory and written from docs/semantics.md ("Work: claims, leases
 * and attempts") and docs/functions.md. Each answer is compared whole:
 * result objects by their exact keys and values (StoredEvents by index and
 * attempt), errors by their code.
 *
 * The default store must agree on every operation. The strict form
 * (`superseded: 'throw'`) must disagree exactly where the contract answers
 * `superseded` for a completion or a failure, and nowhere else: that is the
 * one difference the option buys.
 */

import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'

import { A2Error, a2Store, type A2Store, type StoredEvent } from '../src/index.js'
import { ManualClock, dropDatabase, freshDatabase, pool } from './helpers.js'

const DB = 'a2_node_differential'
const OPERATIONS = 900
const TTL_MS = 1000

/** A small seeded generator (xorshift32), so a failing run can be replayed. */
class Random {
  #state: number
  constructor(seed: number) {
    this.#state = seed >>> 0 || 1
  }
  next(): number {
    let x = this.#state
    x ^= x << 13
    x >>>= 0
    x ^= x >>> 17
    x ^= x << 5
    x >>>= 0
    this.#state = x
    return x / 0x1_0000_0000
  }
  int(n: number): number {
    return Math.floor(this.next() * n)
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!
  }
}

// ---- the reference model -------------------------------------------------

type ModelEvent = {
  index: number
  id: string
  type: string
  processed: boolean
  processedByAttempt: number | null
  returned: { id: string; type: string; settled: boolean }[] | null
  attemptCount: number
  failureCount: number
  lastFailedAttempt: number | null
  deadLettered: boolean
  holder: string | null
  expiresAt: number | null
}

class StaleError extends Error {
  readonly code = 'SUPERSEDED_ATTEMPT'
}

/** One session of the contract, single-node, no lanes or schedules. */
class ModelSession {
  readonly events: ModelEvent[] = []

  #add(id: string, type: string, settled: boolean, byAttempt: number | null): ModelEvent {
    const e: ModelEvent = {
      index: this.events.length + 1,
      id,
      type,
      processed: settled,
      processedByAttempt: settled ? byAttempt : null,
      returned: null,
      attemptCount: 0,
      failureCount: 0,
      lastFailedAttempt: null,
      deadLettered: false,
      holder: null,
      expiresAt: null,
    }
    this.events.push(e)
    return e
  }

  at(index: number): ModelEvent {
    const e = this.events[index - 1]
    if (!e) throw new Error(`model: no event ${index}`)
    return e
  }

  append(batch: { id: string; type: string; cause?: { index: number; attempt: number } }[]): unknown {
    // The attempt fence: the parent's attemptCount must be the cause's
    // attempt and the parent not dead-lettered (processed or not).
    for (const b of batch) {
      if (!b.cause) continue
      const parent = this.at(b.cause.index)
      if (parent.attemptCount !== b.cause.attempt || parent.deadLettered) throw new StaleError()
    }
    const hadPending = this.events.some((e) => !e.processed)
    const added = batch.map((b) => this.#add(b.id, b.type, false, null))
    return { events: added.map((e) => e.index), hasPending: hadPending || added.length > 0 }
  }

  claim(holder: string, now: number): unknown {
    const eligible = this.events.filter(
      (e) => !e.processed && !e.deadLettered && (e.expiresAt === null || e.expiresAt <= now),
    )
    if (eligible.length > 0) {
      for (const e of eligible) {
        e.attemptCount += 1
        e.holder = holder
        e.expiresAt = now + TTL_MS
      }
      return { outcome: 'claimed', events: eligible.map((e) => [e.index, e.attemptCount, holder]) }
    }
    const live = this.events
      .filter((e) => !e.processed && !e.deadLettered && e.expiresAt !== null && e.expiresAt > now)
      .map((e) => e.expiresAt!)
    return live.length > 0 ? { outcome: 'busy', retryAt: Math.min(...live) } : { outcome: 'settled' }
  }

  renew(holder: string, claims: { index: number; attempt: number }[], now: number): unknown {
    const renewed: number[] = []
    const superseded: number[] = []
    for (const c of claims) {
      const e = this.at(c.index)
      if (
        !e.processed && !e.deadLettered && e.attemptCount === c.attempt &&
        e.holder === holder && e.expiresAt !== null && e.expiresAt > now
      ) {
        e.expiresAt = now + TTL_MS
        renewed.push(e.index)
      } else if (e.attemptCount > c.attempt) {
        superseded.push(e.index)
      }
    }
    return { renewed: renewed.sort((a, b) => a - b), superseded: superseded.sort((a, b) => a - b) }
  }

  complete(index: number, attempt: number, children: { id: string; type: string; settled: boolean }[]): unknown {
    const e = this.at(index)
    if (e.processed) {
      if (e.processedByAttempt !== attempt) return { outcome: 'superseded' }
      // An exact retry (the run only retries exactly): the stored children.
      const stored = (e.returned ?? []).map((r) => this.events.find((x) => x.id === r.id)!.index)
      return { outcome: 'completed', events: stored }
    }
    if (e.attemptCount !== attempt || e.holder === null || e.deadLettered) return { outcome: 'superseded' }
    const added = children.map((c) => this.#add(c.id, c.type, c.settled, null))
    e.processed = true
    e.processedByAttempt = attempt
    e.returned = children
    e.holder = null
    e.expiresAt = null
    return { outcome: 'completed', events: added.map((x) => x.index) }
  }

  fail(index: number, attempt: number, maxFailures: number): unknown {
    const e = this.at(index)
    if (!e.processed && !e.deadLettered && e.attemptCount === attempt && e.holder !== null) {
      e.failureCount += 1
      e.lastFailedAttempt = attempt
      e.holder = null
      e.expiresAt = null
      if (e.failureCount >= maxFailures) e.deadLettered = true
      return { outcome: e.deadLettered ? 'dead_lettered' : 'failed', failureCount: e.failureCount }
    }
    const outcome =
      e.processed || e.attemptCount !== attempt
        ? 'superseded'
        : e.deadLettered
          ? 'dead_lettered'
          : e.holder === null && e.lastFailedAttempt === attempt
            ? 'failed'
            : 'superseded'
    return { outcome, failureCount: e.failureCount }
  }
}

// ---- the run ----------------------------------------------------------------

type Op = { kind: 'append' | 'caused' | 'claim' | 'renew' | 'complete' | 'fail' | 'advance' }

type Disagreement = { n: number; kind: Op['kind']; store: string; model: string }

/** The store's answer in the model's terms: indexes for events, codes for errors. */
const storeView = (kind: Op['kind'], r: unknown): unknown => {
  const rec = r as Record<string, unknown>
  switch (kind) {
    case 'append':
    case 'caused':
      return { events: (rec['events'] as StoredEvent[]).map((e) => e.index), hasPending: rec['hasPending'] }
    case 'claim':
      if (rec['outcome'] === 'claimed') {
        return {
          outcome: 'claimed',
          events: (rec['events'] as StoredEvent[]).map((e) => [e.index, e.attemptCount, e.claimHolder]),
        }
      }
      if (rec['outcome'] === 'busy') return { outcome: 'busy', retryAt: (rec['retryAt'] as Date).getTime() }
      return r
    case 'complete':
      // A completed result by child indexes; any other answer exactly as given.
      return rec['outcome'] === 'completed'
        ? { outcome: 'completed', events: (rec['events'] as StoredEvent[]).map((e) => e.index) }
        : r
    default:
      return r // renew, fail: compared exactly
  }
}

const errorView = (err: unknown): unknown => {
  if (err instanceof A2Error || err instanceof StaleError) return { error: err.code }
  if (err instanceof TypeError) return { error: 'TypeError' }
  throw err
}

type RunResult = { operations: number; disagreements: Disagreement[]; staleAnswers: number; counts: Record<string, number> }

/**
 * Drives `store` and a fresh model through the same OPERATIONS calls over
 * three sessions named after `prefix`, and compares every answer; then the
 * stored dispatch state of every event against the model's.
 */
const run = async (store: A2Store, clock: ManualClock, prefix: string, seed: number): Promise<RunResult> => {
  const rnd = new Random(seed)
  const sessions = [0, 1, 2].map((i) => ({ id: `${prefix}-${i}`, model: new ModelSession() }))
  const disagreements: Disagreement[] = []
  const counts: Record<string, number> = {}
  let staleAnswers = 0
  let ids = 0
  const fresh = (): string => `${prefix}-e${++ids}`
  // An attempt near the current one: mostly current, often stale, sometimes ahead.
  const attemptFor = (e: ModelEvent): number => {
    const r = rnd.next()
    const a = r < 0.55 ? e.attemptCount : r < 0.9 ? e.attemptCount - 1 : e.attemptCount + 1
    return Math.max(1, a)
  }

  for (let n = 1; n <= OPERATIONS; n++) {
    const s = rnd.pick(sessions)
    const m = s.model
    const r = rnd.next()
    let kind: Op['kind'] =
      r < 0.14 ? 'append' : r < 0.22 ? 'caused' : r < 0.4 ? 'claim' : r < 0.48 ? 'renew' : r < 0.7 ? 'complete' : r < 0.88 ? 'fail' : 'advance'
    if (m.events.length === 0 && kind !== 'advance') kind = 'append'
    counts[kind] = (counts[kind] ?? 0) + 1
    if (kind === 'advance') {
      clock.advance(rnd.pick([100, 400, 700, 1200]))
      continue
    }
    const now = clock.now().getTime()
    let call: () => Promise<unknown>
    let model: () => unknown
    switch (kind) {
      case 'append': {
        const batch = Array.from({ length: 1 + rnd.int(2) }, () => ({ id: fresh(), type: 'job' }))
        call = () => store.append(s.id, batch)
        model = () => m.append(batch)
        break
      }
      case 'caused': {
        const parent = rnd.pick(m.events)
        const batch = [{ id: fresh(), type: 'progress', cause: { index: parent.index, attempt: attemptFor(parent) } }]
        call = () => store.append(s.id, batch)
        model = () => m.append(batch)
        break
      }
      case 'claim': {
        const holder = rnd.pick(['w1', 'w2'])
        call = () => store.claimAvailable({ sessionId: s.id, holder, ttlMs: TTL_MS })
        model = () => m.claim(holder, now)
        break
      }
      case 'renew': {
        const holder = rnd.pick(['w1', 'w2'])
        const picked = [...new Set(Array.from({ length: 1 + rnd.int(3) }, () => rnd.pick(m.events)))]
        const claims = picked.map((e) => ({ index: e.index, attempt: attemptFor(e) }))
        call = () => store.renewClaims({ sessionId: s.id, holder, claims, ttlMs: TTL_MS })
        model = () => m.renew(holder, claims, now)
        break
      }
      case 'complete': {
        const e = rnd.pick(m.events)
        const attempt = attemptFor(e)
        // Retrying a completion of the attempt that completed: the same batch.
        const children =
          e.processed && e.processedByAttempt === attempt && e.returned
            ? e.returned
            : Array.from({ length: rnd.int(3) }, () => ({ id: fresh(), type: 'child', settled: rnd.next() < 0.3 }))
        call = () => store.completeAttempt({ sessionId: s.id, index: e.index, attempt, events: children })
        model = () => m.complete(e.index, attempt, children)
        break
      }
      case 'fail': {
        const e = rnd.pick(m.events)
        const attempt = attemptFor(e)
        const maxFailures = 2 + rnd.int(2)
        call = () => store.failAttempt({ sessionId: s.id, index: e.index, attempt, error: `boom ${n}`, maxFailures })
        model = () => m.fail(e.index, attempt, maxFailures)
        break
      }
      default:
        throw new Error(`unhandled ${kind}`)
    }
    const got = await call().then((v) => storeView(kind, v), errorView)
    let want: unknown
    try {
      want = model()
    } catch (err) {
      want = errorView(err)
    }
    if ((want as { outcome?: unknown }).outcome === 'superseded') staleAnswers += 1
    try {
      assert.deepStrictEqual(got, want)
    } catch {
      disagreements.push({ n, kind, store: JSON.stringify(got), model: JSON.stringify(want) })
    }
  }

  // The dispatch state the calls left, event by event.
  for (const s of sessions) {
    const stored = await store.read(s.id)
    assert.deepStrictEqual(
      stored.map((e) => [e.index, e.id, e.attemptCount, e.failureCount, e.processedAt !== null, e.processedByAttempt, e.failedAt !== null, e.claimHolder]),
      s.model.events.map((e) => [e.index, e.id, e.attemptCount, e.failureCount, e.processed, e.processedByAttempt, e.deadLettered, e.holder]),
      `the stored events of ${s.id} differ from the model's`,
    )
  }
  return { operations: OPERATIONS, disagreements, staleAnswers, counts }
}

const SEED = Number(process.env['A2_DIFFERENTIAL_SEED'] ?? 26)

let p: ReturnType<typeof pool>

before(async () => {
  await freshDatabase(DB)
  p = pool(DB)
})

after(async () => {
  await p.end()
  await dropDatabase(DB)
})

describe(`differential run against the contract's reference model (seed ${SEED}, ${OPERATIONS} operations)`, () => {
  it('the default store agrees on every operation', async (t) => {
    const clock = new ManualClock()
    const store = a2Store({ client: { query: (text, values) => p.query(text, values) }, clock })
    const r = await run(store, clock, 'default', SEED)
    t.diagnostic(`operations ${r.operations}, disagreements ${r.disagreements.length}, superseded answers ${r.staleAnswers}, mix ${JSON.stringify(r.counts)}`)
    // The run must reach the case it is about.
    assert.ok(r.staleAnswers >= 10, `only ${r.staleAnswers} superseded answers: the run no longer exercises stale attempts`)
    assert.deepEqual(r.disagreements.slice(0, 5), [], `${r.disagreements.length} disagreements`)
    assert.equal(r.disagreements.length, 0)
  })

  it('the strict form disagrees exactly where the contract answers superseded', async (t) => {
    const clock = new ManualClock()
    const store = a2Store({ client: { query: (text, values) => p.query(text, values) }, clock, superseded: 'throw' })
    const r = await run(store, clock, 'strict', SEED)
    t.diagnostic(`operations ${r.operations}, disagreements ${r.disagreements.length}, superseded answers ${r.staleAnswers}`)
    assert.equal(r.disagreements.length, r.staleAnswers)
    for (const d of r.disagreements) {
      assert.ok(d.kind === 'complete' || d.kind === 'fail', JSON.stringify(d))
      assert.equal(d.store, JSON.stringify({ error: 'SUPERSEDED_ATTEMPT' }), JSON.stringify(d))
      assert.equal((JSON.parse(d.model) as { outcome: string }).outcome, 'superseded', JSON.stringify(d))
    }
  })
})
