import { commandTimeoutMs, commandTimeoutsMs } from '@inbox/contracts';
import { describe, expect, it } from 'vitest';
import { stopGraceMs } from '../src/lifecycle.js';

describe('stopping on SIGTERM', () => {
  it('waits longer than any command a service may be waiting on, so no send is cut off mid-way', () => {
    for (const subject of Object.keys(commandTimeoutsMs).filter((key) => key !== 'default'))
      expect(stopGraceMs).toBeGreaterThan(
        commandTimeoutMs(subject as Parameters<typeof commandTimeoutMs>[0]),
      );
  });
});
