import { describe, expect, it } from 'vitest';
import { type SentEntry, SentLog } from '../src/sent-log.js';

const entry = (n: number, channel = 'alt-a'): SentEntry => ({
  channel,
  account: 'acct',
  to: `55119000000${String(n).padStart(2, '0')}`,
  method: 'POST',
  path: '/send',
  body: { n },
  provider_message_id: `id-${n}`,
  received_at: new Date(0).toISOString(),
});

describe('SentLog', () => {
  it('holds at most its limit, newest last, across many sends, and counts every one it let go', () => {
    const log = new SentLog(100);
    for (let n = 1; n <= 1_234; n++) log.record(entry(n));
    const kept = log.list();
    expect(kept).toHaveLength(100);
    expect(kept.map((e) => (e.body as { n: number }).n)).toEqual(
      Array.from({ length: 100 }, (_, i) => 1_135 + i),
    );
    expect(log.dropped).toBe(1_134);
  });

  it('filters within what it keeps, and refuses a limit under one', () => {
    const log = new SentLog(3);
    for (let n = 1; n <= 6; n++) log.record(entry(n, n % 2 === 0 ? 'bot' : 'alt-a'));
    expect(log.list({ channel: 'bot' }).map((e) => (e.body as { n: number }).n)).toEqual([4, 6]);
    expect(log.list({ to: '+55 11 90000-0005' }).map((e) => (e.body as { n: number }).n)).toEqual([5]);
    expect(() => new SentLog(0)).toThrow();
  });
});
