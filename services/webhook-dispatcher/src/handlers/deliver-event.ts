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
  /** One attempt, from connecting to the response status, whatever the receiver does. */
  timeoutMs: number;
}

const publicTypes = new Set<string>(publicEventTypes);

/** Sends one event to every enabled endpoint of its workspace that subscribed to it. */
export async function deliverEvent(deps: DeliverDeps, event: EventEnvelope): Promise<void> {
  if (!publicTypes.has(event.type)) return;
  const endpoints = await deps.endpoints.subscribedTo(event.workspace_id, event.type);
  if (endpoints.length === 0) return;
  // Serialised once: every endpoint and every attempt gets these exact bytes, which is what is signed.
  const body = JSON.stringify(event.data);
  const outcomes = await Promise.allSettled(
    endpoints.map(async (endpoint) => {
      // The lease outlives one attempt, so it cannot lapse while the attempt is still running.
      const delivery = await deps.deliveries.claim(
        {
          workspaceId: event.workspace_id,
          endpointId: endpoint.id,
          eventId: event.id,
          eventType: event.type,
          body,
        },
        deps.timeoutMs * 2 + 5_000,
      );
      if (!delivery) return;
      const started = performance.now();
      const outcome = await post(deps, endpoint.url, delivery.body, {
        eventId: event.id,
        eventType: event.type,
        secret: endpoint.secret,
      });
      const durationMs = Math.round(performance.now() - started);
      await deps.deliveries.recordAttempt(event.workspace_id, delivery.id, { ...outcome, durationMs });
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
  // Every endpoint has had its turn; a failure to record one is retried by redelivering the event,
  // which the leases and the delivered status keep from posting twice.
  const failed = outcomes.find((outcome): outcome is PromiseRejectedResult => outcome.status === 'rejected');
  if (failed) throw failed.reason;
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
      signal: AbortSignal.timeout(deps.timeoutMs),
      // undici's request() never follows redirects (that takes a redirect interceptor), so a 3xx is
      // recorded as a failed attempt rather than leading the request somewhere unchecked.
      dispatcher: deps.agent,
    });
    // Only the status matters; the body is not read, so a receiver that drips bytes cannot hold us.
    response.body.on('error', () => undefined);
    response.body.destroy();
    return { statusCode: response.statusCode, error: null };
  } catch (error) {
    return { statusCode: null, error: errorMessage(error) };
  }
}
