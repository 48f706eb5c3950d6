import type { Bus } from '@inbox/bus';
import type { Logger } from '@inbox/service-kit';
import { ProviderError, type VisitorDelivery } from '../adapters/channel-adapter.js';
import type { LivechatStore } from './store.js';

/**
 * An operator's message for a visitor: stored in the session (once per message id) and announced to
 * every replica, so the one holding the visitor's stream sends it at once.
 */
export function visitorDelivery(
  deps: { livechat: LivechatStore; bus: Bus; logger: Logger },
  integrationId: string,
  messageId: string,
): VisitorDelivery {
  return {
    async deliver(sessionId, text) {
      const session = /^[0-9a-f-]{36}$/i.test(sessionId)
        ? await deps.livechat.session(integrationId, sessionId)
        : undefined;
      // Ended (sessionIdleMs), or pruned since it was found live: the visitor reads nothing of it.
      if (
        !session ||
        !(await deps.livechat.addMessage(deps.livechat.pool, session.id, {
          id: messageId,
          author: 'operator',
          text,
        }))
      )
        throw new ProviderError(`live chat session ${sessionId} has ended or is not this integration's`);
      await announce(deps, session.id);
      return { providerMessageId: messageId };
    },
  };
}

/** Tells every replica a session has a new message; a lost notice is made up by the streams' sweep. */
export async function announce(deps: { bus: Bus; logger: Logger }, sessionId: string): Promise<void> {
  await deps.bus
    .notify('notice.connector.livechat-message', { session_id: sessionId })
    .catch((error: unknown) => deps.logger.warn({ err: error }, 'live chat notice not sent'));
}
