import type { ForwardedEvent } from '@inbox/bus';
import type { PublicEventType } from '@inbox/contracts';
import { captureContext } from '@inbox/telemetry';
import type { ScheduleBatches } from '../store/schedule-batches.js';

/**
 * A public event becomes one scheduled delivery per enabled endpoint of its workspace that subscribed to
 * it, due now. The body is the spec's payload serialised once, as it came: every endpoint and every
 * attempt sends these bytes, which is what is signed. Returns how many were scheduled.
 */
export function scheduleEvent(
  batches: ScheduleBatches,
  event: ForwardedEvent<PublicEventType>,
): Promise<number> {
  return batches.schedule({
    workspaceId: event.workspace_id,
    eventId: event.id,
    eventType: event.type,
    body: JSON.stringify(event.data),
    ordering: event.ordering ?? null,
    // The consumer's span is active here: its context is the one the attempts continue.
    traceContext: captureContext(),
  });
}
