import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type LocalServer, startNats, startPostgres, startRedis } from './local-servers.js';

export interface Infra {
  natsUrl: string;
  /** A superuser URL; each test file creates its own database from it. */
  postgresAdminUrl: string;
  redisUrl: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    infra: Infra;
  }
}

/**
 * Starts one NATS, one Postgres and one Redis for the whole test run on free loopback ports (or uses
 * NATS_URL / DATABASE_URL / REDIS_URL when given), and stops what it started at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: LocalServer[] = [];
  const use = async (given: string | undefined, start: () => Promise<LocalServer>): Promise<string> => {
    if (given) return given;
    const server = await start();
    started.push(server);
    return server.url;
  };
  try {
    const [natsUrl, postgresAdminUrl, redisUrl] = await Promise.all([
      use(process.env.NATS_URL, startNats),
      use(process.env.DATABASE_URL, startPostgres),
      use(process.env.REDIS_URL, startRedis),
    ]);
    project.provide('infra', { natsUrl, postgresAdminUrl, redisUrl });
  } catch (error) {
    await Promise.all(started.map((server) => server.stop()));
    throw error;
  }
  return async () => {
    await Promise.all(started.map((server) => server.stop()));
  };
}
