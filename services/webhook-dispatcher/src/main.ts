import { configFromEnv, runService } from '@inbox/service-kit';
import { allowedCidrs, DispatcherConfig } from './config.js';
import { dispatcherService } from './service.js';

const config = configFromEnv(DispatcherConfig, 'webhook-dispatcher');
await runService(
  dispatcherService({
    encryptionKey: config.ENCRYPTION_KEY,
    allowedCidrs: allowedCidrs(config),
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    retrySchedule: config.WEBHOOK_RETRY_SCHEDULE,
    disableAfterHours: config.WEBHOOK_DISABLE_AFTER_HOURS,
    secretGraceHours: config.WEBHOOK_SECRET_GRACE_HOURS,
    concurrency: config.WEBHOOK_CONCURRENCY,
    perEndpointConcurrency: config.WEBHOOK_PER_ENDPOINT_CONCURRENCY,
    retentionDays: config.WEBHOOK_RETENTION_DAYS,
    bodyCopies: config.WEBHOOK_BODY_COPIES,
  }),
  {
    databaseUrl: config.DATABASE_URL,
    busUrl: config.BUS_URL,
    busPrefix: config.BUS_PREFIX,
    port: config.DISPATCHER_PORT,
    logLevel: config.LOG_LEVEL,
  },
);
