import { fileURLToPath } from 'node:url';
import { vi } from 'vitest';
import { z } from 'zod';
import type { ChannelDescriptor } from '../src/channel-descriptors.js';

/** A channel only tests know, selectable in send-message, with a provider value of its own. */
export const fakeChannel = 'fake-chat';
export const fakeProvider = 'fake-provider';

const fakeDescriptor: ChannelDescriptor<{ base_url: string }> = {
  provider: fakeProvider,
  sendMessage: true,
  externalSend: true,
  receivesInbound: true,
  hasWindow: false,
  hasTemplates: false,
  config: z.object({ base_url: z.string() }),
  accountId: () => 'fake-account',
};

const descriptorModule = fileURLToPath(new URL('../src/channel-descriptors.ts', import.meta.url));

/**
 * Adds the fake channel to the descriptor table for every module imported (dynamically) after this
 * call: the module cache is emptied first, so the lists, enums and texts are derived again.
 */
export function addFakeChannel(): void {
  vi.resetModules();
  vi.doMock(descriptorModule, async (importOriginal) => {
    const original = await importOriginal<typeof import('../src/channel-descriptors.js')>();
    return {
      ...original,
      channelDescriptors: { ...original.channelDescriptors, [fakeChannel]: fakeDescriptor },
    };
  });
}

export function removeFakeChannel(): void {
  vi.doUnmock(descriptorModule);
  vi.resetModules();
}
