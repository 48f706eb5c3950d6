export type BenchBroker = 'nats' | 'rabbitmq';

/** The brokers a run measures: BUS=nats or BUS=rabbitmq for one, both by default, side by side. */
export function benchBrokers(): BenchBroker[] {
  const chosen = process.env.BUS;
  if (chosen === 'nats' || chosen === 'rabbitmq') return [chosen];
  return ['nats', 'rabbitmq'];
}
