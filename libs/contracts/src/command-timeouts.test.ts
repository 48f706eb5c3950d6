import { describe, expect, it } from 'vitest';
import { type CommandSubject, commandTimeoutMs, longestCommandMs, maxProviderTimeoutMs } from './commands.js';

// The connector commands whose handlers call the provider (sends, catalogue fetches, webhook registration).
const providerCalling: CommandSubject[] = [
  'cmd.connector.send-text',
  'cmd.connector.send-template',
  'cmd.connector.prepare-template',
  'cmd.connector.refresh-templates',
  'cmd.connector.create-integration',
];

describe('command timeouts', () => {
  it('outlast the provider call of every connector command that makes one', () => {
    for (const subject of providerCalling)
      expect(commandTimeoutMs(subject)).toBeGreaterThan(maxProviderTimeoutMs);
  });

  it('nest: each send outlasts every command it waits on, one after the other', () => {
    const sum = (...subjects: CommandSubject[]) =>
      subjects.reduce((total, s) => total + commandTimeoutMs(s), 0);
    expect(commandTimeoutMs('cmd.messaging.send-message')).toBeGreaterThan(
      sum('cmd.connector.resolve-integration', 'cmd.connector.send-text'),
    );
    expect(commandTimeoutMs('cmd.messaging.external-send')).toBeGreaterThan(sum('cmd.connector.send-text'));
    expect(commandTimeoutMs('cmd.messaging.send-template')).toBeGreaterThan(
      sum(
        'cmd.connector.resolve-integration',
        'cmd.connector.prepare-template',
        'cmd.connector.send-template',
      ),
    );
    expect(longestCommandMs).toBe(commandTimeoutMs('cmd.messaging.send-template'));
  });
});
