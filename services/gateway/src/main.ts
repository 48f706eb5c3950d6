import { configFromEnv, runService } from '@inbox/service-kit';
import { GatewayConfig } from './config.js';
import { gatewayService } from './service.js';

const config = configFromEnv(GatewayConfig, 'gateway');
await runService(
  gatewayService({
    adminToken: config.ADMIN_TOKEN,
    rateLimitPerMinute: config.RATE_LIMIT_PER_MINUTE,
    redisUrl: config.REDIS_URL,
    trustProxy: config.TRUST_PROXY,
  }),
  {
    databaseUrl: config.DATABASE_URL,
    busUrl: config.BUS_URL,
    busPrefix: config.BUS_PREFIX,
    port: config.GATEWAY_PORT,
    logLevel: config.LOG_LEVEL,
  },
);
