import { configFromEnv, runService } from '@inbox/service-kit';
import { MessagingConfig } from './config.js';
import { messagingService } from './service.js';

const config = configFromEnv(MessagingConfig, 'messaging');
await runService(messagingService(), {
  databaseUrl: config.DATABASE_URL,
  busUrl: config.BUS_URL,
  busPrefix: config.BUS_PREFIX,
  port: config.MESSAGING_PORT,
  logLevel: config.LOG_LEVEL,
});
