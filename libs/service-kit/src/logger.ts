import { activeTraceIds } from '@inbox/telemetry';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

/** Anything that could carry a credential, wherever it sits in a logged object. */
export const redactedPaths = [
  'authorization',
  '*.authorization',
  'req.headers.authorization',
  'headers.authorization',
  'api_key',
  '*.api_key',
  'apiKey',
  '*.apiKey',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'access_token',
  '*.access_token',
  'password',
  '*.password',
  'config',
  '*.config',
  'credentials',
  '*.credentials',
];

export function createLogger(
  service: string,
  options: { level?: string; destination?: pino.DestinationStream } = {},
): Logger {
  return pino(
    {
      level: options.level ?? process.env.LOG_LEVEL ?? 'info',
      base: { service },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: { paths: redactedPaths, censor: '[redacted]' },
      formatters: { level: (label) => ({ level: label }) },
      // Every line written inside a traced operation carries its ids, so logs and traces join up.
      mixin: () => activeTraceIds() ?? {},
    },
    options.destination,
  );
}
