// Loaded with `node --import @inbox/telemetry/register` so instrumentation is in place before any
// application module (express, pg, ioredis, pino) is imported. The ESM loader hook lets the
// instrumentations patch modules that are loaded with `import`, not only with `require`.
import { register } from 'node:module';
import { startTelemetry } from './sdk.js';

register('@opentelemetry/instrumentation/hook.mjs', import.meta.url);
startTelemetry();
