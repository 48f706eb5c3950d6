export { clientAddress, clientNetwork } from './client-address.js';
export { ConfigError, configFromEnv, loadConfig } from './config.js';
export { env } from './env.js';
export {
  answerJson,
  createHttpApp,
  defaultTrustedProxies,
  errorResponder,
  finishHttpApp,
  type HttpAppOptions,
  inRequestContext,
  jsonBody,
  type ReadinessChecks,
  type TrustProxy,
} from './http-app.js';
export { listen, type RequestBounds, type RunningServer } from './http-server.js';
export { type Stoppable, stopGraceMs, stopOnSignals } from './lifecycle.js';
export { createLogger, type Logger, redactedPaths } from './logger.js';
export { Periodic } from './periodic.js';
export { sameSecret } from './same-secret.js';
export { SecretBox } from './secret-box.js';
export {
  type HostedService,
  type HostSettings,
  hostService,
  outboxRelay,
  prepareSchema,
  runService,
  type ServiceDefinition,
  type ServiceDeps,
  type ServiceEngine,
} from './service-host.js';
