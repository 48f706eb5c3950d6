import { setTimeout as pause } from 'node:timers/promises';
import { AppError, platformTexts } from '@inbox/contracts';
import { failsEveryDelivery } from './unreadable-event.js';

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
// A database that cannot serve now (SQLSTATE): the connection failed or went (08000, 08001, 08003,
// 08004, 08006), the server is shutting down or not yet accepting (57P01-57P03), out of connections
// (53300). Not a statement timeout (57014), a serialization failure (40001) or a session the server
// ended for idling in a transaction (25P03): those are the handler's own.
const unavailableStates = new Set([
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);
// What pg and pg-pool say, with no code, when the connection fails or none is free.
const unavailableWords = new Set([
  'timeout exceeded when trying to connect',
  'Connection terminated unexpectedly',
  'Connection terminated due to connection timeout',
]);

/**
 * Whether a handler's failure says that something it depends on (its database, a service it asks) cannot
 * be reached now, rather than that the event is at fault: another delivery would fail the same way until
 * the outage ends, and counting those deliveries toward the dead letters would dead-letter every event
 * that arrived during an outage longer than the redelivery schedule (a database failover of minutes).
 * An error with a code is judged by its code alone; words only where there is no code, and only the
 * clients' exact messages (a message can quote the event's data).
 */
export function isOutage(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; current && depth < 5; depth++) {
    if (failsEveryDelivery(current)) return false;
    // A service of ours that could not be reached (AppError.unavailable), not a 503 a handler chose.
    if (current instanceof AppError)
      return current.status === 503 && current.body.error === platformTexts.serviceUnavailable;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return unreachableCodes.has(code) || unavailableStates.has(code);
    if (current instanceof Error && unavailableWords.has(current.message)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Thrown in place of an outage's failure when a drain ended the wait: hand the delivery back, uncounted. */
export class OutageUnfinished extends Error {
  override name = 'OutageUnfinished';

  constructor(cause: unknown) {
    super('the consumer drained while the handler waited out an outage', { cause });
  }
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
 * event could use either. A failure of another kind, or an outage longer than `maxWaitMs`, ends the
 * waiting, and the failure is the transport's to redeliver or dead-letter as before; a drain ends it with
 * OutageUnfinished, which the transport answers by handing the delivery back without counting a failure.
 */
export async function waitingOutOutages(run: () => Promise<void>, waiting: OutageWaiting): Promise<void> {
  const started = Date.now();
  for (let tries = 0; ; tries++) {
    try {
      await run();
      return;
    } catch (error) {
      if (!isOutage(error) || Date.now() - started >= waiting.maxWaitMs) throw error;
      if (!waiting.stillWanted()) throw new OutageUnfinished(error);
      if (tries === 0) waiting.onOutage(error);
      await pause(waiting.pausesMs[Math.min(tries, waiting.pausesMs.length - 1)] ?? 1_000);
    }
  }
}
