import { env } from '@inbox/service-kit';
import { z } from 'zod';

export const SandboxConfig = z.object({
  SANDBOX_PORT: env.port(8090),
  SANDBOX_HOST: z.string().default('0.0.0.0'),
});
