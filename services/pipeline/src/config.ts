import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const PipelineConfig = z.object({
  PIPELINE_PORT: env.port(8083),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  BUS_URL: env.busUrl,
  BUS_PREFIX: env.busPrefix,
  OUTBOX_RETENTION_HOURS: env.outboxRetentionHours,
  LOG_LEVEL: env.logLevel,
});
