import { type LocalServer, startNats, startRabbitMQ } from '@inbox/testkit';

export type BenchBroker = 'nats' | 'rabbitmq';

/** The brokers a run measures: BUS=nats or BUS=rabbitmq for one, both by default, side by side. */
export function benchBrokers(): BenchBroker[] {
  const chosen = process.env.BUS;
  if (chosen === 'nats' || chosen === 'rabbitmq') return [chosen];
  return ['nats', 'rabbitmq'];
}

/** A private server of the broker, on free loopback ports, stopped by the caller. */
export function startBroker(broker: BenchBroker): Promise<LocalServer> {
  return broker === 'rabbitmq' ? startRabbitMQ() : startNats();
}
