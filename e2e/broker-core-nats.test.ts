import { inject } from 'vitest';
import { brokerCore } from './support/broker-core.js';

brokerCore('NATS JetStream', () => inject('infra').natsUrl);
