export { inBatches } from './batches.js';
export { type MigrateOptions, type MigrationLockWait, migrate } from './migrate.js';
export {
  type AlongStatement,
  EventDeadLettered,
  EventTooLarge,
  maxEventBytes,
  OutboxRelay,
  type OutboxRelayOptions,
  type PreparedEvent,
  prepareEvent,
  type RelayLogger,
  writeEvent,
  writeEvents,
  writeEventsIfChanged,
} from './outbox.js';
export {
  assertIdentifier,
  createPool,
  isReachable,
  type Pool,
  type PoolClient,
  type PoolOptions,
  type Queryable,
} from './pool.js';
export { isStorableText, storableText, storableUtf8 } from './storable-text.js';
export { withKeyLock, withTransaction } from './transaction.js';
export { firstOfEach, TurnBatch, type TurnBatchOptions } from './turn-batch.js';
