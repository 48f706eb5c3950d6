import { configFromEnv, runService } from '@inbox/service-kit';
import { MessagingConfig } from './config.js';
import { messagingService } from './service.js';

const config = configFromEnv(MessagingConfig, 'messaging');
await runService(
  messagingService({
    outboxRetentionHours: config.OUTBOX_RETENTION_HOURS,
    reconcileAfterMinutes: config.PENDING_RECONCILE_AFTER_MINUTES,
  }),
  {
    databaseUrl: config.DATABASE_URL,
    busUrl: config.BUS_URL,
    busPrefix: config.BUS_PREFIX,
    port: config.MESSAGING_PORT,
    logLevel: config.LOG_LEVEL,
  },
);
