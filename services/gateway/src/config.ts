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
  // Express's `trust proxy`: a hop count, "true", or the proxies' addresses/CIDRs/names; unset, peers on
  // loopback and private networks are trusted. Per-client limits count under the address it yields.
  TRUST_PROXY: z
    .string()
    .optional()
    .transform((value) => {
      if (value === undefined || value === '') return undefined;
      if (value === 'true' || value === 'false') return value === 'true';
      return /^\d+$/.test(value) ? Number(value) : value;
    }),
  LOG_LEVEL: env.logLevel,
});
export type GatewayConfig = z.infer<typeof GatewayConfig>;
