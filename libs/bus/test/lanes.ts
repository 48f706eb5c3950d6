import { randomUUID } from 'node:crypto';
import { eventLanes, laneOf, type WireEvent } from '@inbox/contracts';

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
