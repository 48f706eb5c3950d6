import { eventTypes } from './event-types.js';

/**
 * What providers tell the connector comes at whatever pace a workspace's traffic (or a tenant posting to
 * its own callback URL) sets, and so do the webhook events a workspace's sends make (external send has no
 * rate limit): one durable queue would hand them out first come, first served, and a workspace's burst
 * would hold every worker while the other workspaces' events waited behind it. So these events travel in
 * lanes, each a durable consumer of its own, and a workspace always in the same lane: a flood fills one
 * lane and the other lanes keep flowing.
 *
 * Lane 0 keeps the subject events had before lanes (`evt.inbound.message`, `evt.message.sent`), so what a
 * broker held from before lanes existed is still read, by lane 0. The count is fixed: a workspace's lane
 * follows from it, and events left in a lane that stopped existing would be read by no one.
 */
export const eventLanes = {
  count: 8,
  types: [
    eventTypes.inboundMessage,
    eventTypes.inboundStatus,
    eventTypes.inboundWatermark,
    eventTypes.messageReceived,
    eventTypes.messageSent,
    eventTypes.conversationAssigned,
    eventTypes.conversationResolved,
  ] as readonly string[],
} as const;

/** The lane a workspace's events take: FNV-1a of its id, so every process and release agrees. */
export function laneOf(workspaceId: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < workspaceId.length; i++) {
    hash ^= workspaceId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % eventLanes.count;
}

/** The words before the type in the route of an event in `lane` (none in lane 0). */
export const laneWord = (lane: number): string => (lane === 0 ? '' : `lane${lane}.`);

/**
 * Where an event goes, before any installation prefix: its type, preceded in lanes 1 and up by the lane
 * (`lane3.inbound.message`). The NATS subject is `evt.` and this; the RabbitMQ routing key is this.
 */
export function eventRoute(event: { type: string; workspace_id: string }): string {
  if (!eventLanes.types.includes(event.type)) return event.type;
  return `${laneWord(laneOf(event.workspace_id))}${event.type}`;
}
