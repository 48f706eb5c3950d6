// The send path through the distributed stack (one process per service; the broker, Postgres and Redis
// started on free loopback ports), side by side with the ceilings bare `node:http` and bare express reach in
// the same run, each measured again right before the load compared with it. For each load: requests/s,
// latency, the ratio to its ceiling, CPU milliseconds per request of every process (from /proc), Postgres
// statements per request (pg_stat_statements) and resident memory.
import { execFileSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { createEvolutionInstance } from '@inbox/provider-sandbox';
import { type RunningStack, serviceProcessSpecs, startServiceProcess, startStack } from '@inbox/runtime';
import {
  freePort,
  type LocalServer,
  type ManagedProcess,
  startBroker,
  startPostgres,
  startProcess,
  startRedis,
  waitFor,
} from '@inbox/testkit';
import autocannon from 'autocannon';
import pg from 'pg';
import type { BenchBroker } from './broker.js';
import { benchPods, type PodMemoryLimits, podMemoryLimits } from './memory-cgroup.js';
import { cpuMillis, rssMiB, runQueueWaitMillis } from './process-cpu.js';

const durationSeconds = Number(process.env.BENCH_SECONDS ?? 15);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
/**
 * BENCH_WARMUP_SECONDS: how long the unmeasured external sends run before the first load. 30 by default
 * since the twenty-ninth session: after the 5 of every earlier run, the first load still paid for the
 * services' code being compiled (4.06-4.50 ms a send, against 2.91-3.36 after 30 s, the same code the same
 * hour; bench/RESULTS.md), which a service running for hours pays once.
 */
const warmUpSeconds = Number(process.env.BENCH_WARMUP_SECONDS ?? 30);
/**
 * Tracing is on as shipped (spans exported); BENCH_TRACING=off measures without the SDK, and
 * BENCH_TRACING=propagate with the SDK and its instrumentations but no exporter (context propagated, no span
 * recorded), which splits tracing's cost between patching and recording. BENCH_TRACING=compare runs a
 * traced and an untraced stack side by side, taking turns (benchTracingCost).
 */
const tracingSetting =
  process.env.BENCH_TRACING === 'off' ||
  process.env.BENCH_TRACING === 'propagate' ||
  process.env.BENCH_TRACING === 'compare'
    ? process.env.BENCH_TRACING
    : 'on';
/** BENCH_CPU_PROF=<service>[,<service>…] writes those services' CPU profiles to bench/profiles/. */
const profiled = process.env.BENCH_CPU_PROF?.split(',').filter((name) => name.length > 0);
/** BENCH_BUILT=on runs the services' compiled `dist/` (build first), as the images run them. */
const built = process.env.BENCH_BUILT === 'on';
/** BENCH_LOADS=external,door runs only the loads whose names contain one of the words, each after its ceiling. */
const onlyLoads = process.env.BENCH_LOADS?.split(',').filter((word) => word.length > 0);
/** BENCH_NODE_ARGS="--flag …" adds Node flags to every service process (e.g. a heap setting to compare). */
const extraNodeArgs = process.env.BENCH_NODE_ARGS?.split(' ').filter((flag) => flag.length > 0) ?? [];
/** BENCH_SPAN_DUMP=<file> appends every OTLP export (path, content type, then the body) to that file. */
const spanDump = process.env.BENCH_SPAN_DUMP;
/**
 * BENCH_LOG_LEVEL=info writes every request's access line, as shipped; warn (the default, as in the
 * earlier recorded runs) leaves it out.
 */
const logLevel = process.env.BENCH_LOG_LEVEL ?? 'warn';
/**
 * BENCH_RATE=<requests/s> offers the loads (not the ceilings) at that rate instead of as fast as they go.
 * autocannon's `overallRate` gives each connection its share per second, which it sends back to back at the
 * start of its second and then waits: the connections' seconds start together, so the load comes as one
 * burst a second, and p50/p99 at a rate include that burst's queue (bench/RESULTS.md, forty-fifth session).
 */
const offeredRate = process.env.BENCH_RATE ? Number(process.env.BENCH_RATE) : undefined;
/** BENCH_SERVICE_ENV="NAME=value …" adds settings to every service process (e.g. a setting to compare). */
const serviceEnv = Object.fromEntries(
  (process.env.BENCH_SERVICE_ENV?.split(' ') ?? [])
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
/**
 * BENCH_STATEMENTS=on lists each load's statements: calls and execution milliseconds per request, and how
 * often each was planned (a prepared statement planned on every call shows a ratio near 1) and that
 * planning's milliseconds per request, and the rows each call read or wrote.
 */
const listStatements = process.env.BENCH_STATEMENTS === 'on';
/** Each service in a memory cgroup as a pod, with the image's runtime variables (memory-cgroup.ts). */
const podSettings = benchPods();
const memoryLimit = podSettings?.mebibytes;
const podEnvironment = podSettings?.environment;
/**
 * BENCH_CONVERSATIONS=<n> adds, right after the external send load, the same load spread over n
 * conversations of the workspace, taken in turn. The external send load itself sends to one conversation,
 * as in every run recorded, and its rows (the conversation, its outbox ordering) are locks that all its
 * sends queue on, which a tenant's sends spread over its conversations do not.
 */
const conversationCount = Math.max(1, Number(process.env.BENCH_CONVERSATIONS ?? 1));
/** BENCH_MEMORY=on prints, after the loads, each service's V8 heap by space beside its resident memory. */
const listMemory = process.env.BENCH_MEMORY === 'on';
const profileDir = fileURLToPath(new URL('./profiles/', import.meta.url));

export interface LoadFigures {
  load: string;
  requests: number;
  ok: number;
  /** How many answers had each status, when some were not the expected one. */
  statuses?: string;
  perSecond: number;
  p50: number;
  p99: number;
  /** The ceiling this load is compared with, and the ratio to it. */
  ceiling?: { name: string; perSecond: number };
  cpuMsPerRequest: Record<string, number>;
  /** Milliseconds each process's main threads waited for a core, per request (process-cpu.ts). */
  cpuWaitMsPerRequest?: Record<string, number>;
  statementsPerRequest?: number;
  /** With tracing on: spans exported, and their OTLP bytes, per request. */
  spansPerRequest?: number;
  spanKiBPerRequest?: number;
  /** The speed probe's median CPU microseconds a unit during the load (speed-probe.ts). */
  probeMicros?: number;
}

interface Load {
  name: string;
  url: string;
  headers: Record<string, string>;
  body: () => string;
  ceiling?: string;
  /** Requests are over when this many webhooks have arrived (the send's work ends at its receiver). */
  webhooksPerRequest?: number;
  /** Which answers count as expected: 2xx by default, the refusal's statuses for door loads. */
  expectStatus?: number[];
}

async function runLoad(load: Load, seconds = durationSeconds): Promise<autocannon.Result> {
  return autocannon({
    url: load.url,
    method: 'POST',
    connections,
    duration: seconds,
    // A fixed offered rate keeps batching alike between runs, so CPU per request compares across them.
    ...(offeredRate && !load.name.startsWith('ceiling') ? { overallRate: offeredRate } : {}),
    headers: { 'content-type': 'application/json', ...load.headers },
    requests: [{ setupRequest: (request) => ({ ...request, body: load.body() }) }],
  });
}

async function startCeiling(
  kind: 'node:http' | 'express',
): Promise<{ url: string; process: ManagedProcess }> {
  let port = '';
  const child = startProcess(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./ceiling-server.ts', import.meta.url)), kind],
    { onOutput: (chunk) => (port ||= chunk.trim()) },
  );
  await waitFor(() => port !== '', { what: `the ${kind} ceiling`, timeoutMs: 20_000 });
  return { url: `http://127.0.0.1:${port}/`, process: child };
}

type TracingMode = 'on' | 'off' | 'propagate';

/** One distributed stack started for a run, with the loads it answers and how to measure one. */
export interface BenchStack {
  mode: TracingMode;
  loads: Load[];
  /** External sends, not measured, until their webhooks have arrived. */
  warmUp(): Promise<void>;
  /** Runs `load` and measures it; `earlier` holds the run's figures so far, its ceiling's among them. */
  measure(load: Load, earlier: LoadFigures[]): Promise<LoadFigures>;
  /** Resident MiB of every process now. */
  memory(): Record<string, number>;
  /** Each process that has exited, with its output; '' if none. */
  exited(): string;
  printHeapSpaces(memory: Record<string, number>): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Starts the broker, Postgres, Redis and every service (one process each, plus a gateway limited to one
 * request a minute for the door's 429), registers a workspace, an alt-a integration on the sandbox and a
 * webhook to a loopback receiver, and makes the first send. `ceilings`: the bare node:http and express
 * processes the loads are compared with; `tag` tells two stacks of one run apart.
 */
export async function startBenchStack(
  broker: BenchBroker,
  mode: TracingMode,
  options: {
    ceilings: boolean;
    tag?: string;
    probe?: SpeedProbe;
    env?: Record<string, string>;
    /** Every OTLP trace export the sink receives (JSON, as the services send it). */
    onTraces?: (body: Buffer) => void;
    /** A Node binary the services run instead of the bench's own (with BENCH_MEMORY_LIMIT only). */
    node?: string;
    /** Another checkout whose built services run instead of this one's (with BENCH_MEMORY_LIMIT only). */
    root?: string;
  },
): Promise<BenchStack> {
  const tracing = mode === 'on';
  const servers: LocalServer[] = [];
  const extra: ManagedProcess[] = [];
  let stack: RunningStack | undefined;
  let pods: PodMemoryLimits | undefined;
  let sink: Server | undefined;
  let stats: pg.Client | undefined;
  let delivered = 0;
  const exported = { spans: 0, bytes: 0 };
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      delivered++;
      res.end();
    });
  });
  const stop = async () => {
    await stats?.end().catch(() => undefined);
    await stack?.stop();
    await Promise.all(extra.map((child) => child.stop()));
    pods?.remove();
    await Promise.all(servers.map((server) => server.stop()));
    receiver.closeAllConnections();
    receiver.close();
    sink?.close();
  };
  try {
    servers.push(
      ...(await Promise.all([
        startBroker(broker),
        startPostgres({ statementStats: true, planningStats: listStatements }),
        startRedis(),
      ])),
    );
    const [brokerServer, postgres, redis] = servers as [LocalServer, LocalServer, LocalServer];
    const ports = await Promise.all(Array.from({ length: 7 }, () => freePort()));
    const adminToken = `adm_${randomBytes(16).toString('hex')}`;
    if (tracing) {
      sink = createServer((req, res) => {
        const chunks: Buffer[] = [];
        req.on('data', (chunk: Buffer) => chunks.push(chunk));
        req.on('end', () => {
          const body = Buffer.concat(chunks);
          exported.bytes += body.length;
          if (req.url?.endsWith('/v1/traces')) {
            exported.spans += countSpans(body);
            options.onTraces?.(body);
          }
          if (spanDump)
            appendFileSync(spanDump, `${req.url} ${req.headers['content-type']}\n${body.toString()}\n`);
          res.end('{}');
        });
      });
      await new Promise<void>((resolve) => sink!.listen(0, '127.0.0.1', resolve));
    }
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const config = {
      busUrl: brokerServer.url,
      databaseUrl: postgres.url,
      redisUrl: redis.url,
      adminToken,
      encryptionKey: randomBytes(32).toString('base64'),
      // The send loads measure throughput, not the per-workspace limit (a gateway of its own measures 429s).
      rateLimitPerMinute: 10_000_000,
      outboundAllowedCidrs: '127.0.0.0/8',
      logLevel,
      ports: {
        gateway: ports[0]!,
        connector: ports[1]!,
        messaging: ports[2]!,
        pipeline: ports[3]!,
        dispatcher: ports[4]!,
        sandbox: ports[5]!,
      },
      // With tracing on, spans are really exported (to a sink that accepts and drops them), as in production.
      extraEnv: {
        ...(tracing
          ? { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${(sink!.address() as AddressInfo).port}` }
          : mode === 'off'
            ? { OTEL_SDK_DISABLED: 'true' }
            : {}),
        ...options.env,
      } as Record<string, string>,
      built,
    };
    // The service processes the stack runs, named as the runtime names them.
    const serviceNames = serviceProcessSpecs(config).map(({ name }) => name);
    const nodeArgs = Object.fromEntries(
      serviceNames.map((name) => [
        name,
        [
          ...extraNodeArgs,
          ...(profiled?.includes(name) ? ['--cpu-prof', '--cpu-prof-dir', `${profileDir}${name}`] : []),
        ],
      ]),
    );
    if ((options.node || options.root) && !memoryLimit)
      throw new Error('another Node or checkout for the services needs BENCH_MEMORY_LIMIT');
    if (memoryLimit)
      pods = podMemoryLimits([...serviceNames, 'gateway (429)'], memoryLimit, podEnvironment, options.tag, {
        node: options.node,
        root: options.root,
      });
    stack = await startStack({ ...config, nodeArgs, ...(pods ? { launchers: pods.launchers } : {}) });
    // A second gateway whose workspaces may make one request a minute: the door's 429 answers.
    const gatewaySpec = stack.specs.get('gateway')!;
    const limitedGateway = await startServiceProcess({
      ...gatewaySpec,
      port: ports[6]!,
      env: { ...gatewaySpec.env, GATEWAY_PORT: String(ports[6]), RATE_LIMIT_PER_MINUTE: '1' },
      ...(pods ? { launcher: pods.launchers['gateway (429)'] } : {}),
    });
    extra.push(limitedGateway);
    const ceilings = options.ceilings
      ? { 'node:http': await startCeiling('node:http'), express: await startCeiling('express') }
      : undefined;
    if (ceilings) extra.push(...Object.values(ceilings).map((ceiling) => ceiling.process));

    const admin = async (path: string, body: unknown) => {
      const response = await fetch(`${stack!.gatewayUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      const json = (await response.json()) as Record<string, string>;
      if (!response.ok) throw new Error(`${path} answered ${response.status}: ${JSON.stringify(json)}`);
      return json;
    };
    const workspace = await admin('/admin/v1/workspaces', { name: 'bench' });
    const ws = `/admin/v1/workspaces/${workspace.workspace_id}`;
    await createEvolutionInstance(stack.sandboxUrl!, 'bench', 'bench-key');
    await admin(`${ws}/integrations`, {
      channel: 'alt-a',
      config: { base_url: `${stack.sandboxUrl}/alt-a`, instance: 'bench', api_key: 'bench-key' },
    });
    await admin(`${ws}/webhooks`, {
      url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
      events: ['message.sent'],
      secret: 'whsec_benchbenchbenchbenchbenchbench',
    });
    const key = { authorization: `Bearer ${workspace.api_key}` };
    // A contact's first send-message opens its conversation, which external sends then write into.
    const openConversation = async (phone: string): Promise<string> => {
      const answer = await fetch(`${stack!.gatewayUrl}/api/v1/send-message`, {
        method: 'POST',
        headers: { ...key, 'content-type': 'application/json' },
        body: JSON.stringify({ phone, message: 'first', channel: 'alt-a' }),
      });
      const opened = (await answer.json()) as { conversationId?: string };
      if (!answer.ok || !opened.conversationId)
        throw new Error(
          `the first send-message to ${phone} answered ${answer.status} ${JSON.stringify(opened)}${exitedProcesses(stack!.processes, extra)}`,
        );
      return opened.conversationId;
    };
    // The external send load writes into this conversation: without it every request would be a 400.
    const conversations = [await openConversation('+5511900000001')];
    for (let i = 1; i < conversationCount; i++)
      conversations.push(await openConversation(`+55119100${String(i).padStart(5, '0')}`));
    await waitFor(() => delivered >= conversationCount, { what: 'the first webhooks', timeoutMs: 30_000 });

    let n = 0;
    const gateway = stack.gatewayUrl;
    const limitedUrl = `http://127.0.0.1:${ports[6]}`;
    const loads: Load[] = [
      ...(ceilings
        ? [
            {
              name: 'ceiling: bare node:http',
              url: ceilings['node:http'].url,
              headers: {},
              body: () => '{"a":1}',
            },
            { name: 'ceiling: bare express', url: ceilings.express.url, headers: {}, body: () => '{"a":1}' },
          ]
        : []),
      {
        name: 'external send (+ webhook)',
        url: `${gateway}/api/external/messages/send`,
        headers: key,
        body: () => JSON.stringify({ conversation_id: conversations[0], text: `bench ${n++}` }),
        ceiling: 'ceiling: bare node:http',
        webhooksPerRequest: 1,
      },
      ...(conversationCount > 1
        ? [
            {
              name: `external send, ${conversationCount} conversations (+ webhook)`,
              url: `${gateway}/api/external/messages/send`,
              headers: key,
              body: () =>
                JSON.stringify({
                  conversation_id: conversations[n % conversationCount],
                  text: `bench ${n++}`,
                }),
              ceiling: 'ceiling: bare node:http',
              webhooksPerRequest: 1,
            },
          ]
        : []),
      {
        name: 'send-message, same contact (+ webhook)',
        url: `${gateway}/api/v1/send-message`,
        headers: key,
        body: () => JSON.stringify({ phone: '+5511900000001', message: `bench ${n++}`, channel: 'alt-a' }),
        ceiling: 'ceiling: bare node:http',
        webhooksPerRequest: 1,
      },
      {
        name: 'send-message, new contact (+ webhook)',
        url: `${gateway}/api/v1/send-message`,
        headers: key,
        body: () =>
          JSON.stringify({ phone: `+55119${20_000_000 + n++}`, message: 'bench', channel: 'alt-a' }),
        ceiling: 'ceiling: bare node:http',
        webhooksPerRequest: 1,
      },
      {
        name: 'door: 400 (invalid body)',
        url: `${gateway}/api/v1/send-message`,
        headers: key,
        body: () => '{"phone":"+5511900000001","message":"x","channel":"nope"}',
        ceiling: 'ceiling: bare express',
        expectStatus: [400],
      },
      {
        name: 'door: 429 (rate limited)',
        url: `${limitedUrl}/api/v1/send-message`,
        headers: key,
        body: () => '{"phone":"+5511900000001","message":"x","channel":"alt-a"}',
        ceiling: 'ceiling: bare express',
        expectStatus: [429],
      },
      {
        name: 'door: 401/429 (wrong key)',
        url: `${gateway}/api/v1/send-message`,
        headers: { authorization: 'Bearer wrong-key' },
        body: () => '{"phone":"+5511900000001","message":"x","channel":"alt-a"}',
        ceiling: 'ceiling: bare express',
        // After 30 wrong keys in 10 s the address is refused with 429 for a minute: after the gateway's
        // other loads, for that reason.
        expectStatus: [401, 429],
      },
      {
        // The connector's own door: a callback URL naming no integration. After 50 in 10 s the address is
        // refused with 429 for 30 s, still before the body is read.
        name: 'door: callback 404/429 (unknown integration)',
        url: `http://127.0.0.1:${stack.specs.get('provider-connector')!.port}/inbound/alt-a/${randomUUID()}`,
        headers: {},
        body: () => '{"event":"messages.upsert","instance":"x","data":{}}',
        ceiling: 'ceiling: bare express',
        expectStatus: [404, 429],
      },
    ];

    const roots: Record<string, number> = {
      ...Object.fromEntries([...stack.processes].map(([name, child]) => [name, child.child.pid!])),
      'gateway (429)': limitedGateway.child.pid!,
      broker: brokerServer.pid!,
      postgres: postgres.pid!,
      redis: redis.pid!,
      ...(ceilings
        ? {
            'ceiling: bare node:http': ceilings['node:http'].process.child.pid!,
            'ceiling: bare express': ceilings.express.process.child.pid!,
          }
        : {}),
    };
    const statsClient = new pg.Client({ connectionString: postgres.url });
    stats = statsClient;
    await statsClient.connect();
    await statsClient.query('create extension if not exists pg_stat_statements');
    const statements = async () =>
      Number(
        (
          await statsClient.query<{ calls: string }>(
            'select coalesce(sum(calls), 0) as calls from pg_stat_statements',
          )
        ).rows[0]!.calls,
      );
    const running = stack;

    return {
      mode,
      loads,
      // A warm-up of external sends, not measured: the services' code is compiled and their pools filled,
      // and the tables hold a few thousand rows before the statistics are taken, as a running deployment's
      // do. Its webhooks arrive before the first load starts.
      async warmUp() {
        const warmUp = loads.find((load) => load.name.startsWith('external send'))!;
        const warmUpDelivered = delivered;
        const warmUpResult = await runLoad(warmUp, warmUpSeconds);
        await waitFor(() => delivered - warmUpDelivered >= warmUpResult['2xx'], {
          what: 'the warm-up webhooks',
          timeoutMs: 120_000,
          intervalMs: 50,
        });
      },
      async measure(load, earlier) {
        const deliveredBefore = delivered;
        const exportedBefore = { ...exported };
        // Current planner statistics, as a production database has them (autovacuum analyzes a table once
        // a tenth of it changed). Without them the tables the bench has just filled still look empty, and a
        // service's cached generic plan may pick an index that matches only the workspace: marking a message
        // sent then read every message of the workspace through messages_by_provider_id.
        await statsClient.query('analyze');
        if (listStatements) await statsClient.query('select pg_stat_statements_reset()');
        const cpuBefore = cpuMillis(roots);
        const waitBefore = runQueueWaitMillis(roots);
        const statementsBefore = await statements();
        const startedAt = Date.now();
        const result = await runLoad(load);
        const ok = load.expectStatus
          ? load.expectStatus.reduce(
              (sum, status) =>
                sum +
                (result.statusCodeStats?.[status as unknown as keyof typeof result.statusCodeStats]?.count ??
                  0),
              0,
            )
          : result['2xx'];
        if (load.webhooksPerRequest)
          await waitFor(() => delivered - deliveredBefore >= ok * load.webhooksPerRequest!, {
            what: `the webhooks of ${load.name}`,
            timeoutMs: 120_000,
            intervalMs: 50,
          }).catch(() =>
            console.log(`  (${load.name}: ${delivered - deliveredBefore} of ${ok} webhooks arrived)`),
          );
        const cpuAfter = cpuMillis(roots);
        const waitAfter = runQueueWaitMillis(roots);
        const probeMicros = options.probe?.medianBetween(startedAt, Date.now());
        // Spans are exported in batches every few seconds: wait for the batch that holds this load's last.
        if (tracing && !load.name.startsWith('ceiling'))
          await new Promise((resolve) => setTimeout(resolve, 6_000));
        // The query counting statements is itself one; it is left out.
        const statementCount = (await statements()) - statementsBefore - 1;
        // Every figure per request divides by this (a load that got no answer divides by one).
        const requests = Math.max(1, result.requests.total);
        if (listStatements && !load.name.startsWith('ceiling'))
          await printStatements(statsClient, load, requests);
        const perRequest = Object.fromEntries(
          Object.keys(roots)
            .map((name) => [name, (cpuAfter[name]! - cpuBefore[name]!) / requests])
            .filter(([, ms]) => (ms as number) >= 0.005),
        ) as Record<string, number>;
        const waitPerRequest = Object.fromEntries(
          Object.keys(roots).map((name) => [name, (waitAfter[name]! - waitBefore[name]!) / requests]),
        ) as Record<string, number>;
        const ceiling = load.ceiling ? earlier.findLast((figure) => figure.load === load.ceiling) : undefined;
        return {
          load: load.name,
          requests: result.requests.total,
          ok,
          ...(ok === result.requests.total
            ? {}
            : {
                statuses: Object.entries(result.statusCodeStats ?? {})
                  .map(([status, { count }]) => `${status}: ${count}`)
                  .join(', '),
              }),
          perSecond: result.requests.average,
          p50: result.latency.p50,
          p99: result.latency.p99,
          ...(ceiling ? { ceiling: { name: ceiling.load, perSecond: ceiling.perSecond } } : {}),
          cpuMsPerRequest: perRequest,
          ...(load.name.startsWith('ceiling') ? {} : { cpuWaitMsPerRequest: waitPerRequest }),
          ...(load.name.startsWith('ceiling') ? {} : { statementsPerRequest: statementCount / requests }),
          ...(tracing && !load.name.startsWith('ceiling')
            ? {
                spansPerRequest: (exported.spans - exportedBefore.spans) / requests,
                spanKiBPerRequest: (exported.bytes - exportedBefore.bytes) / 1024 / requests,
              }
            : {}),
          ...(probeMicros === undefined ? {} : { probeMicros }),
        };
      },
      memory: () => rssMiB(roots),
      // A service that died during the loads leaves figures that are not the stack's.
      exited: () => exitedProcesses(running.processes, extra),
      printHeapSpaces: (memory) =>
        printHeapSpaces(
          {
            ...Object.fromEntries([...running.specs].map(([name, spec]) => [name, spec.port])),
            'gateway (429)': ports[6]!,
          },
          memory,
        ),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Each statement's calls and execution milliseconds per request, its plans per call, planning ms per request,
 * and the rows it read or wrote per call (a lease or a poll that mostly finds nothing shows as well under 1).
 */
async function printStatements(stats: pg.Client, load: Load, requests: number): Promise<void> {
  const top = await stats.query<{
    calls: string;
    ms: number;
    plans: string;
    plan_ms: number;
    rows: string;
    query: string;
  }>(
    `select calls, total_exec_time as ms, plans, total_plan_time as plan_ms, rows, query
       from pg_stat_statements order by calls desc limit 25`,
  );
  console.log(
    `\n${load.name}: per request, each statement's calls and execution ms; its plans per call, planning ms per request, rows per call`,
  );
  for (const row of top.rows)
    console.log(
      `  ${(Number(row.calls) / requests).toFixed(2).padStart(6)}  ${(row.ms / requests).toFixed(3).padStart(6)}  ${(Number(row.plans) / Math.max(1, Number(row.calls))).toFixed(2).padStart(5)}  ${(row.plan_ms / requests).toFixed(3).padStart(6)}  ${(Number(row.rows) / Math.max(1, Number(row.calls))).toFixed(1).padStart(6)}  ${row.query.replace(/\s+/g, ' ').slice(0, 130)}`,
    );
}

/** The speed probe (speed-probe.ts): its units' CPU microseconds by time, and a median over a window. */
interface SpeedProbe {
  medianBetween(from: number, to: number): number | undefined;
  stop(): Promise<unknown>;
}

function startSpeedProbe(): SpeedProbe {
  const units: { at: number; micros: number }[] = [];
  let partial = '';
  const child = startProcess(
    process.execPath,
    ['--import', 'tsx', fileURLToPath(new URL('./speed-probe.ts', import.meta.url))],
    {
      onOutput: (chunk) => {
        const lines = (partial + chunk).split('\n');
        partial = lines.pop()!;
        for (const line of lines) {
          const [at, micros] = line.split(' ').map(Number);
          if (Number.isFinite(at) && Number.isFinite(micros)) units.push({ at: at!, micros: micros! });
        }
      },
    },
  );
  return {
    medianBetween(from, to) {
      const window = units
        .filter((unit) => unit.at >= from && unit.at <= to)
        .map((unit) => unit.micros)
        .sort((a, b) => a - b);
      return window.length === 0 ? undefined : window[Math.floor(window.length / 2)];
    },
    stop: () => child.stop(),
  };
}

export async function benchSendPath(broker: BenchBroker): Promise<LoadFigures[]> {
  if (tracingSetting === 'compare') return benchTracingCost(broker);
  const probe = startSpeedProbe();
  let bench: BenchStack | undefined;
  try {
    bench = await startBenchStack(broker, tracingSetting, { ceilings: true, probe, env: serviceEnv });
    const ceilingLoads = bench.loads.filter((load) => load.name.startsWith('ceiling'));
    const measured = bench.loads.filter(
      (load) =>
        !load.name.startsWith('ceiling') &&
        (!onlyLoads || onlyLoads.some((word) => load.name.includes(word))),
    );
    // Each load runs right after its ceiling, measured again for it: the host's speed drifts over the
    // minutes of a run (bare express at 15,400-19,800 requests/s within one run on a 2-vCPU host), so a
    // ratio is taken between two figures of the same few seconds.
    const chosen = measured.flatMap((load) => {
      const ceiling = ceilingLoads.find((candidate) => candidate.name === load.ceiling);
      return ceiling ? [ceiling, load] : [load];
    });
    if (chosen.length === 0) chosen.push(...ceilingLoads);
    await bench.warmUp();
    const figures: LoadFigures[] = [];
    for (const load of chosen) figures.push(await bench.measure(load, figures));
    const memory = bench.memory();
    // A service that died during the loads leaves figures that are not the stack's: say so, with its output.
    const exited = bench.exited();
    if (exited) console.log(`\nNOT A VALID RUN: a process exited during the loads.${exited}`);
    printFigures(runDescription(broker, tracingDescription(tracingSetting)), figures, memory);
    if (listMemory) await bench.printHeapSpaces(memory);
    return figures;
  } finally {
    await bench?.stop();
    await probe.stop();
  }
}

/**
 * BENCH_TRACED_ENV="NAME=value …": variables only the traced stack of a comparison gets, to compare a
 * variant of tracing (`OTEL_TRACES_SAMPLER=always_off`: spans started, none recorded). BENCH_BASELINE=on
 * makes the other stack traced as shipped, so the variant is compared with tracing as it is, not with none.
 */
const tracedEnvironment = Object.fromEntries(
  (process.env.BENCH_TRACED_ENV ?? '')
    .split(' ')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const baselineMode: TracingMode = process.env.BENCH_BASELINE === 'on' ? 'on' : 'off';
/** BENCH_NODE_A=<node binary>: the first stack of a comparison runs its services on that Node. */
const nodeA = process.env.BENCH_NODE_A;
/**
 * BENCH_ROOT_B=<checkout>: the second stack of a comparison runs that checkout's built services (another
 * commit, `npm ci && npm run build` there), so that a change is compared with the code before it.
 */
const rootB = process.env.BENCH_ROOT_B;

function commitOf(root: string): string {
  return execFileSync('git', ['-C', root, 'rev-parse', '--short', 'HEAD']).toString().trim();
}

/**
 * BENCH_TRACING=compare: what tracing costs, from two stacks started side by side, one traced as shipped
 * and one with OTEL_SDK_DISABLED=true, taking turns at the same load (BENCH_LOADS, external send unless
 * told) for BENCH_ROUNDS rounds in the order traced, untraced, untraced, traced, …. Runs of whole stacks
 * minutes apart differed by more than what tracing costs (bench/RESULTS.md, nineteenth to twenty-third
 * sessions); here the two measurements of a pair are seconds apart, the idle stack costing next to nothing
 * meanwhile, and the speed probe tells how fast the host ran during each. No ceilings: the comparison is
 * between the stacks.
 */
async function benchTracingCost(broker: BenchBroker): Promise<LoadFigures[]> {
  const rounds = Number(process.env.BENCH_ROUNDS ?? 4);
  const words = onlyLoads ?? ['external'];
  const variant = Object.keys(tracedEnvironment).length
    ? `on, ${Object.entries(tracedEnvironment)
        .map(([name, value]) => `${name}=${value}`)
        .join(' ')}`
    : 'on';
  const labels = [
    `tracing ${variant}${nodeA ? `, Node ${execFileSync(nodeA, ['--version']).toString().trim()}` : ''}`,
    `tracing ${baselineMode}${baselineMode === 'on' ? ' as shipped' : ''}${nodeA ? `, Node ${process.version}` : ''}${rootB ? `, ${rootB} (${commitOf(rootB)})` : ''}`,
  ];
  const probe = startSpeedProbe();
  const stacks: BenchStack[] = [];
  try {
    stacks.push(
      await startBenchStack(broker, 'on', {
        ceilings: false,
        tag: 'a',
        probe,
        env: tracedEnvironment,
        ...(nodeA ? { node: nodeA } : {}),
      }),
    );
    stacks.push(
      await startBenchStack(broker, baselineMode, {
        ceilings: false,
        tag: 'b',
        probe,
        ...(rootB ? { root: rootB } : {}),
      }),
    );
    const names = stacks[0]!.loads
      .map((load) => load.name)
      .filter((name) => words.some((word) => name.includes(word)));
    for (const stack of stacks) await stack.warmUp();
    const figures: [LoadFigures[], LoadFigures[]] = [[], []];
    for (let round = 0; round < rounds; round++)
      for (const index of round % 2 === 0 ? [0, 1] : [1, 0])
        for (const name of names) {
          const stack = stacks[index]!;
          const load = stack.loads.find((candidate) => candidate.name === name)!;
          const figure = await stack.measure(load, []);
          figures[index]!.push({ ...figure, load: `${name} [${index === 0 ? 'a' : 'b'}]` });
        }
    stacks.forEach((stack, index) => {
      const memory = stack.memory();
      const exited = stack.exited();
      if (exited) console.log(`\nNOT A VALID RUN: a process of the ${labels[index]} stack exited.${exited}`);
      printFigures(
        `[${index === 0 ? 'a' : 'b'}] ${runDescription(broker, labels[index]!)}`,
        figures[index]!,
        memory,
      );
    });
    printTracingCost(names, labels as [string, string], figures);
    return figures.flat();
  } finally {
    for (const stack of stacks.reverse()) await stack.stop();
    await probe.stop();
  }
}

/** Total CPU per request of every process of the platform (the load's own ceiling left out). */
function totalCpu(figure: LoadFigures): number {
  return Object.entries(figure.cpuMsPerRequest)
    .filter(([name]) => !name.startsWith('ceiling') || figure.load === name)
    .reduce((sum, [, ms]) => sum + ms, 0);
}

function printTracingCost(
  names: string[],
  labels: [string, string],
  [first, second]: [LoadFigures[], LoadFigures[]],
): void {
  // The host's speed moves within a run too, by a half in seconds at times: the pairs whose loads the
  // speed probe found running alike (its units within a tenth of each other) are also given on their own.
  const alike = (a: LoadFigures, b: LoadFigures) =>
    a.probeMicros !== undefined &&
    b.probeMicros !== undefined &&
    Math.abs(a.probeMicros - b.probeMicros) <= 0.1 * Math.min(a.probeMicros, b.probeMicros);
  console.log(`\nCPU ms per request, [a] ${labels[0]} / [b] ${labels[1]}, pair by pair (seconds apart)`);
  for (const name of names) {
    const of = (figures: LoadFigures[]) => figures.filter((figure) => figure.load.startsWith(`${name} [`));
    const all = of(first).map((a, index) => [a, of(second)[index]!] as const);
    for (const [label, pairs] of [
      ['every pair', all],
      ['pairs the probe found at a like speed', all.filter(([a, b]) => alike(a, b))],
    ] as const) {
      if (pairs.length === 0) {
        console.log(`  ${name}, ${label}: none`);
        continue;
      }
      const a = pairs.map(([figure]) => totalCpu(figure));
      const b = pairs.map(([, figure]) => totalCpu(figure));
      const listed = a.map(
        (ms, index) => `${ms.toFixed(2)} / ${b[index]!.toFixed(2)} (${percentOver(ms, b[index]!)})`,
      );
      console.log(`  ${name}, ${label}: ${listed.join(', ')}`);
      console.log(
        `    on the averages ${average(a).toFixed(2)} / ${average(b).toFixed(2)} ms: ${percentOver(average(a), average(b))}`,
      );
      if (pairs.length > 1) console.log(`    ${pairsSpread(a.map((ms, index) => ms / b[index]! - 1))}`);
    }
  }
}

/**
 * The pairs' differences as a mean with its standard error. Two stacks of the same code, taking turns,
 * differ by up to a fifth pair by pair (bench/RESULTS.md, twenty-fifth session): a difference under about
 * twice its standard error is not told apart from that.
 */
function pairsSpread(ratios: number[]): string {
  const mean = average(ratios);
  const variance = ratios.reduce((sum, ratio) => sum + (ratio - mean) ** 2, 0) / (ratios.length - 1);
  const standardError = Math.sqrt(variance / ratios.length);
  return `pair by pair ${signedPercent(mean)} on average, standard error ${(standardError * 100).toFixed(1)} points (pairs from ${signedPercent(Math.min(...ratios))} to ${signedPercent(Math.max(...ratios))})`;
}

function average(values: number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** A ratio less one as a signed percentage: 0.236 is `+23.6 %`. */
function signedPercent(ratio: number): string {
  return `${ratio >= 0 ? '+' : ''}${(ratio * 100).toFixed(1)} %`;
}

function percentOver(a: number, b: number): string {
  return signedPercent(a / b - 1);
}

function tracingDescription(mode: TracingMode): string {
  return `tracing ${mode === 'propagate' ? 'propagating, nothing recorded' : mode}`;
}

function runDescription(broker: BenchBroker, tracing: string): string {
  return `send path through the distributed stack on ${broker},${podsDescription()} ${tracing}, ${built ? 'built dist/' : 'sources through tsx'}, ${connections} connections, ${durationSeconds} s per load`;
}

/** Each process of the run that has exited, with its exit status and the tail of its output; '' if none. */
function exitedProcesses(services: Map<string, ManagedProcess>, others: ManagedProcess[]): string {
  const all = [
    ...services,
    ...others.map((other, index) => [`process ${index + 1} of the bench`, other] as const),
  ];
  return all
    .filter(([, managed]) => managed.child.exitCode !== null || managed.child.signalCode !== null)
    .map(
      ([name, managed]) =>
        `\n${name} exited (code ${managed.child.exitCode}, signal ${managed.child.signalCode}); its last output:\n${managed.output().slice(-4_000)}`,
    )
    .join('');
}

/**
 * What each service's resident memory is made of: the physical size of every V8 heap space, read from the
 * runtime instrumentation's gauges on its /metrics, and the rest (code, stacks, buffers, malloc).
 */
async function printHeapSpaces(ports: Record<string, number>, memory: Record<string, number>) {
  const spaces = ['new_space', 'old_space', 'code_space', 'large_object_space', 'new_large_object_space'];
  console.log(
    `\nMiB after the loads: rss, V8 heap (${spaces.join(', ')}), outside the heap; collections since start`,
  );
  for (const [name, port] of Object.entries(ports)) {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const physical = mebibytesBySpace(text, 'v8js_memory_heap_space_physical_size');
    const used = mebibytesBySpace(text, 'v8js_memory_heap_used');
    // Collections since the process started, by kind: how hard the generations' sizes make it work.
    const collections = [
      ...text.matchAll(/^v8js_gc_duration_(count|sum)\{[^}]*v8js_gc_type="(\w+)"[^}]*\} (\S+)/gm),
    ];
    const gc = (kind: string, field: string) =>
      Number(collections.find((match) => match[2] === kind && match[1] === field)?.[3] ?? 0);
    const heap = [...physical.values()].reduce((sum, size) => sum + size, 0);
    const rss = memory[name] ?? Number.NaN;
    console.log(
      `  ${name.padEnd(20)} rss ${rss.toFixed(0).padStart(4)}  heap ${heap.toFixed(0).padStart(4)} (${spaces.map((space) => (physical.get(space) ?? 0).toFixed(0)).join(' / ')}; old space in use ${(used.get('old_space') ?? 0).toFixed(0)})  outside ${(rss - heap).toFixed(0).padStart(3)}  GC ${['minor', 'major', 'incremental'].map((kind) => `${kind} ${gc(kind, 'count')} in ${(gc(kind, 'sum') * 1000).toFixed(0)} ms`).join(', ')}`,
    );
  }
}

/** One of the runtime instrumentation's per-space gauges, in MiB by heap space. */
function mebibytesBySpace(metrics: string, gauge: string): Map<string, number> {
  const pattern = new RegExp(
    `^${gauge}(?:_bytes)?\\{[^}]*v8js_heap_space_name="(\\w+)"[^}]*\\} (\\S+)`,
    'gm',
  );
  return new Map([...metrics.matchAll(pattern)].map((match) => [match[1]!, Number(match[2]) / 2 ** 20]));
}

/** Spans in one OTLP/HTTP JSON export (the exporter's default here); NaN for protobuf, which it does not decode. */
function countSpans(body: Buffer): number {
  const text = body.toString('latin1');
  return text.startsWith('{') ? text.split('"spanId"').length - 1 : Number.NaN;
}

const services = [
  'gateway',
  'gateway (429)',
  'messaging',
  'provider-connector',
  'webhook-dispatcher',
  'pipeline',
  'provider-sandbox',
  'broker',
  'postgres',
  'redis',
];

function podsDescription(): string {
  if (!memoryLimit) return '';
  const environment = Object.entries(podEnvironment ?? {}).map(([variable, value]) => `${variable}=${value}`);
  return ` each service in a ${memoryLimit} MiB memory cgroup${environment.length ? ` with ${environment.join(' ')}` : ''},`;
}

function printFigures(description: string, figures: LoadFigures[], memory: Record<string, number>): void {
  const tracing = figures.some((figure) => figure.spansPerRequest !== undefined);
  console.log(`\n${description}`);
  console.log(
    [
      'load'.padEnd(40),
      'req/s'.padStart(8),
      'p50'.padStart(6),
      'p99'.padStart(6),
      'ceiling'.padStart(9),
      'probe'.padStart(6),
    ].join(' ') +
      ['total', ...services].map((name) => name.slice(0, 10).padStart(11)).join('') +
      '  stmts' +
      (tracing ? '  spans  span KiB' : ''),
  );
  for (const figure of figures) {
    const ratio = figure.ceiling
      ? `${((figure.perSecond / figure.ceiling.perSecond) * 100).toFixed(1)} %`
      : '';
    const total = totalCpu(figure);
    const cell = (ms: number | undefined) => (ms === undefined ? '' : ms.toFixed(2)).padStart(11);
    console.log(
      [
        figure.load.padEnd(40),
        figure.perSecond.toFixed(0).padStart(8),
        `${figure.p50}`.padStart(6),
        `${figure.p99}`.padStart(6),
        ratio.padStart(9),
        (figure.probeMicros === undefined ? '' : `${figure.probeMicros}`).padStart(6),
      ].join(' ') +
        [total, ...services.map((name) => figure.cpuMsPerRequest[name])].map(cell).join('') +
        `  ${figure.statementsPerRequest === undefined ? '' : figure.statementsPerRequest.toFixed(1).padStart(5)}` +
        (figure.spansPerRequest === undefined
          ? ''
          : `  ${figure.spansPerRequest.toFixed(1).padStart(5)}  ${figure.spanKiBPerRequest!.toFixed(1).padStart(8)}`),
    );
    if (figure.ok !== figure.requests)
      console.log(`  ${figure.ok} of ${figure.requests} answered as expected (${figure.statuses ?? ''})`);
    const waits = figure.cpuWaitMsPerRequest;
    if (waits && Object.values(waits).some((ms) => ms > 0))
      console.log(
        `  waiting for a core, ms per request: ${services
          .filter((name) => waits[name] !== undefined && waits[name]! >= 0.005)
          .map((name) => `${name} ${waits[name]!.toFixed(2)}`)
          .join(', ')}`,
      );
  }
  console.log(
    `CPU ms per request by process (total: every process of the platform); probe: CPU µs of the speed probe's unit during the load (speed-probe.ts; higher is a slower host); memory after the loads:`,
  );
  console.log(
    services
      .filter((name) => memory[name] !== undefined)
      .map((name) => `${name} ${memory[name]!.toFixed(0)} MiB`)
      .join(', '),
  );
}
