import {
  type InboundMessageEvent,
  type InboundStatusEvent,
  integrationChannels,
  internalEventTypes,
} from '@inbox/contracts';
import { type OutboxRelay, type Pool, withTransaction, writeEvent } from '@inbox/db';
import type { Logger } from '@inbox/service-kit';
import express, { Router } from 'express';
import { adapterFor, InboundRejected } from '../adapters/index.js';
import { firstSighting } from '../store/inbound-seen.js';
import type { IntegrationStore } from '../store/integrations.js';

export interface InboundDeps {
  pool: Pool;
  store: IntegrationStore;
  relay: OutboxRelay;
  logger: Logger;
}

/** Where a provider delivers an integration's inbound messages and status updates. */
export function inboundPath(channel: string, integrationId: string): string {
  return `/inbound/${channel}/${integrationId}`;
}

const channels = new Set<string>(integrationChannels);

/**
 * The providers' callbacks. Each is verified as the provider's own (signature or shared token), each
 * provider message id is taken in once, and what arrived is announced through the outbox, in the same
 * transaction that records it as seen.
 */
export function inboundRoutes(deps: InboundDeps): Router {
  const router = Router();

  const integrationFor = async (channel: string, id: string) => {
    if (!channels.has(channel) || !/^[0-9a-f-]{36}$/i.test(id)) return undefined;
    const found = await deps.store.forCallback(id);
    return found && found.integration.channel === channel ? found : undefined;
  };

  router.get('/inbound/:channel/:integrationId', async (req, res) => {
    const found = await integrationFor(req.params.channel, req.params.integrationId);
    const adapter = found && adapterFor(found.integration.channel);
    const challenge = found && adapter?.answerHandshake?.(found.config, req.query as Record<string, unknown>);
    if (!challenge) {
      res.status(403).json({ error: 'verificação recusada' });
      return;
    }
    res.type('text/plain').send(challenge);
  });

  router.post(
    '/inbound/:channel/:integrationId',
    express.raw({ type: () => true, limit: '1mb' }),
    async (req, res) => {
      const found = await integrationFor(req.params.channel, req.params.integrationId);
      const adapter = found && adapterFor(found.integration.channel);
      if (!found || !adapter) {
        res.status(404).json({ error: 'integração desconhecida' });
        return;
      }
      let batch: ReturnType<typeof adapter.readInbound>;
      try {
        batch = adapter.readInbound(found.config, { headers: req.headers, rawBody: req.body as Buffer });
      } catch (error) {
        if (error instanceof InboundRejected || error instanceof SyntaxError) {
          deps.logger.warn(
            { integration_id: found.integration.id, reason: error.message },
            'inbound callback refused',
          );
          res.status(error instanceof InboundRejected ? 401 : 400).json({ error: 'callback recusado' });
          return;
        }
        throw error;
      }
      const { integration, workspaceId } = found;
      await withTransaction(deps.pool, async (client) => {
        for (const message of batch.messages) {
          if (!(await firstSighting(client, integration.id, message.providerMessageId))) continue;
          const data: InboundMessageEvent = {
            workspace_id: workspaceId,
            integration: { id: integration.id, channel: integration.channel, provider: integration.provider },
            provider_message_id: message.providerMessageId,
            from: `+${message.from}`,
            name: message.name,
            text: message.text,
            type: message.type,
            sent_at: message.sentAt.toISOString(),
          };
          await writeEvent(client, {
            type: internalEventTypes.inboundMessage,
            workspace_id: workspaceId,
            data,
          });
        }
        for (const status of batch.statuses) {
          const data: InboundStatusEvent = {
            workspace_id: workspaceId,
            integration_id: integration.id,
            provider_message_id: status.providerMessageId,
            status: status.status,
            error: status.error,
          };
          await writeEvent(client, {
            type: internalEventTypes.inboundStatus,
            workspace_id: workspaceId,
            data,
          });
        }
      });
      deps.relay.wake();
      res.json({ ok: true });
    },
  );

  return router;
}
