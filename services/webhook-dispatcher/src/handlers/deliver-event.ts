import { isIP } from 'node:net';
import { type EventEnvelope, errorMessage, publicEventTypes } from '@inbox/contracts';
import type { Logger } from '@inbox/service-kit';
import { type Dispatcher, request } from 'undici';
import type { AddressPolicy } from '../domain/address-policy.js';
import { deliveryHeaders } from '../domain/signature.js';
import type { DeliveryStore } from '../store/deliveries.js';
import type { EndpointStore } from '../store/endpoints.js';

export interface DeliverDeps {
  endpoints: EndpointStore;
  deliveries: DeliveryStore;
  agent: Dispatcher;
  policy: AddressPolicy;
  logger: Logger;
}

const publicTypes = new Set<string>(publicEventTypes);

/** Sends one event to every enabled endpoint of its workspace that subscribed to it. */
export async function deliverEvent(deps: DeliverDeps, event: EventEnvelope): Promise<void> {
  if (!publicTypes.has(event.type)) return;
  const endpoints = await deps.endpoints.subscribedTo(event.workspace_id, event.type);
  if (endpoints.length === 0) return;
  // Serialised once: every endpoint and every attempt gets these exact bytes, which is what is signed.
  const body = JSON.stringify(event.data);
  await Promise.all(
    endpoints.map(async (endpoint) => {
      const delivery = await deps.deliveries.open({
        workspaceId: event.workspace_id,
        endpointId: endpoint.id,
        eventId: event.id,
        eventType: event.type,
        body,
      });
      if (delivery.status === 'delivered') return;
      const started = performance.now();
      const outcome = await post(deps, endpoint.url, delivery.body, {
        eventId: event.id,
        eventType: event.type,
        secret: endpoint.secret,
      });
      const durationMs = Math.round(performance.now() - started);
      await deps.deliveries.recordAttempt(delivery.id, { ...outcome, durationMs });
      deps.logger.info(
        {
          event_id: event.id,
          event_type: event.type,
          endpoint_id: endpoint.id,
          status_code: outcome.statusCode,
          error: outcome.error,
          duration_ms: durationMs,
        },
        'webhook attempt',
      );
    }),
  );
}

async function post(
  deps: DeliverDeps,
  url: string,
  body: string,
  meta: { eventId: string; eventType: string; secret: string | null },
): Promise<{ statusCode: number | null; error: string | null }> {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  // Names are checked by the agent's lookup at connect time; literal addresses never reach a lookup.
  if (isIP(host) && !deps.policy.permits(host))
    return { statusCode: null, error: `forbidden address ${host}` };
  try {
    const response = await request(url, {
      method: 'POST',
      body,
      headers: deliveryHeaders({ ...meta, body, now: new Date() }),
      // undici's request() never follows redirects (that takes a redirect interceptor), so a 3xx is
      // recorded as a failed attempt rather than leading the request somewhere unchecked.
      dispatcher: deps.agent,
    });
    await response.body.dump();
    return { statusCode: response.statusCode, error: null };
  } catch (error) {
    return { statusCode: null, error: errorMessage(error) };
  }
}
