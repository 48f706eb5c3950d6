import type {} from 'vitest';
import type { TestProject } from 'vitest/node';
import { type LocalServer, startNats, startPostgres, startRabbitMQ, startRedis } from './local-servers.js';

export interface Infra {
  natsUrl: string;
  /** A superuser URL; each test file creates its own database from it. */
  postgresAdminUrl: string;
  redisUrl: string;
  /** A RabbitMQ node for the RabbitMQ transport's tests; test files isolate themselves with a bus prefix. */
  rabbitmqUrl: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    infra: Infra;
  }
}

/**
 * Starts one NATS, one Postgres, one Redis and one RabbitMQ for the whole test run on free loopback ports
 * (or uses NATS_URL / DATABASE_URL / REDIS_URL / RABBITMQ_URL when given), and stops what it started at the end.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const started: LocalServer[] = [];
  const use = async (given: string | undefined, start: () => Promise<LocalServer>): Promise<string> => {
    if (given) return given;
    const server = await start();
    started.push(server);
    return server.url;
  };
  // Settled, not raced: when one server fails, the others are let finish starting so they can be stopped.
  const urls = await Promise.allSettled([
    use(process.env.NATS_URL, startNats),
    use(process.env.DATABASE_URL, startPostgres),
    use(process.env.REDIS_URL, startRedis),
    use(process.env.RABBITMQ_URL, () => startRabbitMQ()),
  ]);
  const failed = urls.find((url) => url.status === 'rejected');
  if (failed) {
    await Promise.all(started.map((server) => server.stop()));
    throw failed.reason;
  }
  const [natsUrl, postgresAdminUrl, redisUrl, rabbitmqUrl] = urls.map((url) =>
    url.status === 'fulfilled' ? url.value : '',
  ) as [string, string, string, string];
  project.provide('infra', { natsUrl, postgresAdminUrl, redisUrl, rabbitmqUrl });
  return async () => {
    await Promise.all(started.map((server) => server.stop()));
  };
}
