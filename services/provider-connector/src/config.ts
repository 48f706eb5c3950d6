import { maxProviderTimeoutMs } from '@inbox/contracts';
import { cidrListSetting } from '@inbox/outbound-http';
import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const ConnectorConfig = z.object({
  CONNECTOR_PORT: env.port(8081),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  BUS_URL: env.busUrl,
  BUS_PREFIX: env.busPrefix,
  ENCRYPTION_KEY: env.encryptionKey,
  PUBLIC_CONNECTOR_URL: z.url().default('http://127.0.0.1:8081'),
  /** Private ranges providers' base URLs may reach (e.g. a self-hosted provider on the internal network). */
  OUTBOUND_ALLOWED_CIDRS: cidrListSetting.default(''),
  // Bounded so the commands that wait on a provider call (their budgets are derived from the bound)
  // always outlast it.
  PROVIDER_TIMEOUT_MS: z.coerce
    .number()
    .int()
    .positive()
    .max(maxProviderTimeoutMs, { error: `must be at most ${maxProviderTimeoutMs}` })
    .default(maxProviderTimeoutMs),
  OUTBOX_RETENTION_HOURS: env.outboxRetentionHours,
  TRUST_PROXY: env.trustProxy,
  LOG_LEVEL: env.logLevel,
});
