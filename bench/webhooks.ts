// Signed webhook deliveries per second from one dispatcher process to a loopback receiver, and the
// latency from an event's commit (its occurred_at) to its arrival at the receiver.
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { type Bus, connectBus } from '@inbox/bus';
import { type ServiceProcessSpec, serviceProcessSpecs, startServiceProcess } from '@inbox/runtime';
import {
  freePort,
  type LocalServer,
  type ManagedProcess,
  startBroker,
  startPostgres,
  waitFor,
} from '@inbox/testkit';
import pg from 'pg';
import { defaultPerEndpointConcurrency } from '../services/webhook-dispatcher/src/config.js';
import type { BenchBroker } from './broker.js';
import { benchPods, type PodMemoryLimits, podMemoryLimits } from './memory-cgroup.js';
import { cpuMillis } from './process-cpu.js';

const eventCount = Number(process.env.BENCH_EVENTS ?? 20_000);
// BENCH_EVENT_RATE=1000 publishes the events at that steady rate (events/s) instead of as fast as the
// bench can, so "commit → delivery" is the dispatcher's latency rather than the queue behind it.
const eventRate = process.env.BENCH_EVENT_RATE ? Number(process.env.BENCH_EVENT_RATE) : undefined;
const tickMs = 10;
const warmUpEvents = 2_000;
// The dispatcher in a pod as the send-path bench runs every service (BENCH_MEMORY_LIMIT, memory-cgroup.ts).
const pods = benchPods();

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? 0;
}

const spread = (sorted: number[]) =>
  `p50 ${percentile(sorted, 50)} ms, p90 ${percentile(sorted, 90)} ms, p99 ${percentile(sorted, 99)} ms, max ${sorted.at(-1)} ms`;

