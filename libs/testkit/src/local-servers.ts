import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { chown } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { requireBinary } from './binaries.js';
import { canConnect, freePort } from './ports.js';
import { startProcess } from './process.js';
import { waitFor } from './wait-for.js';

export interface LocalServer {
  url: string;
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
    async stop() {
      await server.stop('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
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

export async function startPostgres(): Promise<LocalServer> {
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

/** A short random token for isolating NATS subjects, stream names and Redis keys per test file. */
export function uniquePrefix(): string {
  return `t${Math.random().toString(36).slice(2, 10)}`;
}
