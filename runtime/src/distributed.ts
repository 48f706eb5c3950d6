import { fileURLToPath } from 'node:url';
import { stopGraceMs } from '@inbox/service-kit';
import { type ManagedProcess, startProcess, waitFor } from '@inbox/testkit';
import { localConnectorCidrs } from './settings.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

export interface StackConfig {
  /** nats://… or amqp://…: the scheme picks the transport of every service. */
  busUrl: string;
  databaseUrl: string;
  redisUrl?: string;
  busPrefix?: string;
  ports: {
    gateway: number;
    connector: number;
    messaging: number;
    pipeline: number;
    dispatcher: number;
    sandbox: number;
  };
  adminToken: string;
  encryptionKey: string;
  publicConnectorUrl?: string;
  rateLimitPerMinute?: number;
  /** OUTBOUND_ALLOWED_CIDRS of the connector and the dispatcher; with the sandbox on, the connector's is loopback when unset. */
  outboundAllowedCidrs?: string;
  webhookTimeoutMs?: number;
  webhookRetrySchedule?: string;
  webhookRetentionDays?: number;
  /** OUTBOX_RETENTION_HOURS of every service with an outbox. */
  outboxRetentionHours?: number;
  pendingReconcileAfterMinutes?: number;
  logLevel?: string;
  /** Added to every process's environment (e.g. OTEL_EXPORTER_OTLP_ENDPOINT). */
  extraEnv?: Record<string, string>;
  /** Node flags for one service by name (e.g. the bench's `--cpu-prof`). */
  nodeArgs?: Record<string, string[]>;
  /**
   * A command that starts one service's Node process by name, given its command line as its last
   * arguments (e.g. the bench's memory-limited cgroup, which must hold the process before V8 sizes its heap).
   */
  launchers?: Record<string, string[]>;
  /** Runs each service's compiled `dist/main.js` (after `npm run build`), as the images do, not its sources. */
  built?: boolean;
  onOutput?: (service: string, chunk: string) => void;
}

export interface ServiceProcessSpec {
  name: string;
  entry: string;
  port: number;
  env: Record<string, string>;
  nodeArgs?: string[];
  launcher?: string[];
  built?: boolean;
}

// A setting left unset stays unset, so the service's own config schema gives its default.
const optional = (name: string, value: string | number | undefined): Record<string, string> =>
  value === undefined ? {} : { [name]: String(value) };

/** The processes of the distributed mode: the five services and, when its port is not 0, the sandbox. */
export function serviceProcessSpecs(config: StackConfig): ServiceProcessSpec[] {
  const common = {
    BUS_URL: config.busUrl,
    DATABASE_URL: config.databaseUrl,
    BUS_PREFIX: config.busPrefix ?? '',
    LOG_LEVEL: config.logLevel ?? 'info',
  };
  const specs: ServiceProcessSpec[] = [
    {
      name: 'gateway',
      entry: 'services/gateway/src/main.ts',
      port: config.ports.gateway,
      env: {
        ...common,
        GATEWAY_PORT: String(config.ports.gateway),
        ADMIN_TOKEN: config.adminToken,
        ...optional('RATE_LIMIT_PER_MINUTE', config.rateLimitPerMinute),
        ...(config.redisUrl ? { REDIS_URL: config.redisUrl } : {}),
      },
    },
    {
      name: 'messaging',
      entry: 'services/messaging/src/main.ts',
      port: config.ports.messaging,
      env: {
        ...common,
        MESSAGING_PORT: String(config.ports.messaging),
        ...optional('OUTBOX_RETENTION_HOURS', config.outboxRetentionHours),
        ...optional('PENDING_RECONCILE_AFTER_MINUTES', config.pendingReconcileAfterMinutes),
      },
    },
    {
      name: 'provider-connector',
      entry: 'services/provider-connector/src/main.ts',
      port: config.ports.connector,
      env: {
        ...common,
        CONNECTOR_PORT: String(config.ports.connector),
        ENCRYPTION_KEY: config.encryptionKey,
        PUBLIC_CONNECTOR_URL: config.publicConnectorUrl ?? `http://127.0.0.1:${config.ports.connector}`,
        OUTBOUND_ALLOWED_CIDRS: localConnectorCidrs(config.outboundAllowedCidrs, config.ports.sandbox !== 0),
        ...optional('OUTBOX_RETENTION_HOURS', config.outboxRetentionHours),
      },
    },
    {
      name: 'pipeline',
      entry: 'services/pipeline/src/main.ts',
      port: config.ports.pipeline,
      env: {
        ...common,
        PIPELINE_PORT: String(config.ports.pipeline),
        ...optional('OUTBOX_RETENTION_HOURS', config.outboxRetentionHours),
      },
    },
    {
      name: 'webhook-dispatcher',
      entry: 'services/webhook-dispatcher/src/main.ts',
      port: config.ports.dispatcher,
      env: {
        ...common,
        DISPATCHER_PORT: String(config.ports.dispatcher),
        ENCRYPTION_KEY: config.encryptionKey,
        ...optional('OUTBOUND_ALLOWED_CIDRS', config.outboundAllowedCidrs),
        ...optional('WEBHOOK_TIMEOUT_MS', config.webhookTimeoutMs),
        ...optional('WEBHOOK_RETRY_SCHEDULE', config.webhookRetrySchedule),
        ...optional('WEBHOOK_RETENTION_DAYS', config.webhookRetentionDays),
      },
    },
  ];
  if (config.ports.sandbox !== 0) {
    specs.unshift({
      name: 'provider-sandbox',
      entry: 'services/provider-sandbox/src/main.ts',
      port: config.ports.sandbox,
      // The connector serves plain HTTP here: the sandbox takes http callbacks real providers refuse.
      env: {
        SANDBOX_PORT: String(config.ports.sandbox),
        SANDBOX_HOST: '127.0.0.1',
        SANDBOX_HTTP_CALLBACKS: 'allow',
      },
    });
  }
  return specs.map((spec) => ({
    ...spec,
    env: { ...spec.env, OTEL_SERVICE_NAME: spec.name, ...config.extraEnv },
    ...(config.nodeArgs?.[spec.name] ? { nodeArgs: config.nodeArgs[spec.name] } : {}),
    ...(config.launchers?.[spec.name] ? { launcher: config.launchers[spec.name] } : {}),
    ...(config.built ? { built: true } : {}),
  }));
}

