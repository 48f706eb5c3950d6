import type { WebhookDelivery } from './channel-emulator.js';
import { ControlError } from './control-error.js';

/** A connector that hangs must not hang the test that asked for the webhook. */
export const WEBHOOK_TIMEOUT_MS = 10_000;

/** What a receiver answered a webhook: its status, and its `Retry-After` as written (some providers heed it). */
export interface WebhookAnswer {
  status: number;
  retryAfter: string | null;
  /** The answer's headers, lower-cased, and how long it took: what a provider that logs answers keeps. */
  headers?: Record<string, string>;
  elapsedMs?: number;
}

/** Posts a webhook as the provider would; rejects when the receiver cannot be reached or times out. */
export async function postWebhook(
  fetchImpl: typeof fetch,
  delivery: WebhookDelivery,
): Promise<WebhookAnswer> {
  const startedAt = performance.now();
  const response = await fetchImpl(delivery.url, {
    method: 'POST',
    headers: delivery.headers,
    body: delivery.body,
    signal: AbortSignal.timeout(WEBHOOK_TIMEOUT_MS),
  });
  // Drained so the connection can be reused or closed.
  await response.arrayBuffer();
  return {
    status: response.status,
    retryAfter: response.headers.get('retry-after'),
    headers: Object.fromEntries(response.headers),
    elapsedMs: Math.round(performance.now() - startedAt),
  };
}

/** Posts a webhook as the provider would and returns what the receiver answered. */
export async function answerOfWebhook(
  fetchImpl: typeof fetch,
  delivery: WebhookDelivery,
): Promise<WebhookAnswer> {
  try {
    return await postWebhook(fetchImpl, delivery);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ControlError(502, `webhook delivery to ${delivery.url} failed: ${reason}`, { cause: error });
  }
}

/** Posts a webhook as the provider would and returns the status the receiver answered. */
export async function deliverWebhook(fetchImpl: typeof fetch, delivery: WebhookDelivery): Promise<number> {
  return (await answerOfWebhook(fetchImpl, delivery)).status;
}
