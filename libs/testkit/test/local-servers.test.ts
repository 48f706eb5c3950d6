import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { createDatabase, findBinary, MissingBinaryError, requireBinary } from '../src/index.js';

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
});
