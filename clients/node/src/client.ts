/**
 * The database handles the store needs, and the statements it sends.
 *
 * A `PostgresClient` is the seed's shape: anything with `query(text,
 * values)` answering `{ rows }`, optionally `connect()` (one connection,
 * for transactions and the stream's LISTEN) and `end()`. A `pg` Pool
 * matches it.
 *
 * Every method is one statement, hence one round trip: `SELECT
 * a2_xxx(...)`. An injected clock rides in the same statement as
 * `set_config('a2.now', <iso>, true)` in a FROM subquery, which PostgreSQL
 * evaluates before the select list (a subquery with a volatile target list
 * is never flattened into its parent). The setting is transaction-local,
 * so outside an explicit transaction it lasts for that one statement and
 * nothing is left on the connection: safe behind a transaction-mode pooler.
 */

import { isoText } from './codec.js'
import type { Clock } from './types.js'

export type PostgresQueryResult = { rows: Record<string, unknown>[] }

/** One checked-out connection, what transactions and LISTEN run on. */
export type PostgresConnection = {
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>
  release(err?: Error | boolean): void
}

/** The minimal client the store needs. A `pg` Pool matches it. */
export type PostgresClient = {
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>
  connect?(): Promise<PostgresConnection>
  end?(): Promise<void>
}

export type Queryable = {
  query(text: string, values?: unknown[]): Promise<PostgresQueryResult>
}

/** A PostgreSQL identifier, double-quoted. */
export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`

/**
 * Builds the statements of one store: function names qualified with the
 * `schema` option when given (else found through search_path).
 */
export class Statements {
  readonly #prefix: string

  constructor(schema: string | undefined) {
    this.#prefix = schema === undefined ? '' : `${quoteIdent(schema)}.`
  }

  /** The qualified name of an a2 function. */
  fn(name: string): string {
    return this.#prefix + name
  }

  /**
   * `SELECT fn(args) AS r`, with the clock's reading appended as the last
   * parameter when there is a clock. `args` are SQL expressions over
   * $1..$n (with their casts).
   */
  call(name: string, args: string[], values: unknown[], clock: Clock | undefined): {
    text: string
    values: unknown[]
  } {
    const select = `SELECT ${this.fn(name)}(${args.join(', ')}) AS r`
    if (clock === undefined) return { text: select, values }
    const now = isoText(clock.now(), 'clock.now()')
    const n = values.length + 1
    return {
      text: `${select} FROM (SELECT pg_catalog.set_config('a2.now', $${n}::text, true)) AS a2_clock`,
      values: [...values, now],
    }
  }
}
