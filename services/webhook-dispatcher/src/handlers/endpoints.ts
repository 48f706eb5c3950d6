import { randomUUID } from 'node:crypto';
import {
  AppError,
  type CommandPayload,
  type CommandResult,
  endpointsPerWorkspace,
  platformTexts,
  testEventType,
  type WebhookTest,
} from '@inbox/contracts';
import { type AddressPolicy, checkUrl } from '@inbox/outbound-http';
import type { Logger } from '@inbox/service-kit';
import { captureContext } from '@inbox/telemetry';
import type { DeliveryStore } from '../store/deliveries.js';
import type { EndpointStore } from '../store/endpoints.js';

export interface EndpointDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  policy: AddressPolicy;
  logger: Logger;
  /** Asks the worker to look for due deliveries now (after a resend, a replay or a re-enable). */
  wake: () => void;
  /** WEBHOOK_SECRET_GRACE_HOURS: how long a rotated-out secret keeps signing unless the request says. */
  secretGraceHours: number;
}

const webhookNotFound = () => AppError.notFound(platformTexts.webhookNotFound);

async function requireAllowedUrl(deps: EndpointDeps, url: string, workspaceId: string): Promise<void> {
  const refusal = await checkUrl(url, deps.policy, workspaceId);
  if (!refusal) return;
  // The caller is told which host was refused, never what it resolved to; the log keeps the address.
  deps.logger.warn({ host: refusal.host, address: refusal.address ?? null }, 'webhook url refused');
  throw AppError.badRequest(platformTexts.webhookUrlRefused(refusal.text));
}

async function requireWebhook(deps: EndpointDeps, workspaceId: string, webhookId: string) {
  const endpoint = await deps.endpoints.get(workspaceId, webhookId);
  if (!endpoint) throw webhookNotFound();
  return endpoint;
}

/** The admin API's webhook operations: endpoints, their delivery log, resend and replay. */
export const webhooks = {
  async create(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.create-webhook'>) {
    await requireAllowedUrl(deps, command.url, command.workspace_id);
    const created = await deps.endpoints.create(command.workspace_id, command);
    if (!created) throw AppError.badRequest(platformTexts.webhookLimitReached(endpointsPerWorkspace));
    return created;
  },

  async list(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.list-webhooks'>) {
    return { webhooks: await deps.endpoints.list(command.workspace_id) };
  },

  get: (deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.get-webhook'>) =>
    requireWebhook(deps, command.workspace_id, command.webhook_id),

  async update(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.update-webhook'>) {
    if (command.url) await requireAllowedUrl(deps, command.url, command.workspace_id);
    const updated = await deps.endpoints.update(command.workspace_id, command.webhook_id, command);
    if (!updated) throw webhookNotFound();
    if (command.enabled) deps.wake();
    return updated;
  },

  async remove(
    deps: EndpointDeps,
    command: CommandPayload<'cmd.dispatcher.delete-webhook'>,
  ): Promise<CommandResult<'cmd.dispatcher.delete-webhook'>> {
    if (!(await deps.endpoints.remove(command.workspace_id, command.webhook_id))) throw webhookNotFound();
    return { deleted: true };
  },

  async rotateSecret(
    deps: EndpointDeps,
    command: CommandPayload<'cmd.dispatcher.rotate-secret'>,
  ): Promise<CommandResult<'cmd.dispatcher.rotate-secret'>> {
    const rotated = await deps.endpoints.rotateSecret(
      command.workspace_id,
      command.webhook_id,
      command.secret,
      (command.grace_hours ?? deps.secretGraceHours) * 3_600_000,
    );
    if (!rotated) throw webhookNotFound();
    return rotated;
  },

  async listDeliveries(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.list-deliveries'>) {
    await requireWebhook(deps, command.workspace_id, command.webhook_id);
    const deliveries = await deps.deliveries.list(command.workspace_id, command.webhook_id, {
      status: command.status,
      eventType: command.event,
      since: command.since,
      until: command.until,
      before: command.before,
      limit: command.limit,
    });
    return { deliveries };
  },

  async getDelivery(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.get-delivery'>) {
    const delivery = await deps.deliveries.one(command.workspace_id, command.webhook_id, command.delivery_id);
    if (!delivery) throw AppError.notFound(platformTexts.deliveryNotFound);
    return delivery;
  },

  async resend(
    deps: EndpointDeps,
    command: CommandPayload<'cmd.dispatcher.resend-delivery'>,
  ): Promise<CommandResult<'cmd.dispatcher.resend-delivery'>> {
    await requireWebhook(deps, command.workspace_id, command.webhook_id);
    if (!(await deps.deliveries.resend(command.workspace_id, command.webhook_id, command.delivery_id))) {
      throw AppError.notFound(platformTexts.deliveryNotResendable);
    }
    deps.wake();
    return { scheduled: true };
  },

  /** A `webhook.test` delivery to this endpoint, signed and retried as any other, due now. */
  async sendTest(
    deps: EndpointDeps,
    command: CommandPayload<'cmd.dispatcher.send-test'>,
  ): Promise<CommandResult<'cmd.dispatcher.send-test'>> {
    const endpoint = await requireWebhook(deps, command.workspace_id, command.webhook_id);
    // The worker never attempts a disabled endpoint's deliveries: the test would wait unseen.
    if (!endpoint.enabled) throw new AppError(409, { error: platformTexts.webhookDisabledForTest });
    const payload: WebhookTest = {
      event: testEventType,
      workspace_id: command.workspace_id,
      webhook_id: endpoint.id,
      sent_at: new Date().toISOString(),
    };
    const delivery = await deps.deliveries.scheduleOne({
      workspaceId: command.workspace_id,
      endpointId: endpoint.id,
      eventId: randomUUID(),
      eventType: testEventType,
      body: JSON.stringify(payload),
      traceContext: captureContext(),
    });
    deps.wake();
    return delivery;
  },

  async replayFailed(deps: EndpointDeps, command: CommandPayload<'cmd.dispatcher.replay-failed'>) {
    await requireWebhook(deps, command.workspace_id, command.webhook_id);
    const scheduled = await deps.deliveries.replayFailed(
      command.workspace_id,
      command.webhook_id,
      command.since,
    );
    deps.wake();
    return { scheduled };
  },
};
