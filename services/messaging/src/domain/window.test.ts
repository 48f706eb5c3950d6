import { describe, expect, it } from 'vitest';
import { channelHasWindow, windowIsOpen, windowMs } from './window.js';

describe('24-hour window', () => {
  const now = new Date('2026-05-01T12:00:00Z');
  it('is closed without any inbound message and after 24 hours', () => {
    expect(windowIsOpen(null, now)).toBe(false);
    expect(windowIsOpen(new Date(now.getTime() - windowMs), now)).toBe(false);
    expect(windowIsOpen(new Date(now.getTime() - windowMs - 1), now)).toBe(false);
  });
  it('is open within 24 hours of the last inbound message', () => {
    expect(windowIsOpen(new Date(now.getTime() - windowMs + 1), now)).toBe(true);
    expect(windowIsOpen(now, now)).toBe(true);
  });
  it('applies to the official channel only', () => {
    expect(channelHasWindow('chat-official')).toBe(true);
    expect(channelHasWindow('alt-a')).toBe(false);
    expect(channelHasWindow('alt-b')).toBe(false);
  });
});
