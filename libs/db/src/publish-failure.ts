import type { Bus } from '@inbox/bus';
import { AppError } from '@inbox/contracts';

/**
 * Why a publish failed, as far as the relay can tell. `refused`: the broker will never take this message
 * (retrying it only blocks the rows behind it). `unavailable`: the broker cannot be reached or did not
 * answer; every row would fail alike, so order is kept and the pass waits. `unknown`: anything else; a row
 * that keeps failing so while later rows go through is set aside too.
 */
export const PublishFailure = {
  refused: 'refused',
  unavailable: 'unavailable',
  unknown: 'unknown',
} as const;
export type PublishFailure = (typeof PublishFailure)[keyof typeof PublishFailure];

// The NATS client checks the server's max_payload before sending and throws at once.
const clientPayloadRefusal = (error: Error) =>
  error.name === 'InvalidArgumentError' && /max_payload/i.test(error.message);
// JetStream's own answer when a stream caps message size (JSStreamMessageExceedsMaximumErr).
const streamSizeRefusal = (error: Error) =>
  error.name === 'JetStreamApiError' && (error as Error & { code?: unknown }).code === 10054;

// The nats.js names for a server that is gone, slow, or has no JetStream listening.
const outageNames = new Set([
  'TimeoutError',
  'NoRespondersError',
  'RequestError',
  'ConnectionError',
  'ClosedConnectionError',
  'DrainingConnectionError',
  'JetStreamNotEnabled',
]);

export function classifyPublishFailure(error: unknown, bus: Pick<Bus, 'healthy'>): PublishFailure {
  if (error instanceof Error && (clientPayloadRefusal(error) || streamSizeRefusal(error))) {
    return PublishFailure.refused;
  }
  if (!bus.healthy()) return PublishFailure.unavailable;
  if (error instanceof AppError && error.status === 503) return PublishFailure.unavailable;
  if (error instanceof Error && outageNames.has(error.name)) return PublishFailure.unavailable;
  return PublishFailure.unknown;
}
