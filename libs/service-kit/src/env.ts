import { z } from 'zod';

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
  logLevel: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  encryptionKey: z
    .string({ error: 'required: 32 random bytes in base64 (openssl rand -base64 32)' })
    .refine((value) => Buffer.from(value, 'base64').length === 32, {
      error: 'must be 32 bytes in base64 (openssl rand -base64 32)',
    }),
} as const;
