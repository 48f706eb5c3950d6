import { env } from '@inbox/service-kit';
import { z } from 'zod';
import { DEFAULT_SENT_LOG_LIMIT } from './sent-log.js';

export const SandboxConfig = z.object({
  SANDBOX_PORT: env.port(8090),
  SANDBOX_HOST: z.string().default('0.0.0.0'),
  /** `allow` when the connector the sandbox calls back serves plain HTTP (local stacks); real providers refuse. */
  SANDBOX_HTTP_CALLBACKS: z.enum(['allow', 'refuse']).default('refuse'),
  /** How many sends the control API's sent log keeps, newest last; older ones are let go and counted. */
  SANDBOX_SENT_LOG_LIMIT: z.coerce.number().int().min(1).default(DEFAULT_SENT_LOG_LIMIT),
  /** The providers' redelivery waits times this: 1 is their own pace (Evolution's first wait is 5 s). */
  SANDBOX_REDELIVERY_DELAY_SCALE: z.coerce.number().min(0).max(1_000).default(1),
});
