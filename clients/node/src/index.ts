/**
 * a2-client: the A2Store of experimental-a2 over the a2 PostgreSQL
 * extension. `a2Store({ connectionString })` replaces store-postgres's
 * `postgres({ connectionString })`.
 */

export {
  a2Store,
  type A2PostgresStore,
  type A2StoreExtras,
  type A2StoreOptions,
  type A2StrictStore,
  type A2Transaction,
} from './store.js'
export { A2Error, type A2ErrorCode } from './errors.js'
export { backoff, type BackoffOptions, type BackoffPolicy } from './backoff.js'
export { timeOrderedIds, uuidv7 } from './ids.js'
export type { PostgresClient, PostgresConnection, PostgresQueryResult } from './client.js'
export type { A2Node, NodeClientConfig, NodeConnection } from './nodes.js'
export type { A2ContractOperations, A2Operations, SupersededForm } from './operations.js'
export type * from './types.js'
export type {
  FiredTick,
  MissedTicks,
  ScheduleEvent,
  ScheduleInfo,
  ScheduleOperations,
  ScheduleOptions,
} from './schedules.js'
