// `npm run stack`: the distributed mode on this machine, one process per service, with the bus (NATS, or
// RabbitMQ with BUS=rabbitmq), Postgres and Redis started from the binaries on PATH unless BUS_URL,
// DATABASE_URL and REDIS_URL are given.
import { createLogger, stopGraceMs, stopOnSignals } from '@inbox/service-kit';
import { type LocalServer, startBroker, startPostgres, startRedis } from '@inbox/testkit';
import { type RunningStack, startStack } from './distributed.js';
import { ensurePanelBuilt } from './panel-build.js';
import { readSettings, sandboxCidrsNote } from './settings.js';

const settings = readSettings();
const logger = createLogger('stack');
const servers: LocalServer[] = [];
let stack: RunningStack | undefined;
const stopAll = async () => {
  await stack?.stop();
  await Promise.all(servers.map((server) => server.stop()));
};
// Each service process has its own grace period; the servers stop after them.
stopOnSignals({ stop: stopAll }, logger, stopGraceMs + 10_000);

const serverOrGiven = async (given: string | undefined, start: () => Promise<LocalServer>, what: string) => {
  if (given) return given;
  console.log(`Starting ${what}…`);
  const server = await start();
  servers.push(server);
  return server.url;
};

try {
  // The gateway process serves the panel from apps/panel/dist: build it first when missing or outdated.
  await ensurePanelBuilt((line) => console.log(line));
  const [busUrl, databaseUrl, redisUrl] = await Promise.all([
    serverOrGiven(
      settings.BUS_URL,
      () => startBroker(settings.BUS),
      settings.BUS === 'rabbitmq' ? 'rabbitmq-server' : 'nats-server (JetStream)',
    ),
    serverOrGiven(settings.DATABASE_URL, startPostgres, 'Postgres'),
    serverOrGiven(settings.REDIS_URL, startRedis, 'redis-server'),
  ]);
  stack = await startStack({
    busUrl,
    databaseUrl,
    redisUrl,
    ports: {
      gateway: settings.GATEWAY_PORT,
      connector: settings.CONNECTOR_PORT,
      messaging: settings.MESSAGING_PORT,
      pipeline: settings.PIPELINE_PORT,
      dispatcher: settings.DISPATCHER_PORT,
      sandbox: settings.sandboxEnabled ? settings.SANDBOX_PORT : 0,
    },
    adminToken: settings.ADMIN_TOKEN,
    encryptionKey: settings.ENCRYPTION_KEY,
    publicConnectorUrl: settings.PUBLIC_CONNECTOR_URL,
    rateLimitPerMinute: settings.RATE_LIMIT_PER_MINUTE,
    outboundAllowedCidrs: settings.OUTBOUND_ALLOWED_CIDRS,
    webhookTimeoutMs: settings.WEBHOOK_TIMEOUT_MS,
    webhookRetrySchedule: settings.WEBHOOK_RETRY_SCHEDULE,
    webhookRetentionDays: settings.WEBHOOK_RETENTION_DAYS,
    outboxRetentionHours: settings.OUTBOX_RETENTION_HOURS,
    pendingReconcileAfterMinutes: settings.PENDING_RECONCILE_AFTER_MINUTES,
    logLevel: settings.LOG_LEVEL,
    onOutput: (_service, chunk) => process.stdout.write(chunk),
  });
  console.log(`
Inbox platform is running (distributed mode: one process per service). Ctrl-C stops everything.

  Gateway (public and admin API)   ${stack.gatewayUrl}
  Panel (sign in with the token)   ${stack.gatewayUrl}/panel
  API docs (read and try calls)    ${stack.gatewayUrl}/docs
  OpenAPI document                 ${stack.gatewayUrl}/openapi.json
  Provider connector               http://127.0.0.1:${settings.CONNECTOR_PORT}
  Provider sandbox                 ${stack.sandboxUrl ?? 'off'}
${sandboxCidrsNote(settings)}  Admin token                      ${settings.ADMIN_TOKEN}${settings.adminTokenGenerated ? '   (generated; set ADMIN_TOKEN to choose one)' : ''}
  Bus / Postgres / Redis           ${busUrl} / ${databaseUrl} / ${redisUrl}

Create a workspace (its API key is shown once):

  curl -sS -X POST ${stack.gatewayUrl}/admin/v1/workspaces \\
    -H 'Authorization: Bearer ${settings.ADMIN_TOKEN}' -H 'Content-Type: application/json' \\
    -d '{"name":"My workspace"}'
`);
} catch (error) {
  console.error(`Could not start the stack: ${(error as Error).message}`);
  await stopAll();
  process.exit(1);
}
