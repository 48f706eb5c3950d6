import type { WebhookDelivery } from './channel-emulator.js';
import { ControlError } from './control-error.js';

/** A connector that hangs must not hang the test that asked for the webhook. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** Posts a webhook as the provider would and returns the status the receiver answered. */
export async function deliverWebhook(fetchImpl: typeof fetch, delivery: WebhookDelivery): Promise<number> {
  try {
    const response = await fetchImpl(delivery.url, {
      method: 'POST',
      headers: delivery.headers,
      body: delivery.body,
      signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
    });
    // Drained so the connection can be reused or closed.
    await response.arrayBuffer();
    return response.status;
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ControlError(502, `webhook delivery to ${delivery.url} failed: ${reason}`, { cause: error });
  }
}
