import type { CommandPayload, CommandResult } from '@inbox/contracts';
import type { IntegrationStore } from '../store/integrations.js';

/**
 * What this connector recorded of a message's send, for messaging's reconciliation of messages left
 * pending. It only reads `sends`: asking must never reach the provider, or a reconciliation could be the
 * second send.
 */
export async function sendOutcome(
  store: IntegrationStore,
  command: CommandPayload<'cmd.connector.send-outcome'>,
): Promise<CommandResult<'cmd.connector.send-outcome'>> {
  const send = await store.findSend(command.workspace_id, command.message_id);
  if (!send) return { outcome: 'unrecorded' };
  if (send.provider_message_id === null || send.sent_at === null) return { outcome: 'unknown' };
  return {
    outcome: 'sent',
    provider_message_id: send.provider_message_id,
    sent_at: send.sent_at.toISOString(),
  };
}
