// Fails fast, before any test runs, when a server binary the tests need is missing, and says how to install it.
import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const needed = {
  'nats-server': 'apt-get install -y nats-server',
  'redis-server': 'apt-get install -y redis-server',
  postgres: 'apt-get install -y postgresql',
  initdb: 'apt-get install -y postgresql',
  'rabbitmq-server': 'apt-get install -y rabbitmq-server',
  chromium: 'apt-get install -y chromium',
};
const pgRoot = '/usr/lib/postgresql';
const pgDirs = existsSync(pgRoot) ? readdirSync(pgRoot).map((v) => join(pgRoot, v, 'bin')) : [];
// Debian keeps the RabbitMQ server script (not its user-switching wrapper in /usr/sbin) here.
const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/sbin', '/usr/lib/rabbitmq/bin', ...pgDirs];
const missing = Object.entries(needed).filter(
  ([bin]) => !dirs.some((dir) => dir && existsSync(join(dir, bin))),
);
const given = {
  'nats-server': 'NATS_URL',
  'redis-server': 'REDIS_URL',
  postgres: 'DATABASE_URL',
  initdb: 'DATABASE_URL',
  'rabbitmq-server': 'RABBITMQ_URL',
  chromium: 'CHROMIUM_PATH',
};
const reallyMissing = missing.filter(([bin]) => !process.env[given[bin]]);
if (reallyMissing.length > 0) {
  const commands = [...new Set(reallyMissing.map(([, cmd]) => cmd))];
  console.error(
    `The tests start real NATS, Postgres, Redis and RabbitMQ servers, and check the docs page and the panel in a headless Chromium. Missing: ${reallyMissing.map(([b]) => b).join(', ')}.`,
  );
  console.error(`Install with (as root): apt-get update && ${commands.join(' && ')}`);
  console.error(
    'Or point the tests at running servers with NATS_URL, DATABASE_URL, REDIS_URL and RABBITMQ_URL, and at a Chromium with CHROMIUM_PATH.',
  );
  process.exit(1);
}
