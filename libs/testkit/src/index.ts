export {
  defaultSearchDirs,
  findBinary,
  installCommands,
  MissingBinaryError,
  requireBinary,
} from './binaries.js';
export type { Infra } from './global-setup.js';
export {
  createDatabase,
  type LocalServer,
  type PostgresOptions,
  type RabbitMQOptions,
  startBroker,
  startNats,
  startNatsWithConfig,
  startPostgres,
  startRabbitMQ,
  startRedis,
  uniquePrefix,
} from './local-servers.js';
export { type MigratedPoolOptions, migratedPool, watchedPool } from './migrated-pool.js';
export { type NameServer, startNameServer, systemResolverStandIn } from './name-servers.js';
export { canConnect, freePort } from './ports.js';
export { type ManagedProcess, runModuleSnippet, startProcess } from './process.js';
export { type WaitOptions, waitFor } from './wait-for.js';
