import { uniquePrefix } from '@inbox/testkit';
import { inject } from 'vitest';
import { type Bus, NatsBus } from '../src/index.js';
import { busContract } from './bus-contract.js';

busContract('nats', async (replicas) => {
  const prefix = uniquePrefix();
  const buses: Bus[] = [];
  for (let i = 0; i < replicas; i++)
    buses.push(await NatsBus.connect({ url: inject('infra').natsUrl, prefix }));
  return buses;
});