/** Starts one service process, from its TypeScript sources or its build (`built`), and waits until it reports ready. */
export async function startServiceProcess(
  spec: ServiceProcessSpec,
  onOutput?: (service: string, chunk: string) => void,
): Promise<ManagedProcess> {
  const nodeCommandLine = [
    process.execPath,
    ...(spec.nodeArgs ?? []),
    // From the sources: TypeScript through tsx, workspace packages by their `source` condition.
    ...(spec.built ? [] : ['--conditions=source', '--import', 'tsx']),
    '--import',
    '@inbox/telemetry/register',
    spec.built ? spec.entry.replace('/src/', '/dist/').replace(/\.ts$/, '.js') : spec.entry,
  ];
  const [command, ...args] = [...(spec.launcher ?? []), ...nodeCommandLine] as [string, ...string[]];
  const child = startProcess(command, args, {
    cwd: repoRoot,
    env: { ...process.env, ...spec.env },
    onOutput: onOutput ? (chunk) => onOutput(spec.name, chunk) : undefined,
  });
  try {
    await waitFor(
      async () => {
        if (child.child.exitCode !== null)
          throw new Error(`${spec.name} exited with ${child.child.exitCode}`);
        const response = await fetch(`http://127.0.0.1:${spec.port}/readyz`).catch(() => undefined);
        return response?.ok === true;
      },
      { timeoutMs: 60_000, intervalMs: 100, what: `${spec.name} to be ready` },
    );
  } catch (error) {
    await child.stop('SIGKILL');
    throw new Error(`${spec.name} did not become ready:\n${child.output()}`, { cause: error });
  }
  return child;
}

export interface RunningStack {
  processes: Map<string, ManagedProcess>;
  specs: Map<string, ServiceProcessSpec>;
  gatewayUrl: string;
  sandboxUrl: string | undefined;
  /** Starts a stopped service again with the same settings. */
  restart(name: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startStack(config: StackConfig): Promise<RunningStack> {
  const specs = new Map(serviceProcessSpecs(config).map((spec) => [spec.name, spec]));
  const processes = new Map<string, ManagedProcess>();
  const stop = async () => {
    await Promise.all([...processes.values()].map((child) => child.stop('SIGTERM', stopGraceMs + 5_000)));
  };
  try {
    // Started side by side: each waits for its own readiness; none depends on another to start.
    const started = await Promise.allSettled(
      [...specs.values()].map(async (spec) =>
        processes.set(spec.name, await startServiceProcess(spec, config.onOutput)),
      ),
    );
    const failed = started.find((result): result is PromiseRejectedResult => result.status === 'rejected');
    if (failed) throw failed.reason;
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    processes,
    specs,
    gatewayUrl: `http://127.0.0.1:${config.ports.gateway}`,
    sandboxUrl: config.ports.sandbox === 0 ? undefined : `http://127.0.0.1:${config.ports.sandbox}`,
    async restart(name) {
      processes.set(name, await startServiceProcess(specs.get(name)!, config.onOutput));
    },
    stop,
  };
}
