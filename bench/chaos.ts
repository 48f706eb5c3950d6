// `npm run chaos`: the fault suite. The distributed stack (one process per service, a private broker,
// Postgres and Redis) under a keyed, retried load of send-message, send-template and external send,
// while each service is killed with SIGKILL and started again in turn; then what was answered, lost,
// sent twice to the provider, left unanswered past 10 s after a kill, or delivered twice as a webhook.
//
//   npm run chaos -- [--seconds 100] [--bus nats|rabbitmq] [--workers 8]    (CHAOS_LOG=warn: service logs)
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { parseArgs } from 'node:util';
import { type RunningStack, startStack } from '@inbox/runtime';
import { freePort, type LocalServer, startBroker, startPostgres, startRedis } from '@inbox/testkit';
import { type Delivery, describeFigures, runFaults } from './chaos/fault-run.js';

const services = ['gateway', 'messaging', 'provider-connector', 'webhook-dispatcher', 'pipeline'] as const;

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '100' },
    bus: { type: 'string', default: 'nats' },
    workers: { type: 'string', default: '8' },
  },
});
const bus = values.bus;
if (bus !== 'nats' && bus !== 'rabbitmq') throw new Error('--bus is nats or rabbitmq');
const seconds = Number(values.seconds);
const workers = Number(values.workers);

/** A loopback webhook receiver that keeps every delivery (event id and payload). */
async function startReceiver() {
  const deliveries: Delivery[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      deliveries.push({
        eventId: String(req.headers['x-webhook-id']),
        body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
      });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks`, deliveries, server };
}

const servers: LocalServer[] = [];
let stack: RunningStack | undefined;
const receiver = await startReceiver();
try {
  console.log(
    `machine: ${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
  );
  console.log(`broker ${bus}, ${workers} workers, about ${seconds} s of load`);
  servers.push(...(await Promise.all([startBroker(bus), startPostgres(), startRedis()])));
  const [broker, postgres, redis] = servers as [LocalServer, LocalServer, LocalServer];
  const [gateway, connector, messaging, pipeline, dispatcher, sandbox] = await Promise.all(
    Array.from({ length: 6 }, () => freePort()),
  );
  const adminToken = `adm_${randomBytes(16).toString('hex')}`;
  stack = await startStack({
    busUrl: broker.url,
    databaseUrl: postgres.url,
    redisUrl: redis.url,
    adminToken,
    encryptionKey: randomBytes(32).toString('base64'),
    rateLimitPerMinute: 10_000_000,
    // The receiver is on loopback; a dead dispatcher's deliveries are taken over once their lease ends.
    outboundAllowedCidrs: '127.0.0.0/8',
    webhookTimeoutMs: 3_000,
    webhookRetrySchedule: '1,1,2,5,10',
    logLevel: process.env.CHAOS_LOG ?? 'error',
    onOutput: process.env.CHAOS_LOG
      ? (service, chunk) => process.stdout.write(`[${service}] ${chunk}`)
      : undefined,
    ports: {
      gateway: gateway!,
      connector: connector!,
      messaging: messaging!,
      pipeline: pipeline!,
      dispatcher: dispatcher!,
      sandbox: sandbox!,
    },
    extraEnv: { OTEL_SDK_DISABLED: 'true' },
  });
  const started = Date.now();
  const figures = await runFaults({
    stack,
    adminToken,
    webhookUrl: receiver.url,
    deliveries: () => receiver.deliveries,
    services,
    workers,
    gapMs: (seconds * 1000) / (services.length + 1),
    finalPerGap: workers,
    log: (line) => console.log(`  ${((Date.now() - started) / 1000).toFixed(1).padStart(6)} s  ${line}`),
  });
  console.log(`\nfault suite on ${bus}`);
  for (const line of describeFigures(figures)) console.log(line);
} finally {
  await stack?.stop();
  await Promise.all(servers.map((server) => server.stop()));
  receiver.server.closeAllConnections();
  receiver.server.close();
}
