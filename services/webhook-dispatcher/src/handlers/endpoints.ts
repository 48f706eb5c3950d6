import { AppError, type CommandPayload, type CommandResult } from '@inbox/contracts';
import type { AddressPolicy } from '../domain/address-policy.js';
import { checkUrl } from '../domain/guarded-http.js';
import type { DeliveryStore } from '../store/deliveries.js';
import type { EndpointStore } from '../store/endpoints.js';

export async function createWebhook(
  deps: { endpoints: EndpointStore; policy: AddressPolicy },
  command: CommandPayload<'cmd.dispatcher.create-webhook'>,
): Promise<CommandResult<'cmd.dispatcher.create-webhook'>> {
  const refused = await checkUrl(command.url, deps.policy);
  if (refused) throw AppError.badRequest(`url recusada: ${refused}`);
  return deps.endpoints.create(command.workspace_id, command);
}

export async function listDeliveries(
  deps: { endpoints: EndpointStore; deliveries: DeliveryStore },
  command: CommandPayload<'cmd.dispatcher.list-deliveries'>,
): Promise<CommandResult<'cmd.dispatcher.list-deliveries'>> {
  if (!(await deps.endpoints.exists(command.workspace_id, command.webhook_id))) {
    throw AppError.notFound('Webhook não encontrado neste workspace');
  }
  return { deliveries: await deps.deliveries.history(command.workspace_id, command.webhook_id) };
}
