import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const GatewayConfig = z.object({
  GATEWAY_PORT: env.port(8080),
  DATABASE_URL: env.url('postgres://user:pass@host:5432/inbox'),
  BUS_URL: env.busUrl,
  BUS_PREFIX: env.busPrefix,
  ADMIN_TOKEN: z.string({ error: 'required: the admin API bearer token' }).min(16, {
    error: 'must be at least 16 characters',
  }),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(60),
  REDIS_URL: z.string().optional(),
  TRUST_PROXY: env.trustProxy,
  LOG_LEVEL: env.logLevel,
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;
