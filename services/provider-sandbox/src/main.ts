import { configFromEnv, createLogger, env, listen, stopOnSignals } from '@inbox/service-kit';
import { z } from 'zod';
import { createSandbox } from './sandbox.js';

const config = configFromEnv(
  z.object({ SANDBOX_PORT: env.port(8090), SANDBOX_HOST: z.string().default('0.0.0.0') }),
  'provider-sandbox',
);
const logger = createLogger('provider-sandbox');
const sandbox = createSandbox();
const http = await listen(sandbox.app, config.SANDBOX_PORT, config.SANDBOX_HOST);
logger.info({ port: http.port }, 'started');
stopOnSignals({ stop: () => http.close() }, logger);
