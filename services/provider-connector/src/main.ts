import { configFromEnv, runService } from '@inbox/service-kit';
import { ConnectorConfig } from './config.js';
import { connectorService } from './service.js';

const config = configFromEnv(ConnectorConfig, 'provider-connector');
await runService(
  connectorService({
    encryptionKey: config.ENCRYPTION_KEY,
    publicConnectorUrl: config.PUBLIC_CONNECTOR_URL,
    allowedCidrs: config.OUTBOUND_ALLOWED_CIDRS,
    providerTimeoutMs: config.PROVIDER_TIMEOUT_MS,
    outboxRetentionHours: config.OUTBOX_RETENTION_HOURS,
    trustProxy: config.TRUST_PROXY,
  }),
  {
    databaseUrl: config.DATABASE_URL,
    busUrl: config.BUS_URL,
    busPrefix: config.BUS_PREFIX,
    port: config.CONNECTOR_PORT,
    logLevel: config.LOG_LEVEL,
  },
);
