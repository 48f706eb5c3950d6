// The fault suite's smaller version (the whole one is `npm run chaos`): a careful client's keyed, retried
// load of send-message, send-template and external send, while messaging and then the gateway are
// SIGKILLed mid-load and started again. Nothing answered may be lost, no key may reach the provider
// twice, and every key in flight at a kill must have its final answer within 10 s of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Delivery, describeFigures, type FaultFigures, runFaults } from '../bench/chaos/fault-run.js';
import { startReceiver, startTestStack, type TestStack } from './support/test-stack.js';

let stack: TestStack;
let receiver: Awaited<ReturnType<typeof startReceiver>>;

beforeAll(async () => {
  receiver = await startReceiver();
  stack = await startTestStack({
    rateLimitPerMinute: 1_000_000,
    // A delivery cut off by a kill is tried again soon, so every message.sent arrives within the wait.
    webhookTimeoutMs: 3_000,
    webhookRetrySchedule: '1,1,2,5,10',
  });
});

afterAll(async () => {
  await stack?.stop();
  await receiver?.close();
});

const deliveries = (): Delivery[] =>
  receiver.received.map((request) => ({
    eventId: String(request.headers['x-webhook-id']),
    body: JSON.parse(request.rawBody) as Record<string, unknown>,
  }));

describe('fault suite: messaging and the gateway SIGKILLed under a keyed load', () => {
  let figures: FaultFigures;

  it('answers every key, loses nothing and sends nothing twice', { timeout: 240_000 }, async () => {
    figures = await runFaults({
      stack,
      adminToken: stack.adminToken,
      webhookUrl: `${receiver.url}/hooks`,
      deliveries,
      services: ['messaging', 'gateway'],
      workers: 4,
      gapMs: 3_000,
      finalPerGap: 4,
      giveUpAfterMs: 60_000,
    });
    // The figures as `npm run chaos` prints them, for whoever reads a failure.
    console.log(describeFigures(figures).join('\n'));
    expect(figures.answered).toBeGreaterThan(0);
    expect(figures.notFinal).toEqual([]);
    expect(figures.lost).toEqual([]);
    expect([...figures.providerDuplicates]).toEqual([]);
    expect(figures.neverAtProvider).toEqual([]);
    expect([...figures.webhookDuplicates]).toEqual([]);
  });

  it('gives every key in flight at a kill its final answer within 10 s of it', () => {
    expect(figures.kills.map((kill) => kill.service)).toEqual(['messaging', 'gateway']);
    for (const kill of figures.kills) {
      expect(kill.inFlight, `keys in flight when ${kill.service} was killed`).toBeGreaterThan(0);
      expect(
        kill.late.map((o) => `${o.request.kind} ${o.request.key}: ${o.lastRetried}`),
        `${kill.service}: keys final later than 10 s after the kill`,
      ).toEqual([]);
    }
  });
});
