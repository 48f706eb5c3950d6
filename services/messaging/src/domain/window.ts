import { channelDescriptors, isIntegrationChannel } from '@inbox/contracts';

export const windowMs = 24 * 60 * 60 * 1000;

/** The customer-service window: open for 24 hours after the contact's last message. */
export function windowIsOpen(lastInboundAt: Date | null, now: Date): boolean {
  return lastInboundAt !== null && now.getTime() - lastInboundAt.getTime() < windowMs;
}

/** Channels whose provider only takes free text inside the window. */
export function channelHasWindow(channel: string): boolean {
  return isIntegrationChannel(channel) && channelDescriptors[channel].hasWindow;
}
