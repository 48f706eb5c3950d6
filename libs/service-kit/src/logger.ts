import { activeTraceIds } from '@inbox/telemetry';
import pino, { type Logger } from 'pino';

export type { Logger } from 'pino';

// Key names that carry credentials anywhere in our code or in the providers' wire formats.
const secretKeys = [
  'authorization',
  'Authorization',
  'apikey',
  'api_key',
  'apiKey',
  'secret',
  'token',
  'access_token',
  'client_token',
  'bot_token',
  'secret_token',
  'app_secret',
  'verify_token',
  'password',
  'config',
  'credentials',
];

/** Those keys at the top of a logged object and up to two levels down (headers, payloads, causes). */
export const redactedPaths = secretKeys.flatMap((key) => [key, `*.${key}`, `*.*.${key}`]);

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
