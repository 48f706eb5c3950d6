import { describe, expect, it } from 'vitest';
import { statusAfterAssignment, statusAfterNewMessage } from './conversation-state.js';

describe('conversation state', () => {
  const someone = { type: 'agent' as const, id: 'a1' };
  it.each([
    ['open', someone, 'assigned'],
    ['assigned', someone, 'assigned'],
    ['resolved', someone, 'assigned'],
    ['assigned', null, 'open'],
    ['open', null, 'open'],
    ['resolved', null, 'resolved'],
  ] as const)('%s, assigned to %j, becomes %s', (current, assignee, next) => {
    expect(statusAfterAssignment(current, assignee)).toBe(next);
  });

  it('reopens a resolved conversation on a new message, keeping its assignee', () => {
    expect(statusAfterNewMessage('resolved', false)).toBe('open');
    expect(statusAfterNewMessage('resolved', true)).toBe('assigned');
    expect(statusAfterNewMessage('open', false)).toBe('open');
    expect(statusAfterNewMessage('assigned', true)).toBe('assigned');
  });
});
