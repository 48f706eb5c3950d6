import { configFromEnv, createLogger, listen, stopOnSignals } from '@inbox/service-kit';
import { SandboxConfig } from './config.js';
import { createSandbox } from './sandbox.js';

const config = configFromEnv(SandboxConfig, 'provider-sandbox');
const logger = createLogger('provider-sandbox');
const sandbox = createSandbox({
  httpCallbacks: config.SANDBOX_HTTP_CALLBACKS,
  sentLogLimit: config.SANDBOX_SENT_LOG_LIMIT,
  redeliveryDelayScale: config.SANDBOX_REDELIVERY_DELAY_SCALE,
});
const http = await listen(sandbox.app, config.SANDBOX_PORT, config.SANDBOX_HOST);
logger.info({ port: http.port }, 'started');
stopOnSignals({ stop: () => http.close() }, logger);
