import { randomBytes } from 'node:crypto';
import { GatewayConfig } from '@inbox/gateway';
import { MessagingConfig } from '@inbox/messaging';
import { SandboxConfig } from '@inbox/provider-sandbox';
import { env, loadConfig, SecretBox } from '@inbox/service-kit';
import { allowedCidrs, DispatcherConfig } from '@inbox/webhook-dispatcher';
import { z } from 'zod';

/** ARCHITECTURE's settings table, read the same way by `npm start` and `npm run stack`. */
export const RuntimeSettings = z.object({
  GATEWAY_PORT: env.port(8080),
  CONNECTOR_PORT: env.port(8081),
  MESSAGING_PORT: env.port(8082),
  PIPELINE_PORT: env.port(8083),
  DISPATCHER_PORT: env.port(8084),
  SANDBOX_PORT: env.port(8090),
  SANDBOX: z.enum(['on', 'off']).default('on'),
  SANDBOX_SENT_LOG_LIMIT: SandboxConfig.shape.SANDBOX_SENT_LOG_LIMIT,
  PUBLIC_CONNECTOR_URL: z.url().optional(),
  ADMIN_TOKEN: z.string().min(16, { error: 'must be at least 16 characters' }).optional(),
  ENCRYPTION_KEY: env.encryptionKey.optional(),
  // The services' own settings, read by their own schemas: one place says what each means and defaults to.
  RATE_LIMIT_PER_MINUTE: GatewayConfig.shape.RATE_LIMIT_PER_MINUTE,
  WEBHOOK_RETRY_SCHEDULE: DispatcherConfig.shape.WEBHOOK_RETRY_SCHEDULE,
  WEBHOOK_TIMEOUT_MS: DispatcherConfig.shape.WEBHOOK_TIMEOUT_MS,
  OUTBOUND_ALLOWED_CIDRS: DispatcherConfig.shape.OUTBOUND_ALLOWED_CIDRS,
  WEBHOOK_ALLOWED_CIDRS: DispatcherConfig.shape.WEBHOOK_ALLOWED_CIDRS,
  WEBHOOK_DISABLE_AFTER_HOURS: DispatcherConfig.shape.WEBHOOK_DISABLE_AFTER_HOURS,
  WEBHOOK_CONCURRENCY: DispatcherConfig.shape.WEBHOOK_CONCURRENCY,
  WEBHOOK_PER_ENDPOINT_CONCURRENCY: DispatcherConfig.shape.WEBHOOK_PER_ENDPOINT_CONCURRENCY,
  WEBHOOK_RETENTION_DAYS: DispatcherConfig.shape.WEBHOOK_RETENTION_DAYS,
  /** Every outbox's (messaging, connector, pipeline): one setting, the same in each service's schema. */
  OUTBOX_RETENTION_HOURS: MessagingConfig.shape.OUTBOX_RETENTION_HOURS,
  PENDING_RECONCILE_AFTER_MINUTES: MessagingConfig.shape.PENDING_RECONCILE_AFTER_MINUTES,
  /** Which broker `npm run stack` starts when BUS_URL is not given. */
  BUS: z.enum(['nats', 'rabbitmq']).default('nats'),
  BUS_URL: z.string().optional(),
  DATABASE_URL: z.string().optional(),
  REDIS_URL: z.string().optional(),
  LOG_LEVEL: env.logLevel,
});

export type Settings = z.output<typeof RuntimeSettings> & {
  ADMIN_TOKEN: string;
  ENCRYPTION_KEY: string;
  PUBLIC_CONNECTOR_URL: string;
  sandboxEnabled: boolean;
  adminTokenGenerated: boolean;
  /** What provider base URLs may reach (localConnectorCidrs). */
  connectorAllowedCidrs: string;
  /** What webhook URLs may reach (OUTBOUND_ALLOWED_CIDRS, or the deprecated WEBHOOK_ALLOWED_CIDRS). */
  dispatcherAllowedCidrs: string;
};

/** Where the provider sandbox listens in local runs. */
const sandboxRange = '127.0.0.0/8';

/**
 * The connector's allow-list in a local run: the operator's OUTBOUND_ALLOWED_CIDRS or, when they set none
 * and the sandbox runs, loopback, since the sandbox listens on 127.0.0.1 and no integration on it could be
 * called otherwise. Deployments (compose, Kubernetes, a service's own main) never get this default.
 */
export function localConnectorCidrs(given: string | undefined, sandboxEnabled: boolean): string {
  return given?.trim() || (sandboxEnabled ? sandboxRange : '');
}

/** The start-up banner's line about it, when the sandbox default is in force. */
export function sandboxCidrsNote(settings: Settings): string {
  if (settings.OUTBOUND_ALLOWED_CIDRS.trim() !== '' || settings.connectorAllowedCidrs === '') return '';
  return `  ${'Connector may reach'.padEnd(33)}${settings.connectorAllowedCidrs} (for the sandbox; set OUTBOUND_ALLOWED_CIDRS to choose)\n`;
}

export function readSettings(source: NodeJS.ProcessEnv = process.env): Settings {
  const parsed = loadConfig(RuntimeSettings, source);
  const sandboxEnabled = parsed.SANDBOX === 'on' && parsed.SANDBOX_PORT !== 0;
  return {
    ...parsed,
    ADMIN_TOKEN: parsed.ADMIN_TOKEN ?? `adm_${randomBytes(24).toString('base64url')}`,
    adminTokenGenerated: parsed.ADMIN_TOKEN === undefined,
    ENCRYPTION_KEY: parsed.ENCRYPTION_KEY ?? SecretBox.generateKey(),
    PUBLIC_CONNECTOR_URL: parsed.PUBLIC_CONNECTOR_URL ?? `http://127.0.0.1:${parsed.CONNECTOR_PORT}`,
    sandboxEnabled,
    connectorAllowedCidrs: localConnectorCidrs(parsed.OUTBOUND_ALLOWED_CIDRS, sandboxEnabled),
    dispatcherAllowedCidrs: allowedCidrs(parsed),
  };
}
