import { fileURLToPath } from 'node:url';
import type { ServiceDefinition } from '@inbox/service-kit';

/** Owns funnels, stages and lead moves. For now it boots, migrates its schema and reports health. */
export function pipelineService(): ServiceDefinition {
  return {
    name: 'pipeline',
    schema: 'pipeline',
    migrationsDir: fileURLToPath(new URL('../migrations', import.meta.url)),
    outbox: true,
    create: () => ({ start: async () => undefined, stop: async () => undefined }),
  };
}
