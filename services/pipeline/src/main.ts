import { configFromEnv, runService } from '@inbox/service-kit';
import { PipelineConfig } from './config.js';
import { pipelineService } from './service.js';

const config = configFromEnv(PipelineConfig, 'pipeline');
await runService(pipelineService({ outboxRetentionHours: config.OUTBOX_RETENTION_HOURS }), {
  databaseUrl: config.DATABASE_URL,
  busUrl: config.BUS_URL,
  busPrefix: config.BUS_PREFIX,
  port: config.PIPELINE_PORT,
  logLevel: config.LOG_LEVEL,
});
