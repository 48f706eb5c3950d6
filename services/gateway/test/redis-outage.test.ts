import { randomBytes } from 'node:crypto';
import type { HostedService } from '@inbox/service-kit';
import { type LocalServer, startRedis } from '@inbox/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hostGateway } from './host-gateway.js';

const adminToken = `adm_${randomBytes(16).toString('hex')}`;
let redis: LocalServer;
let gateway: HostedService;

beforeAll(async () => {
  // A Redis of this file's own, so it can be stopped without disturbing other tests.
  redis = await startRedis();
  gateway = await hostGateway({ adminToken, redisUrl: redis.url, rateLimitPerMinute: 5 });
});
afterAll(async () => {
  await gateway?.stop();
  await redis?.stop();
});

const post = async (path: string, key: string, body: unknown) => {
  const response = await fetch(`${gateway.http.url}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, string> };
};

describe('rate limiting when Redis goes away', () => {
  it('keeps serving with the per-process fallback limiter, never a 500, and says so in metrics', async () => {
    const { body: created } = await post('/admin/v1/workspaces', adminToken, { name: 'outage' });
    expect((await post('/api/v1/send-message', created.api_key!, {})).status).toBe(400);

    await redis.stop();

    const statuses: number[] = [];
    for (let i = 0; i < 8; i++)
      statuses.push((await post('/api/v1/send-message', created.api_key!, {})).status);
    expect(statuses.filter((s) => s >= 500)).toEqual([]);
    // The fallback still enforces the limit, counted in this process alone.
    expect(statuses).toContain(429);
    expect(statuses.slice(0, 5).every((s) => s === 400)).toBe(true);

    const metrics = await (await fetch(`${gateway.http.url}/metrics`)).text();
    const fallback = /gateway_rate_limit_fallback_decisions_total\S* (\d+)/.exec(metrics);
    expect(Number(fallback?.[1])).toBeGreaterThan(0);
    expect(metrics).toMatch(/gateway_rate_limit_refusals_total\S* [1-9]/);
  });
});
