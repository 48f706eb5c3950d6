import { startNats, uniquePrefix, waitFor } from '@inbox/testkit';
import { describe, expect, inject, it } from 'vitest';
import { type Bus, NatsBus } from '../src/index.js';
import { busContract } from './bus-contract.js';

busContract('nats', async (replicas) => {
  const prefix = uniquePrefix();
  const buses: Bus[] = [];
  for (let i = 0; i < replicas; i++)
    buses.push(await NatsBus.connect({ url: inject('infra').natsUrl, prefix }));
  return buses;
});

describe('nats transport health', () => {
  it('reports unhealthy while the server is away, so readiness follows an outage', async () => {
    const server = await startNats();
    const bus = await NatsBus.connect({ url: server.url, prefix: uniquePrefix() });
    expect(bus.healthy()).toBe(true);
    await server.stop();
    await waitFor(() => !bus.healthy(), { what: 'the bus to notice the outage' });
    await bus.drain().catch(() => undefined);
  });
});
