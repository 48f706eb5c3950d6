import { gatewayService } from '@inbox/gateway';
import { messagingService } from '@inbox/messaging';
import { pipelineService } from '@inbox/pipeline';
import { connectorService } from '@inbox/provider-connector';
import type { ServiceDefinition } from '@inbox/service-kit';
import { dispatcherService } from '@inbox/webhook-dispatcher';
import type { Settings } from './settings.js';

/** The five services as all-in-one mode composes them, with the settings each one takes. */
export function serviceDefinitions(settings: Settings): ServiceDefinition[] {
  return [
    gatewayService({ adminToken: settings.ADMIN_TOKEN, rateLimitPerMinute: settings.RATE_LIMIT_PER_MINUTE }),
    messagingService({
      outboxRetentionHours: settings.OUTBOX_RETENTION_HOURS,
      reconcileAfterMinutes: settings.PENDING_RECONCILE_AFTER_MINUTES,
    }),
    connectorService({
      encryptionKey: settings.ENCRYPTION_KEY,
      publicConnectorUrl: settings.PUBLIC_CONNECTOR_URL,
      allowedCidrs: settings.connectorAllowedCidrs,
      outboxRetentionHours: settings.OUTBOX_RETENTION_HOURS,
    }),
    pipelineService({ outboxRetentionHours: settings.OUTBOX_RETENTION_HOURS }),
    dispatcherService({
      encryptionKey: settings.ENCRYPTION_KEY,
      allowedCidrs: settings.dispatcherAllowedCidrs,
      timeoutMs: settings.WEBHOOK_TIMEOUT_MS,
      retrySchedule: settings.WEBHOOK_RETRY_SCHEDULE,
      disableAfterHours: settings.WEBHOOK_DISABLE_AFTER_HOURS,
      concurrency: settings.WEBHOOK_CONCURRENCY,
      perEndpointConcurrency: settings.WEBHOOK_PER_ENDPOINT_CONCURRENCY,
      retentionDays: settings.WEBHOOK_RETENTION_DAYS,
    }),
  ];
}
