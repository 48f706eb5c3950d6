/**
 * An event whose data its type's schema does not read. Another delivery brings the same bytes, so the
 * transports dead-letter it on the first: retried, each such event stayed unacknowledged for the whole
 * redelivery schedule, and enough of them (one tenant's callbacks can make many) filled the durable's
 * allowance of unacknowledged events, and the server delivered nothing more to it, for any tenant.
 */
export class UnreadableEvent extends Error {
  override name = 'UnreadableEvent';

  constructor(type: string, cause: unknown) {
    super(`${type} data does not match its schema: ${complaintOf(cause)}`, { cause });
  }
}

/** The schema's complaint, field by field, for whoever reads the dead letter; bounded, as it can quote the data. */
function complaintOf(cause: unknown): string {
  const issues = (cause as { issues?: Array<{ path: PropertyKey[]; message: string }> } | null)?.issues;
  const text = Array.isArray(issues)
    ? issues.map((issue) => `${issue.path.map(String).join('.') || '(data)'}: ${issue.message}`).join('; ')
    : cause instanceof Error
      ? cause.message
      : String(cause);
  return text.slice(0, 500);
}

/** Whether a handler's failure will fail again however often the event is delivered. */
export const failsEveryDelivery = (error: unknown): boolean => error instanceof UnreadableEvent;
