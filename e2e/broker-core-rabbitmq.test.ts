import { inject } from 'vitest';
import { brokerCore } from './support/broker-core.js';

brokerCore('RabbitMQ', () => inject('infra').rabbitmqUrl);
