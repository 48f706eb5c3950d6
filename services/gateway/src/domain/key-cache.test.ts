import { describe, expect, it } from 'vitest';
import { type CachedWorkspace, KeyCache } from './key-cache.js';

const workspace = (id: string): CachedWorkspace => ({
  id,
  status: 'active',
  default_country_code: '55',
  key_hint: 'h',
});

describe('KeyCache', () => {
  it('forgets entries after their time to live', () => {
    let now = 0;
    const cache = new KeyCache({ ttlMs: 5_000, maxEntries: 10, now: () => now });
    cache.set('d1', workspace('w1'));
    now = 4_999;
    expect(cache.get('d1')?.id).toBe('w1');
    now = 5_000;
    expect(cache.get('d1')).toBeUndefined();
  });

  it('drops every entry of a workspace at once', () => {
    const cache = new KeyCache();
    cache.set('d1', workspace('w1'));
    cache.set('d2', workspace('w1'));
    cache.set('d3', workspace('w2'));
    cache.dropWorkspace('w1');
    expect(cache.get('d1')).toBeUndefined();
    expect(cache.get('d2')).toBeUndefined();
    expect(cache.get('d3')?.id).toBe('w2');
  });

  it('does not cache a lookup that started before an invalidation', () => {
    const cache = new KeyCache();
    const epoch = cache.epoch;
    cache.dropWorkspace('w1');
    cache.set('d1', workspace('w1'), epoch);
    expect(cache.get('d1')).toBeUndefined();
    cache.set('d1', workspace('w1'), cache.epoch);
    expect(cache.get('d1')?.id).toBe('w1');
  });

  it('stays within its size by evicting the oldest entry', () => {
    const cache = new KeyCache({ ttlMs: 60_000, maxEntries: 2 });
    cache.set('d1', workspace('w1'));
    cache.set('d2', workspace('w2'));
    cache.set('d3', workspace('w3'));
    expect(cache.get('d1')).toBeUndefined();
    expect(cache.get('d3')?.id).toBe('w3');
  });

  it('remembers unknown keys for their own time, apart from known ones', () => {
    let now = 0;
    const cache = new KeyCache({ ttlMs: 5_000, unknownTtlMs: 30_000, maxEntries: 2, now: () => now });
    cache.set('d1', workspace('w1'));
    for (const digest of ['x1', 'x2', 'x3']) cache.setUnknown(digest);
    expect(cache.get('x1')).toBeUndefined();
    expect(cache.get('x3')).toBeNull();
    // A flood of unknown keys never pushes out a known one.
    expect(cache.get('d1')?.id).toBe('w1');
    now = 29_999;
    expect(cache.get('x3')).toBeNull();
    now = 30_000;
    expect(cache.get('x3')).toBeUndefined();
  });

  it('forgets unknown keys on any invalidation, and does not record one read before it', () => {
    const cache = new KeyCache();
    cache.setUnknown('x1');
    const epoch = cache.epoch;
    cache.dropWorkspace('w1');
    expect(cache.get('x1')).toBeUndefined();
    cache.setUnknown('x2', epoch);
    expect(cache.get('x2')).toBeUndefined();
  });

  it('tells a key found in a workspace in the last half hour, until its workspace changes', () => {
    let now = 0;
    const cache = new KeyCache({ ttlMs: 5_000, now: () => now });
    cache.set('d1', workspace('w1'));
    cache.set('d2', workspace('w2'));
    now = 29 * 60_000;
    expect(cache.get('d1')).toBeUndefined();
    expect(cache.foundLately('d1')).toBe(true);
    expect(cache.foundLately('never')).toBe(false);
    cache.dropWorkspace('w1');
    expect(cache.foundLately('d1')).toBe(false);
    expect(cache.foundLately('d2')).toBe(true);
    now = 30 * 60_000;
    expect(cache.foundLately('d2')).toBe(false);
  });
});
