import { z } from 'zod';
import type { TrustProxy } from './http-app.js';

/** Settings shared by every service process, each parsed the same way everywhere. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(0).max(65_535).default(fallback),
  url: (example: string) =>
    z.string({ error: `required, e.g. ${example}` }).min(1, { error: `required, e.g. ${example}` }),
  /** The message bus; its scheme picks the transport (connectBus). */
  busUrl: z
    .string({ error: 'required, e.g. nats://host:4222 or amqp://user:password@host:5672' })
    .regex(/^(nats|tls|amqps?):\/\/./, {
      error: 'must be a nats://, tls://, amqp:// or amqps:// URL, e.g. nats://host:4222',
    }),
  busPrefix: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/)
    .default(''),
  /**
   * OUTBOX_RETENTION_HOURS, of every service with an outbox: how long a published event stays in it (for
   * an operator reading what left) before the relay's pruner deletes it.
   */
  outboxRetentionHours: z.coerce.number().positive().default(24),
  /**
   * TRUST_PROXY, of every service a client outside the cluster reaches (through an ingress): Express's
   * `trust proxy`, a hop count, "true", or the proxies' addresses/CIDRs/names; unset, peers on loopback
   * and private networks (`defaultTrustedProxies`). Per-client limits count under the address it yields.
   */
  trustProxy: z
    .string()
    .optional()
    .transform((value): TrustProxy | undefined => {
      if (value === undefined || value === '') return undefined;
      if (value === 'true' || value === 'false') return value === 'true';
      return /^\d+$/.test(value) ? Number(value) : value;
    }),
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  encryptionKey: z
    .string({ error: 'required: 32 random bytes in base64 (openssl rand -base64 32)' })
    .refine((value) => Buffer.from(value, 'base64').length === 32, {
      error: 'must be 32 bytes in base64 (openssl rand -base64 32)',
    }),
} as const;
