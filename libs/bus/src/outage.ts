import { setTimeout as pause } from 'node:timers/promises';
import { AppError } from '@inbox/contracts';

// A peer that cannot be reached, whatever the client: Node's own codes.
const unreachableCodes = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EAI_AGAIN',
]);
// A database that cannot serve now (SQLSTATE): a connection exception (class 08), shutting down or not
// yet accepting (57P01-57P03), out of connections (53300).
const unavailableStates = /^(08...|57P0[123]|53300)$/;
// pg and pg-pool say these in words only.
const unavailableWords = [
  'timeout exceeded when trying to connect',
  'Connection terminated',
  'is not queryable',
];

/**
 * Whether a handler's failure says that something it depends on (its database, a service it asks) cannot
 * be reached now, rather than that the event is at fault: another delivery would fail the same way until
 * the outage ends, and counting those deliveries toward the dead letters would dead-letter every event
 * that arrived during an outage longer than the redelivery schedule (a database failover of minutes).
 */
export function isOutage(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    // A service of ours that did not answer the handler's command (AppError.unavailable).
    if (current instanceof AppError) return current.status === 503;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && (unreachableCodes.has(code) || unavailableStates.test(code))) return true;
    const message = current instanceof Error ? current.message : '';
    if (unavailableWords.some((words) => message.includes(words))) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

export interface OutageWaiting {
  /** How long one delivery waits for an outage to end before it fails as any other failure. */
  maxWaitMs: number;
  /** Pauses between tries; the last repeats. Short, so that a drain never waits long for one. */
  pausesMs: readonly number[];
  /** False once the consumer drains: the delivery stops waiting and fails. */
  stillWanted: () => boolean;
  /** Told once a delivery, on the outage's first failure. */
  onOutage: (error: unknown) => void;
}

/**
 * Runs a delivery's handler again while it fails with an outage (isOutage), within the same delivery: the
 * event keeps its place and its delivery count, and the consumer's slot, which during an outage no other
 * event could use either. A failure of another kind, a drain, or an outage longer than `maxWaitMs` ends
 * the waiting, and the failure is the transport's to redeliver or dead-letter as before.
 */
export async function waitingOutOutages(run: () => Promise<void>, waiting: OutageWaiting): Promise<void> {
  const started = Date.now();
  for (let tries = 0; ; tries++) {
    try {
      await run();
      return;
    } catch (error) {
      if (!isOutage(error) || !waiting.stillWanted() || Date.now() - started >= waiting.maxWaitMs)
        throw error;
      if (tries === 0) waiting.onOutage(error);
      await pause(waiting.pausesMs[Math.min(tries, waiting.pausesMs.length - 1)] ?? 1_000);
    }
  }
}
