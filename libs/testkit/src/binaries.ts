import { existsSync, readdirSync } from 'node:fs';
import { delimiter, join } from 'node:path';

/** What a fresh Debian or Ubuntu machine needs for each server the tests start. */
export const installCommands = {
  'nats-server': 'apt-get install -y nats-server',
  'redis-server': 'apt-get install -y redis-server',
  postgres: 'apt-get install -y postgresql',
  initdb: 'apt-get install -y postgresql',
  pg_ctl: 'apt-get install -y postgresql',
  'rabbitmq-server': 'apt-get install -y rabbitmq-server',
  // Erlang's port mapper, which the RabbitMQ package brings along with Erlang.
  epmd: 'apt-get install -y rabbitmq-server',
} as const;

export type ServerBinary = keyof typeof installCommands;

export class MissingBinaryError extends Error {
  override name = 'MissingBinaryError';
  constructor(readonly binary: ServerBinary) {
    super(
      `${binary} was not found on PATH (nor in /usr/lib/postgresql/*/bin or /usr/lib/rabbitmq/bin). The tests start real servers; install it with: ${installCommands[binary]}`,
    );
  }
}

// Debian keeps the Postgres server binaries off PATH, in a versioned directory.
function postgresBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .sort((a, b) => Number(b) - Number(a))
    .map((version) => join(root, version, 'bin'));
}

// Debian's /usr/sbin/rabbitmq-server is a wrapper that, run as root, switches to the rabbitmq user, its home
// and its Erlang cookie (those of the machine's own node); the server script itself lives here, and is
// searched first so a test node never borrows the system node's identity.
const rabbitmqBinDir = '/usr/lib/rabbitmq/bin';

export function defaultSearchDirs(): string[] {
  return [
    rabbitmqBinDir,
    ...(process.env.PATH ?? '').split(delimiter),
    '/usr/sbin',
    '/usr/local/sbin',
    ...postgresBinDirs(),
  ];
}

export function findBinary(binary: ServerBinary, dirs = defaultSearchDirs()): string | undefined {
  for (const dir of dirs) {
    const candidate = join(dir, binary);
    if (dir && existsSync(candidate)) return candidate;
  }
  return undefined;
}

export function requireBinary(binary: ServerBinary, dirs = defaultSearchDirs()): string {
  const found = findBinary(binary, dirs);
  if (!found) throw new MissingBinaryError(binary);
  return found;
}
