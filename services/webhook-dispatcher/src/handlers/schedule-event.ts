import type { Delivery } from '@inbox/bus';
import { type EventEnvelope, publicEventTypes } from '@inbox/contracts';
import type { DeliveryStore } from '../store/deliveries.js';
import type { EndpointStore } from '../store/endpoints.js';

const publicTypes = new Set<string>(publicEventTypes);

/**
 * An event becomes one scheduled delivery per enabled endpoint of its workspace that subscribed to it,
 * due now. The body is the spec's payload serialised once: every endpoint and every attempt sends
 * these bytes, which is what is signed. Returns how many were scheduled.
 */
export async function scheduleEvent(
  deps: { endpoints: EndpointStore; deliveries: DeliveryStore },
  event: EventEnvelope,
  delivery: Delivery,
): Promise<number> {
  if (!publicTypes.has(event.type)) return 0;
  const endpoints = await deps.endpoints.subscribedTo(event.workspace_id, event.type);
  if (endpoints.length === 0) return 0;
  const body = JSON.stringify(event.data);
  const conversationId = (event.data as { conversation_id?: unknown }).conversation_id;
  return deps.deliveries.schedule(
    endpoints.map((endpoint) => ({
      workspaceId: event.workspace_id,
      endpointId: endpoint.id,
      eventId: event.id,
      eventType: event.type,
      body,
      streamSeq: delivery.sequence,
      orderingKey: typeof conversationId === 'string' ? conversationId : null,
    })),
  );
}
