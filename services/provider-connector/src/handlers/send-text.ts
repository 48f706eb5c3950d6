import { AppError, type CommandPayload, type CommandResult, platformTexts } from '@inbox/contracts';
import { adapterFor } from '../adapters/index.js';
import { type SendOnceDeps, sendOnce } from './send-once.js';

export type SendTextDeps = SendOnceDeps;

/** Sends one text through the integration's provider, once per message id. */
export function sendText(
  deps: SendTextDeps,
  command: CommandPayload<'cmd.connector.send-text'>,
): Promise<CommandResult<'cmd.connector.send-text'>> {
  const ids = {
    workspaceId: command.workspace_id,
    integrationId: command.integration_id,
    messageId: command.message_id,
  };
  return sendOnce(deps, ids, (stored, call) => {
    const adapter = adapterFor(stored.integration.channel);
    if (!adapter) throw AppError.badRequest(platformTexts.channelNotSupported(stored.integration.channel));
    const to = command.to === null ? command.to_user_id! : command.to.replace(/^\+/, '');
    return adapter.sendText(stored.config, { to, text: command.text }, call);
  });
}
