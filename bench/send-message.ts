// send-message requests per second through the distributed stack (one process per service, real NATS,
// Postgres and Redis started on free loopback ports), with the provider sandbox as the channel. Bounded
// in time and count; prints the figures and stops everything it started.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cpus, totalmem } from 'node:os';
import { type RunningStack, startStack } from '@inbox/runtime';
import { freePort, type LocalServer, startBroker, startPostgres, startRedis } from '@inbox/testkit';
import autocannon from 'autocannon';
import type { BenchBroker } from './broker.js';

const durationSeconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);

const servers: LocalServer[] = [];
let stack: RunningStack | undefined;

const tracing = process.env.BENCH_TRACING === 'on';
let sink: Server | undefined;

async function otlpSink(): Promise<string> {
  sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end('{}'));
  });
  await new Promise<void>((resolve) => sink!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(sink.address() as AddressInfo).port}`;
}

export async function benchSendMessage(broker: BenchBroker): Promise<void> {
  try {
    servers.push(...(await Promise.all([startBroker(broker), startPostgres(), startRedis()])));
    const [nats, postgres, redis] = servers as [LocalServer, LocalServer, LocalServer];
    const ports = await Promise.all(Array.from({ length: 6 }, () => freePort()));
    const adminToken = `adm_${randomBytes(16).toString('hex')}`;
    stack = await startStack({
      busUrl: nats.url,
      databaseUrl: postgres.url,
      redisUrl: redis.url,
      adminToken,
      encryptionKey: randomBytes(32).toString('base64'),
      // The bench measures throughput, not the per-workspace limit.
      rateLimitPerMinute: 10_000_000,
      logLevel: 'warn',
      ports: {
        gateway: ports[0]!,
        connector: ports[1]!,
        messaging: ports[2]!,
        pipeline: ports[3]!,
        dispatcher: ports[4]!,
        sandbox: ports[5]!,
      },
      // With tracing on, spans are really exported (to a sink that accepts and drops them), as in production.
      extraEnv: tracing ? { OTEL_EXPORTER_OTLP_ENDPOINT: await otlpSink() } : { OTEL_SDK_DISABLED: 'true' },
    });
    const admin = async (path: string, body: unknown) => {
      const response = await fetch(`${stack!.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      return (await response.json()) as Record<string, string>;
    };
    const workspace = await admin('/admin/v1/workspaces', { name: 'bench' });
    await admin(`/admin/v1/workspaces/${workspace.workspace_id}/integrations`, {
      channel: 'alt-a',
      config: { base_url: `${stack.sandboxUrl}/alt-a`, instance: 'bench', api_key: 'bench-key' },
    });

    let n = 0;
    const result = await autocannon({
      url: `${stack.gatewayUrl}/api/v1/send-message`,
      method: 'POST',
      connections,
      duration: durationSeconds,
      headers: { authorization: `Bearer ${workspace.api_key}`, 'content-type': 'application/json' },
      // A thousand contacts: most requests reuse a contact and conversation, as a busy workspace does.
      requests: [
        {
          setupRequest: (request) => ({
            ...request,
            body: JSON.stringify({
              phone: `+55119${10_000_000 + (n++ % 1000)}`,
              message: 'bench',
              channel: 'alt-a',
            }),
          }),
        },
      ],
    });

    const line = (label: string, value: string) => console.log(`${label.padEnd(28)} ${value}`);
    console.log(`\nsend-message through the distributed stack, on ${broker}`);
    line(
      'machine',
      `${cpus().length} × ${cpus()[0]?.model ?? 'cpu'}, ${Math.round(totalmem() / 2 ** 30)} GiB, Node ${process.version}`,
    );
    line('tracing', tracing ? 'on (spans exported over OTLP/HTTP to a local sink)' : 'off');
    line('connections', String(connections));
    line('duration', `${durationSeconds} s`);
    line(
      'requests',
      `${result.requests.total} (2xx ${result['2xx']}, non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts})`,
    );
    line(
      'throughput',
      `${result.requests.average.toFixed(1)} req/s (mean), ${result.requests.max} req/s (best second)`,
    );
    line(
      'latency',
      `p50 ${result.latency.p50} ms, p90 ${result.latency.p90} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms`,
    );
  } finally {
    await stack?.stop();
    await Promise.all(servers.splice(0).map((server) => server.stop()));
    sink?.close();
  }
}
