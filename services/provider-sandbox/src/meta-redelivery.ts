import type { RedeliveryPolicy } from './redelivery.js';

/** "Unacknowledged responses will be dropped after 7 days" (WhatsApp, create-webhook-endpoint). */
export const WHATSAPP_RETRY_WINDOW_MS = 7 * 24 * 3_600_000;
/**
 * "If delivery of a notification continues to fail for 1 hour, you will receive a Webhooks Disabled
 * alert, and your app will be unsubscribed from the webhooks for the Page or Instagram Professional
 * account" (Messenger Platform, webhooks).
 */
export const MESSAGING_RETRY_WINDOW_MS = 3_600_000;

/**
 * How Meta delivers a webhook again: only a 200 takes it ("respond with HTTP status 200 … anything other
 * than status 200" is retried); "retried immediately, then a few more times with decreasing frequency"
 * until `windowMs` after the first delivery, its last try at the window's end. Meta publishes no schedule:
 * the emulator doubles its wait from a minute.
 */
export function metaRedelivery(windowMs: number): RedeliveryPolicy {
  return {
    takes: (answer) => answer?.status === 200,
    nextWaitMs: ({ failures, elapsedMs }) => {
      if (elapsedMs >= windowMs) return undefined;
      const backoff = failures <= 1 ? 0 : 60_000 * 2 ** (failures - 2);
      return Math.min(backoff, windowMs - elapsedMs);
    },
  };
}
