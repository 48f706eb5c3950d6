export const conversationStatuses = ['open', 'assigned', 'resolved'] as const;
export type ConversationStatus = (typeof conversationStatuses)[number];
export type Assignee = { type: 'human' | 'agent'; id: string } | null;

/**
 * The state after an assignment change: assigning makes a conversation `assigned` (reopening a resolved
 * one); removing the assignment puts an assigned conversation back to `open` and leaves a resolved one
 * resolved.
 */
export function statusAfterAssignment(current: ConversationStatus, assignee: Assignee): ConversationStatus {
  if (assignee) return 'assigned';
  return current === 'assigned' ? 'open' : current;
}

/** A new message (either way) brings a resolved conversation back: assigned if it has an assignee. */
export function statusAfterNewMessage(current: ConversationStatus, hasAssignee: boolean): ConversationStatus {
  if (current !== 'resolved') return current;
  return hasAssignee ? 'assigned' : 'open';
}
