import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { chown } from 'node:fs/promises';
import { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { requireBinary } from './binaries.js';
import { canConnect, freePort } from './ports.js';
import { startProcess } from './process.js';
import { waitFor } from './wait-for.js';

export interface LocalServer {
  url: string;
  /** The server's main process (its workers are its descendants), for the bench's CPU accounting. */
  pid?: number;
  stop(): Promise<void>;
}

function scratchDir(kind: string): string {
  return mkdtempSync(join(tmpdir(), `inbox-${kind}-`));
}

async function waitForPort(port: number, what: string, output: () => string): Promise<void> {
  try {
    await waitFor(() => canConnect(port), { timeoutMs: 20_000, what });
  } catch (error) {
    throw new Error(`${what} did not start:\n${output()}`, { cause: error });
  }
}

export async function startNats(): Promise<LocalServer> {
  const binary = requireBinary('nats-server');
  const port = await freePort();
  const dir = scratchDir('nats');
  const server = startProcess(binary, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir]);
  await waitForPort(port, `nats-server on port ${port}`, server.output);
  return {
    url: `nats://127.0.0.1:${port}`,
    pid: server.child.pid,
    async stop() {
      await server.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A nats-server that reads `configFile` (e.g. the one deploy/nats ships), with `env` holding the variables
 * the file references; the port, the loopback address and a scratch JetStream store come from flags,
 * which take precedence over the file.
 */
export async function startNatsWithConfig(
  configFile: string,
  env: Record<string, string>,
): Promise<LocalServer> {
  const binary = requireBinary('nats-server');
  const port = await freePort();
  const dir = scratchDir('nats');
  const server = startProcess(
    binary,
    ['-c', configFile, '-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dir],
    { env: { ...process.env, ...env } },
  );
  await waitForPort(port, `nats-server on port ${port} with ${configFile}`, server.output);
  return {
    url: `nats://127.0.0.1:${port}`,
    pid: server.child.pid,
    async stop() {
      await server.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function startRedis(): Promise<LocalServer> {
  const binary = requireBinary('redis-server');
  const port = await freePort();
  const dir = scratchDir('redis');
  const server = startProcess(binary, [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--save',
    '',
    '--appendonly',
    'no',
    '--dir',
    dir,
  ]);
  await waitForPort(port, `redis-server on port ${port}`, server.output);
  return {
    url: `redis://127.0.0.1:${port}`,
    pid: server.child.pid,
    async stop() {
      await server.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** True once the server on `port` answers the AMQP 0-9-1 protocol header with a method frame (connection.start). */
function answersAmqp(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = new Socket();
    const settle = (answered: boolean) => {
      socket.destroy();
      resolve(answered);
    };
    socket.setTimeout(1_000);
    socket.once('timeout', () => settle(false));
    socket.once('error', () => settle(false));
    socket.once('close', () => settle(false));
    socket.once('data', (chunk: Buffer) => settle(chunk[0] === 1));
    socket.connect(port, '127.0.0.1', () => socket.write(Buffer.from('AMQP\x00\x00\x09\x01', 'latin1')));
  });
}

/** Distinct free ports: asked one after another, since a port just handed out may be handed out again. */
async function freePorts(count: number, taken: number[] = []): Promise<number[]> {
  const ports: number[] = [];
  while (ports.length < count) {
    const port = await freePort();
    if (!ports.includes(port) && !taken.includes(port)) ports.push(port);
  }
  return ports;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export interface RabbitMQOptions {
  /** The AMQP port, e.g. to start a server again where its clients reconnect; a free one when absent. */
  port?: number;
}

/**
 * A RabbitMQ node of its own (Debian's rabbitmq-server, run without the wrapper that switches to the system
 * user): its own node name, Erlang cookie (its HOME), port mapper, distribution and AMQP ports on loopback,
 * data and logs in a scratch directory, no plugins. It never touches the machine's own node (5672/25672).
 */
export async function startRabbitMQ(options: RabbitMQOptions = {}): Promise<LocalServer> {
  const script = requireBinary('rabbitmq-server');
  const epmdBinary = requireBinary('epmd');
  const given = options.port ? [options.port] : [];
  const ports = await freePorts(given.length ? 2 : 3, given);
  const [epmdPort, distPort] = ports as [number, number];
  const amqpPort = options.port ?? ports[2]!;
  const dir = scratchDir('rabbitmq');
  const file = (name: string) => join(dir, name);
  writeFileSync(
    file('rabbitmq.conf'),
    [
      `listeners.tcp.1 = 127.0.0.1:${amqpPort}`,
      'log.console = true',
      'log.console.level = warning',
      'log.file = false',
    ].join('\n'),
  );
  writeFileSync(file('enabled_plugins'), '[].\n');
  // Replaces /etc/rabbitmq/rabbitmq-env.conf, which names the machine's node.
  writeFileSync(file('rabbitmq-env.conf'), '');
  // The machine's epmd (4369) is left alone: this node registers with a port mapper of its own.
  const epmd = startProcess(epmdBinary, ['-port', String(epmdPort), '-address', '127.0.0.1']);
  const inherited = Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith('RABBITMQ_') && !name.startsWith('ERL')),
  );
  const env = {
    ...inherited,
    HOME: dir,
    ERL_EPMD_PORT: String(epmdPort),
    ERL_EPMD_ADDRESS: '127.0.0.1',
    RABBITMQ_NODENAME: `rabbit-test-${randomBytes(4).toString('hex')}@localhost`,
    RABBITMQ_NODE_IP_ADDRESS: '127.0.0.1',
    RABBITMQ_NODE_PORT: String(amqpPort),
    RABBITMQ_DIST_PORT: String(distPort),
    RABBITMQ_SERVER_ADDITIONAL_ERL_ARGS: '-kernel inet_dist_use_interface {127,0,0,1}',
    RABBITMQ_CONF_ENV_FILE: file('rabbitmq-env.conf'),
    RABBITMQ_CONFIG_FILE: file('rabbitmq.conf'),
    RABBITMQ_ADVANCED_CONFIG_FILE: file('advanced.config'),
    RABBITMQ_ENABLED_PLUGINS_FILE: file('enabled_plugins'),
    RABBITMQ_MNESIA_BASE: file('mnesia'),
    RABBITMQ_LOG_BASE: file('log'),
    RABBITMQ_PID_FILE: file('rabbitmq.pid'),
    // As the compose file and the dev manifests run it: schedulers the OS may move between cores. RabbitMQ
    // binds each to a core of its own by default, and on a host whose cores the services share, a
    // scheduler whose core is busy waits for it (bench/RESULTS.md, thirty-first session).
    RABBITMQ_SCHEDULER_BIND_TYPE: 'u',
  };
  let server: ReturnType<typeof startProcess> | undefined;
  // The script runs the Erlang VM as its child; should the script not pass on a stop, the VM is ended by pid.
  let vmPid: number | undefined;
  const stop = async () => {
    await server?.stop('SIGTERM', 20_000);
    if (vmPid && alive(vmPid)) process.kill(vmPid, 'SIGKILL');
    await epmd.stop('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await waitForPort(epmdPort, `epmd on port ${epmdPort}`, epmd.output);
    server = startProcess(script, [], { env });
    await waitFor(() => answersAmqp(amqpPort), {
      timeoutMs: 60_000,
      what: `rabbitmq-server on port ${amqpPort}`,
    });
    try {
      vmPid = Number(readFileSync(file('rabbitmq.pid'), 'utf8').trim()) || undefined;
    } catch {
      // No pid file: the script's own stop is all there is.
    }
  } catch (error) {
    const output = server?.output() ?? '';
    await stop();
    throw new Error(`rabbitmq-server did not start:\n${output}`, { cause: error });
  }
  return { url: `amqp://guest:guest@127.0.0.1:${amqpPort}`, pid: server?.child.pid, stop };
}

// Postgres refuses to run as root, so as root the cluster belongs to (and runs as) the postgres user.
function postgresIdentity(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    throw new Error(
      'Running as root, Postgres must run as the "postgres" user, which does not exist. Install it with: apt-get install -y postgresql',
    );
  }
}

export interface PostgresOptions {
  /** Loads pg_stat_statements, so a bench can count the statements a request costs. */
  statementStats?: boolean;
  /** With statementStats, also counts and times each statement's planning (a little dearer to keep). */
  planningStats?: boolean;
}

export async function startPostgres(options: PostgresOptions = {}): Promise<LocalServer> {
  const initdb = requireBinary('initdb');
  const postgres = requireBinary('postgres');
  const identity = postgresIdentity();
  const dir = scratchDir('pg');
  if (identity) await chown(dir, identity.uid, identity.gid);
  const dataDir = join(dir, 'data');
  execFileSync(
    initdb,
    ['-D', dataDir, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--no-locale', '--no-sync'],
    {
      ...identity,
      stdio: 'pipe',
    },
  );
  const port = await freePort();
  // Durability settings are off because a test cluster is thrown away; behaviour is otherwise stock.
  const server = startProcess(
    postgres,
    [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-h',
      '127.0.0.1',
      '-k',
      dir,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=400',
      ...(options.statementStats ? ['-c', 'shared_preload_libraries=pg_stat_statements'] : []),
      ...(options.statementStats && options.planningStats
        ? ['-c', 'pg_stat_statements.track_planning=on']
        : []),
    ],
    { ...identity },
  );
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  try {
    await waitFor(
      async () => {
        const client = new pg.Client({ connectionString: url });
        try {
          await client.connect();
          await client.query('select 1');
          return true;
        } finally {
          await client.end().catch(() => undefined);
        }
      },
      { timeoutMs: 30_000, what: `postgres on port ${port}` },
    );
  } catch (error) {
    await server.stop('SIGKILL');
    throw new Error(`postgres did not start:\n${server.output()}`, { cause: error });
  }
  return {
    url,
    pid: server.child.pid,
    async stop() {
      // SIGINT is Postgres' fast shutdown: it ends sessions and exits without waiting for clients.
      await server.stop('SIGINT');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

let databaseCounter = 0;

/** Creates an empty database on the server behind `adminUrl` and returns its URL. */
export async function createDatabase(adminUrl: string, prefix = 't'): Promise<string> {
  const name = `${prefix}_${process.pid}_${Date.now().toString(36)}_${databaseCounter++}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`create database "${name}"`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A short random token for isolating NATS subjects and streams, RabbitMQ exchanges and queues, and Redis keys per test file. */
export function uniquePrefix(): string {
  return `t${Math.random().toString(36).slice(2, 10)}`;
}

/** A private server of the named broker, for the runs that can take either (the stack, the bench). */
export function startBroker(broker: 'nats' | 'rabbitmq'): Promise<LocalServer> {
  return broker === 'rabbitmq' ? startRabbitMQ() : startNats();
}
