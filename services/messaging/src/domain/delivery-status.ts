export type DeliveryStatus = 'sent' | 'delivered' | 'read' | 'failed';

const progress: Record<DeliveryStatus, number> = { sent: 1, delivered: 2, read: 3, failed: 4 };

/** The statuses a report moves forward from: those before it, never a failure. */
export function statusesBefore(reported: DeliveryStatus): DeliveryStatus[] {
  if (reported === 'failed') return [];
  return (Object.keys(progress) as DeliveryStatus[]).filter(
    (status) => progress[status] < progress[reported],
  );
}

/**
 * Providers report sent, delivered and read in any order; a message only moves forward (a late
 * "delivered" never undoes "read"). A failure is final.
 */
export function nextDeliveryStatus(current: DeliveryStatus | null, reported: DeliveryStatus): DeliveryStatus {
  if (current === null) return reported;
  if (current === 'failed') return current;
  return progress[reported] > progress[current] ? reported : current;
}
