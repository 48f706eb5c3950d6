import type { Bus } from '@inbox/bus';
import { connectBus } from '@inbox/bus';
import { createPool, migrate, OutboxRelay, type Pool } from '@inbox/db';
import { stopTelemetry } from '@inbox/telemetry';
import type { Express } from 'express';
import type { Logger } from 'pino';
import { createHttpApp, finishHttpApp, type ReadinessChecks, type TrustProxy } from './http-app.js';
import { listen, type RunningServer } from './http-server.js';
import { stopOnSignals } from './lifecycle.js';
import { createLogger } from './logger.js';

export interface ServiceDeps {
  pool: Pool;
  bus: Bus;
  logger: Logger;
}

/**
 * The relay of a service's outbox (in its own schema), logging failed passes; start and stop it with the
 * engine. `retentionHours` is the service's OUTBOX_RETENTION_HOURS (the relay's 24-hour default without it).
 */
export function outboxRelay(
  { pool, bus, logger }: ServiceDeps,
  schema: string,
  retentionHours?: number,
): OutboxRelay {
  return new OutboxRelay({
    pool,
    bus,
    schema,
    logger,
    ...(retentionHours === undefined ? {} : { retainPublishedMs: retentionHours * 3_600_000 }),
    onError: (error) => logger.error({ err: error }, 'outbox relay pass failed'),
  });
}

/**
 * What a service is, apart from how it is hosted: it registers its handlers and consumers on start,
 * stops its own loops on stop, and may add HTTP routes. The same engine runs alone (distributed mode)
 * or beside the others in one process (all-in-one mode).
 */
export interface ServiceEngine {
  start(): Promise<void>;
  stop(): Promise<void>;
  routes?(app: Express): void;
  readiness?: ReadinessChecks;
  /** True when the service still serves its routes while its database cannot be reached: not in `/readyz`. */
  readyWithoutDatabase?: boolean;
  /** HTTP body limit for the service's own routes. */
  bodyLimit?: string;
  /** False when the service's routes parse JSON themselves (after authentication). */
  parseJson?: boolean;
  /** When requests' server spans start (`HttpAppOptions.traceFrom`). */
  traceFrom?: 'arrival' | 'admission';
  /** Which peers may name the client (`HttpAppOptions.trustProxy`). */
  trustProxy?: TrustProxy;
}

export interface ServiceDefinition {
  name: string;
  /** The Postgres schema the service owns; also its migrations' target. */
  schema?: string;
  migrationsDir?: string;
  outbox?: boolean;
  create(deps: ServiceDeps): ServiceEngine | Promise<ServiceEngine>;
}

export interface HostSettings {
  databaseUrl?: string;
  /** nats://… or amqp://…: the scheme picks the transport. */
  busUrl: string;
  busPrefix?: string;
  port: number;
  host?: string;
  logLevel?: string;
}

export interface HostedService {
  http: RunningServer;
  engine: ServiceEngine;
  logger: Logger;
  stop(): Promise<void>;
}

export async function prepareSchema(
  pool: Pool,
  definition: ServiceDefinition,
  logger?: Logger,
): Promise<void> {
  if (definition.schema && definition.migrationsDir) {
    await migrate(pool, {
      schema: definition.schema,
      directory: definition.migrationsDir,
      outbox: definition.outbox,
      onWaiting: ({ schema, waitedMs, holder }) =>
        logger?.warn(
          { schema, waitedMs, holder },
          'waiting for another replica to finish migrating the schema',
        ),
      onLockTimeout: ({ schema, migration, attempts }) =>
        logger?.warn(
          { schema, migration, attempts },
          'a migration gave up waiting for a table lock, and tries again',
        ),
    });
  }
}

/** Starts one service as its own process: pool, migrations, bus, engine, HTTP, graceful stop. */
export async function hostService(
  definition: ServiceDefinition,
  settings: HostSettings,
): Promise<HostedService> {
  const logger = createLogger(definition.name, { level: settings.logLevel });
  const pool = createPool({
    url: settings.databaseUrl ?? 'postgres://unused',
    schema: definition.schema ?? 'public',
    applicationName: definition.name,
  });
  await prepareSchema(pool, definition, logger);
  const bus = await connectBus({
    url: settings.busUrl,
    prefix: settings.busPrefix,
    name: definition.name,
    onHandlerError: (error, context) => logger.error({ err: error, ...context }, 'handler failed'),
  });
  const engine = await definition.create({ pool, bus, logger });
  await engine.start();
  const app = createHttpApp({
    logger,
    bodyLimit: engine.bodyLimit,
    parseJson: engine.parseJson,
    traceFrom: engine.traceFrom,
    trustProxy: engine.trustProxy,
    readiness: {
      bus: () => bus.healthy(),
      ...(definition.schema && !engine.readyWithoutDatabase
        ? { database: async () => (await pool.query('select 1')).rowCount === 1 }
        : {}),
      ...engine.readiness,
    },
  });
  engine.routes?.(app);
  finishHttpApp(app, logger);
  const http = await listen(app, settings.port, settings.host);
  logger.info({ port: http.port }, 'started');
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      await http.close();
      // The engine stops inside the drain, after in-flight handlers finished and before the bus
      // closes, so whatever those handlers wrote to the outbox is still published.
      await bus.drain(() => engine.stop());
      await pool.end();
      // Spans still queued for export (the last requests') go out before the process exits.
      await stopTelemetry();
    })();
    return stopping;
  };
  return { http, engine, logger, stop };
}

/** The whole `main.ts` of a service: host it and stop it on SIGTERM. */
export async function runService(definition: ServiceDefinition, settings: HostSettings): Promise<void> {
  try {
    const hosted = await hostService(definition, settings);
    stopOnSignals({ stop: hosted.stop }, hosted.logger);
  } catch (error) {
    createLogger(definition.name).fatal({ err: error }, 'failed to start');
    process.exit(1);
  }
}
