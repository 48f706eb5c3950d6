import { describe, expect, it } from 'vitest';
import { nextStep, parseRetryAfter, parseSchedule } from './retry-policy.js';

const now = new Date('2026-01-01T00:00:00Z');
const failed = (statusCode: number | null, retryAfterSeconds: number | null = null) => ({
  statusCode,
  error: statusCode === null ? 'timeout' : null,
  retryAfterSeconds,
});
const at = (step: ReturnType<typeof nextStep>) =>
  step.kind === 'retry' ? (step.at.getTime() - now.getTime()) / 1000 : NaN;

describe('retry policy', () => {
  const schedule = parseSchedule('5,300,1800,7200,18000,36000,36000');

  it('delivers on 2xx and treats 410 as an endpoint gone', () => {
    expect(nextStep(1, failed(204), { scheduleSeconds: schedule }, now)).toEqual({ kind: 'delivered' });
    expect(nextStep(1, failed(410), { scheduleSeconds: schedule }, now)).toEqual({ kind: 'endpoint-gone' });
  });

  it('follows the schedule with ±20 % jitter, for any failure', () => {
    expect(at(nextStep(1, failed(500), { scheduleSeconds: schedule, random: () => 0 }, now))).toBeCloseTo(4);
    expect(
      at(nextStep(1, failed(null), { scheduleSeconds: schedule, random: () => 0.999999 }, now)),
    ).toBeCloseTo(6);
    expect(at(nextStep(2, failed(404), { scheduleSeconds: schedule, random: () => 0.5 }, now))).toBeCloseTo(
      300,
    );
    expect(at(nextStep(7, failed(500), { scheduleSeconds: schedule, random: () => 0.5 }, now))).toBeCloseTo(
      36000,
    );
  });

  it('gives up after the last delay', () => {
    expect(nextStep(8, failed(500), { scheduleSeconds: schedule }, now)).toMatchObject({ kind: 'give-up' });
  });

  it('honours Retry-After on 429 and 503 within [delay, 2 × delay]', () => {
    const policy = { scheduleSeconds: schedule, random: () => 0.5 };
    expect(at(nextStep(2, failed(429, 400), policy, now))).toBe(400);
    expect(at(nextStep(2, failed(503, 10), policy, now))).toBe(300);
    expect(at(nextStep(2, failed(429, 10_000), policy, now))).toBe(600);
    // Not on other statuses.
    expect(at(nextStep(2, failed(500, 10_000), policy, now))).toBeCloseTo(300);
  });

  it('reads Retry-After as seconds or as a date', () => {
    expect(parseRetryAfter('120', now)).toBe(120);
    expect(parseRetryAfter('Thu, 01 Jan 2026 00:01:00 GMT', now)).toBe(60);
    expect(parseRetryAfter('soon', now)).toBeNull();
    expect(parseRetryAfter(undefined, now)).toBeNull();
  });
});
