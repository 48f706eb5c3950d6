import type { Bus } from './bus.js';
import { NatsBus } from './nats-transport.js';

export interface BusConnectOptions {
  /** `nats://…` (or `tls://…`) for NATS JetStream, `amqp://…` (or `amqps://…`) for RabbitMQ. */
  url: string;
  /** Isolates subjects, streams, exchanges and queues, e.g. per test file; empty in production. */
  prefix?: string;
  /** Name shown in the broker's connection list. */
  name?: string;
  onHandlerError?: (error: unknown, context: { subject: string }) => void;
}

export type BusKind = 'nats' | 'rabbitmq';

/** Which broker a bus URL names, from its scheme. */
export function busKindOf(url: string): BusKind {
  const scheme = url.slice(0, url.indexOf(':')).toLowerCase();
  if (scheme === 'nats' || scheme === 'tls') return 'nats';
  if (scheme === 'amqp' || scheme === 'amqps') return 'rabbitmq';
  throw new Error(
    `a bus URL starts with nats://, tls://, amqp:// or amqps://, not "${url.split('@').pop()}"`,
  );
}

/** The one way a process opens its bus: the URL's scheme picks the transport. */
export async function connectBus(options: BusConnectOptions): Promise<Bus> {
  switch (busKindOf(options.url)) {
    case 'nats':
      return NatsBus.connect(options);
    case 'rabbitmq': {
      // Loaded only here, so a NATS process never loads amqplib.
      const { RabbitBus } = await import('./rabbitmq-transport.js');
      return RabbitBus.connect(options);
    }
  }
}