export async function benchWebhooks(broker: BenchBroker): Promise<Record<string, string>> {
  const servers: LocalServer[] = [];
  let dispatcher: ManagedProcess | undefined;
  let pod: PodMemoryLimits | undefined;
  let bus: Bus | undefined;
  const latencies: number[] = [];
  const arrivals = new Map<string, number>();
  let firstArrival = 0;
  let lastArrival = 0;
  const receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => {
      body += chunk;
    });
    req.on('end', () => {
      const arrived = Date.now();
      firstArrival ||= arrived;
      lastArrival = arrived;
      latencies.push(arrived - Number((JSON.parse(body) as { sent_ms: number }).sent_ms));
      arrivals.set(String(req.headers['x-webhook-id']), arrived);
      res.end();
    });
  });
  try {
    servers.push(...(await Promise.all([startBroker(broker), startPostgres({ statementStats: true })])));
    const [brokerServer, postgres] = servers as [LocalServer, LocalServer];
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const spec = serviceProcessSpecs({
      busUrl: brokerServer.url,
      databaseUrl: postgres.url,
      adminToken: 'unused',
      encryptionKey: randomBytes(32).toString('base64'),
      outboundAllowedCidrs: '127.0.0.0/8',
      logLevel: 'warn',
      extraEnv: {
        OTEL_SDK_DISABLED: 'true',
        // The shipped default unless BENCH_ENDPOINT_CONCURRENCY says otherwise (64 until the forty-eighth session).
        ...(process.env.BENCH_ENDPOINT_CONCURRENCY
          ? { WEBHOOK_PER_ENDPOINT_CONCURRENCY: process.env.BENCH_ENDPOINT_CONCURRENCY }
          : {}),
      },
      // BENCH_BUILT=on runs the dispatcher's compiled dist/ (build first), as the image runs it.
      built: process.env.BENCH_BUILT === 'on',
      ports: {
        gateway: 0,
        connector: 0,
        messaging: 0,
        pipeline: 0,
        dispatcher: await freePort(),
        sandbox: 0,
      },
    }).find((s) => s.name === 'webhook-dispatcher') as ServiceProcessSpec;
    // BENCH_CPU_PROF=webhook-dispatcher writes the dispatcher's CPU profile, as in the send-path bench.
    if (process.env.BENCH_CPU_PROF === 'webhook-dispatcher')
      spec.nodeArgs = [
        '--cpu-prof',
        '--cpu-prof-dir',
        fileURLToPath(new URL('./profiles/', import.meta.url)),
      ];
    if (pods) {
      pod = podMemoryLimits([spec.name], pods.mebibytes, pods.environment);
      spec.launcher = pod.launchers[spec.name];
    }
    dispatcher = await startServiceProcess(spec);
    bus = await connectBus({ url: brokerServer.url });
    const workspace = randomUUID();
    await bus.request('cmd.dispatcher.create-webhook', {
      workspace_id: workspace,
      url: receiverUrl,
      events: ['*'],
      secret: 'bench-secret',
    });

    const publishEvents = async (count: number, rate: number | undefined, from: number) => {
      const publishing: Array<Promise<void>> = [];
      for (let i = 0; i < count; i++) {
        // At a steady rate: each tick's share of events, then a wait until the next tick is due.
        if (rate && i > 0 && i % Math.max(1, Math.round((rate * tickMs) / 1000)) === 0) {
          await Promise.all(publishing.splice(0));
          const due = from + (i / rate) * 1000;
          if (due > Date.now()) await new Promise((resolve) => setTimeout(resolve, due - Date.now()));
        }
        const now = Date.now();
        publishing.push(
          bus!.publish({
            id: randomUUID(),
            type: 'message.sent',
            workspace_id: workspace,
            occurred_at: new Date(now).toISOString(),
            data: {
              event: 'message.sent',
              workspace_id: workspace,
              conversation_id: randomUUID(),
              sent_ms: now,
            },
          }),
        );
        if (publishing.length >= 500) await Promise.all(publishing.splice(0));
      }
      await Promise.all(publishing);
    };

    const stats = new pg.Client({ connectionString: postgres.url });
    await stats.connect();
    await stats.query('create extension if not exists pg_stat_statements');
    // A warm-up, not measured: the dispatcher's code compiled, and its tables holding rows when the
    // planner's statistics are taken, as a running deployment's do (an empty table's plans are not theirs).
    await publishEvents(warmUpEvents, undefined, Date.now());
    await waitFor(() => latencies.length >= warmUpEvents, {
      what: 'the warm-up deliveries',
      timeoutMs: 120_000,
      intervalMs: 50,
    });
    await stats.query('analyze');
    latencies.length = 0;
    arrivals.clear();
    firstArrival = 0;
    lastArrival = 0;
    await stats.query('select pg_stat_statements_reset()');
    const roots = { dispatcher: dispatcher.child.pid!, postgres: postgres.pid!, broker: brokerServer.pid! };
    const cpuBefore = cpuMillis(roots);
    // The bench's own process publishes the events and is the receiver: on a small machine it takes the
    // same cores, so its share is printed beside the others'.
    const loadBefore = process.cpuUsage();
    const started = Date.now();
    await publishEvents(eventCount, eventRate, started);
    const published = Date.now();
    await waitFor(() => latencies.length >= eventCount, {
      what: 'every delivery',
      timeoutMs: 300_000,
      intervalMs: 100,
    });
    const cpuAfter = cpuMillis(roots);
    const load = process.cpuUsage(loadBefore);
    const cpuPerDelivery = [
      ...Object.keys(roots).map(
        (name) => `${name} ${((cpuAfter[name]! - cpuBefore[name]!) / eventCount).toFixed(2)}`,
      ),
      `(publisher and receiver ${((load.user + load.system) / 1000 / eventCount).toFixed(2)})`,
    ].join(', ');
    // Statements per delivery, and the time Postgres spent in each (the dispatcher waits on it).
    const top = await stats.query<{ calls: string; ms: number; query: string }>(
      `select calls, total_exec_time as ms, query from pg_stat_statements
        where query not like '%pg_stat_statements%' order by total_exec_time desc limit 8`,
    );
    // Where the latency is spent: commit → scheduled (the consumer's part: the broker, the batch, the
    // insert) against the whole, so a tail can be told apart from the lease and the POST.
    const scheduled = await stats.query<{ event_id: string; at: number; sent: string }>(
      `select d.event_id, extract(epoch from d.created_at) * 1000 as at, b.body::json ->> 'sent_ms' as sent
         from dispatcher.deliveries d
         join dispatcher.event_bodies b on b.workspace_id = d.workspace_id and b.event_id = d.event_id
        where (b.body::json ->> 'sent_ms')::bigint >= $1`,
      [started],
    );
    await stats.end();
    const ascending = (values: number[]) => values.sort((a, b) => a - b);
    const toScheduled = ascending(scheduled.rows.map((row) => Math.round(Number(row.at) - Number(row.sent))));
    const scheduledToArrival = ascending(
      scheduled.rows.map((row) => Math.round((arrivals.get(row.event_id) ?? Number.NaN) - Number(row.at))),
    );
    console.log(`\nwebhooks on ${broker}: statements by time (calls per delivery, ms per delivery)`);
    for (const row of top.rows)
      console.log(
        `  ${(Number(row.calls) / eventCount).toFixed(3).padStart(7)}  ${(row.ms / eventCount).toFixed(3).padStart(7)}  ${row.query.replace(/\s+/g, ' ').slice(0, 110)}`,
      );
    const sorted = [...latencies].sort((a, b) => a - b);
    const seconds = (lastArrival - started) / 1000;
    return {
      events: eventRate ? `${eventCount} at ${eventRate}/s` : String(eventCount),
      'attempts in flight per endpoint':
        process.env.BENCH_ENDPOINT_CONCURRENCY ?? `${defaultPerEndpointConcurrency} (the default)`,
      'publish rate': `${(eventCount / ((published - started) / 1000)).toFixed(0)} events/s`,
      'deliveries/s (end to end)': (eventCount / seconds).toFixed(0),
      'deliveries/s (while arriving)': (eventCount / ((lastArrival - firstArrival) / 1000)).toFixed(0),
      'CPU ms per delivery': cpuPerDelivery,
      'commit → delivery latency': spread(sorted),
      'of which commit → scheduled': spread(toScheduled),
      'and scheduled → delivery': spread(scheduledToArrival),
    };
  } finally {
    await bus?.drain().catch(() => undefined);
    await dispatcher?.stop();
    pod?.remove();
    receiver.closeAllConnections();
    receiver.close();
    await Promise.all(servers.map((server) => server.stop()));
  }
}
