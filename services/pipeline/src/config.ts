import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const PipelineConfig = z.object({
  PIPELINE_PORT: env.port(8083),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  NATS_URL: env.url('nats://host:4222'),
  BUS_PREFIX: env.busPrefix,
  LOG_LEVEL: env.logLevel,
});
