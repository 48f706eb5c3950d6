import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import {
  createDatabase,
  findBinary,
  MissingBinaryError,
  requireBinary,
  startRabbitMQ,
} from '../src/index.js';

/** A field of /proc/<path>/status; undefined once the process has exited (others come and go meanwhile). */
function statusField(path: string, field: string): string | undefined {
  try {
    return readFileSync(`/proc/${path}/status`, 'utf8')
      .split('\n')
      .find((line) => line.startsWith(`${field}:`))
      ?.split(':')[1]
      ?.trim();
  } catch {
    return undefined;
  }
}

/** The Erlang VM (beam.smp) among the descendants of `root`. */
function erlangVm(root: number): number | undefined {
  const parents = new Map<number, number>();
  for (const name of readdirSync('/proc').filter((entry) => /^\d+$/.test(entry))) {
    const ppid = Number(statusField(name, 'PPid') ?? Number.NaN);
    if (!Number.isNaN(ppid)) parents.set(Number(name), ppid);
  }
  const descends = (pid: number): boolean => {
    for (let at: number | undefined = pid; at; at = parents.get(at)) if (at === root) return true;
    return false;
  };
  return [...parents.keys()].find((pid) => descends(pid) && statusField(String(pid), 'Name') === 'beam.smp');
}

describe('testkit', () => {
  it('gives each caller a fresh, empty database on the shared server', async () => {
    const { postgresAdminUrl } = inject('infra');
    const [a, b] = await Promise.all([createDatabase(postgresAdminUrl), createDatabase(postgresAdminUrl)]);
    expect(a).not.toEqual(b);
    const client = new pg.Client({ connectionString: a });
    await client.connect();
    const { rows } = await client.query<{ n: number }>(
      "select count(*)::int as n from information_schema.tables where table_schema = 'public'",
    );
    await client.end();
    expect(rows[0]?.n).toBe(0);
  });

  it('names the install command when a server binary is missing', () => {
    expect(() => requireBinary('nats-server', ['/nonexistent'])).toThrowError(MissingBinaryError);
    expect(() => requireBinary('nats-server', ['/nonexistent'])).toThrowError(
      /apt-get install -y nats-server/,
    );
    expect(() => requireBinary('initdb', ['/nonexistent'])).toThrowError(/apt-get install -y postgresql/);
    expect(() => requireBinary('rabbitmq-server', ['/nonexistent'])).toThrowError(
      /apt-get install -y rabbitmq-server/,
    );
  });

  it("finds Debian's RabbitMQ server script, not the wrapper that runs it as the system's rabbitmq user", () => {
    const found = findBinary('rabbitmq-server');
    expect(found).toBeDefined();
    expect(found).not.toBe('/usr/sbin/rabbitmq-server');
  });

  it("runs RabbitMQ's schedulers unbound, free to move to whichever core is idle", async () => {
    const rabbitmq = await startRabbitMQ();
    try {
      const vm = erlangVm(rabbitmq.pid!);
      expect(vm).toBeDefined();
      const allowed = statusField(String(vm), 'Cpus_allowed_list');
      const schedulers = readdirSync(`/proc/${vm}/task`).filter((task) =>
        /^\d+_scheduler$/.test(readFileSync(`/proc/${vm}/task/${task}/comm`, 'utf8').trim()),
      );
      expect(schedulers.length).toBeGreaterThan(0);
      // Bound ("db", RabbitMQ's default), each would be allowed one core of its own.
      for (const task of schedulers)
        expect(statusField(`${vm}/task/${task}`, 'Cpus_allowed_list')).toBe(allowed);
    } finally {
      await rabbitmq.stop();
    }
  });
});
