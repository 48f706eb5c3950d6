import { randomUUID } from 'node:crypto';
import { eventConsumers, eventLanes, laneOf, type WireEvent } from '@inbox/contracts';
import { type Bus, subscriptionsFor } from '../src/index.js';

/** One event of `type` in each lane (eventLanes), each of a workspace drawn until every lane has one. */
export function oneEventInEachLane(type: string): Map<number, WireEvent> {
  const byLane = new Map<number, WireEvent>();
  while (byLane.size < eventLanes.count) {
    const workspaceId = randomUUID();
    byLane.set(laneOf(workspaceId), {
      id: randomUUID(),
      type,
      workspace_id: workspaceId,
      occurred_at: new Date().toISOString(),
      data: {},
    });
  }
  return byLane;
}

/**
 * The webhook dispatcher's durables, one per lane, consumed on `bus` as this release's dispatcher does;
 * `seen` holds the event ids each durable took, by durable.
 */
export async function consumeEveryWebhookLane(bus: Bus) {
  const lanes = subscriptionsFor('webhook-dispatcher', eventConsumers['webhook-dispatcher']);
  const seen = new Map<string, string[]>();
  for (const lane of lanes)
    await bus.consume(lane, async (e) => {
      seen.set(lane.durable, [...(seen.get(lane.durable) ?? []), e.id]);
    });
  return { lanes, seen };
}
