export interface AttemptOutcome {
  statusCode: number | null;
  error: string | null;
  /** Seconds from a Retry-After header (429/503 only), when given. */
  retryAfterSeconds: number | null;
}

export type NextStep =
  | { kind: 'delivered' }
  | { kind: 'retry'; at: Date }
  | { kind: 'give-up'; reason: string }
  | { kind: 'endpoint-gone' };

export interface RetryPolicy {
  /** Seconds to wait after the 1st, 2nd, … failed attempt (WEBHOOK_RETRY_SCHEDULE). */
  scheduleSeconds: number[];
  /** Random number in [0, 1), injectable so tests are exact. */
  random?: () => number;
}

export function parseSchedule(setting: string): number[] {
  return setting.split(',').map((part) => Number(part.trim()));
}

export function isSuccess(outcome: AttemptOutcome): boolean {
  return outcome.statusCode !== null && outcome.statusCode >= 200 && outcome.statusCode < 300;
}

/**
 * What follows an attempt. 2xx: delivered. 410: the receiver says it is gone for good. Anything else
 * (another status, a timeout, a connection error) is retried on the schedule with ±20 % jitter, and a
 * Retry-After (429/503) is honoured within [delay, 2 × delay]; after the last delay, it gives up.
 */
export function nextStep(
  attemptNumber: number,
  outcome: AttemptOutcome,
  policy: RetryPolicy,
  now: Date,
): NextStep {
  if (isSuccess(outcome)) return { kind: 'delivered' };
  if (outcome.statusCode === 410) return { kind: 'endpoint-gone' };
  const delaySeconds = policy.scheduleSeconds[attemptNumber - 1];
  if (delaySeconds === undefined) {
    return { kind: 'give-up', reason: `no success after ${attemptNumber} attempts` };
  }
  const random = policy.random ?? Math.random;
  let waitSeconds = delaySeconds * (0.8 + 0.4 * random());
  const honoursRetryAfter = outcome.statusCode === 429 || outcome.statusCode === 503;
  if (honoursRetryAfter && outcome.retryAfterSeconds !== null) {
    waitSeconds = Math.min(Math.max(outcome.retryAfterSeconds, delaySeconds), 2 * delaySeconds);
  }
  return { kind: 'retry', at: new Date(now.getTime() + waitSeconds * 1000) };
}

/** Retry-After as seconds: a number of seconds or an HTTP date. */
export function parseRetryAfter(value: string | undefined, now: Date): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim());
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, (date - now.getTime()) / 1000);
}
