import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const SandboxConfig = z.object({
  SANDBOX_PORT: env.port(8090),
  SANDBOX_HOST: z.string().default('0.0.0.0'),
  /** `allow` when the connector the sandbox calls back serves plain HTTP (local stacks); real providers refuse. */
  SANDBOX_HTTP_CALLBACKS: z.enum(['allow', 'refuse']).default('refuse'),
});
