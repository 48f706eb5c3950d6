import type { Channel } from 'amqplib';
import { bindingKey, type RabbitNames } from './rabbitmq-names.js';

/**
 * How often one copy of an event is handed out and never answered (its consumer crashed or was cut off)
 * before the broker dead-letters it: a poison event that kills every consumer it reaches stops there.
 * Failures a handler reports are counted by the transport instead (maxDeliver). A queue's arguments
 * cannot change once it exists, so this is one constant, not a per-consumer option.
 */
export const deliveryLimit = 4;

// Kept as long as the NATS DEADLETTER stream keeps its letters, for an operator to look at.
const deadLetterRetentionMs = 30 * 86_400_000;

// Quorum queues replicate across the cluster's nodes, so a node lost never loses an accepted event.
// Dead-lettering at least once (which needs reject-publish overflow) keeps a message in its queue until
// the dead-letter target has confirmed it.
const quorum = { 'x-queue-type': 'quorum' };
const deadLetterAtLeastOnce = { 'x-dead-letter-strategy': 'at-least-once', 'x-overflow': 'reject-publish' };

/** The exchanges every process declares, idempotently, so start order never matters. */
export async function declareExchanges(channel: Channel, names: RabbitNames): Promise<void> {
  await channel.assertExchange(names.eventsExchange, 'topic', { durable: true });
  await channel.assertExchange(names.deadLetterExchange, 'direct', { durable: true });
  await channel.assertExchange(names.noticesExchange, 'direct', { durable: true });
}

/**
 * A durable consumer's queues: its quorum queue bound to the events it takes, one retry queue per delay
 * (a message waits there for its time to live, then is dead-lettered back to the durable's queue), and its
 * dead-letter queue. Declaring them again is a no-op. A former filter's binding is dropped (unbinding what
 * is not bound is a no-op too).
 */
export async function declareDurable(
  channel: Channel,
  names: RabbitNames,
  durable: string,
  { filter, formerFilter }: { filter: string; formerFilter?: string },
  delaysMs: readonly number[],
): Promise<void> {
  const queue = names.durableQueue(durable);
  const key = names.durableKey(durable);
  const deadLetters = names.deadLetterQueue(durable);
  await channel.assertQueue(deadLetters, {
    durable: true,
    arguments: { ...quorum, 'x-message-ttl': deadLetterRetentionMs },
  });
  await channel.bindQueue(deadLetters, names.deadLetterExchange, key);
  await channel.assertQueue(queue, {
    durable: true,
    arguments: {
      ...quorum,
      ...deadLetterAtLeastOnce,
      'x-delivery-limit': deliveryLimit,
      'x-dead-letter-exchange': names.deadLetterExchange,
      'x-dead-letter-routing-key': key,
    },
  });
  // A filter changed since an earlier start leaves its old binding in place unless named as former: the
  // subscription acknowledges unread what it does not take, as it does with whatever else a wildcard lets
  // through.
  await channel.bindQueue(queue, names.eventsExchange, bindingKey(filter));
  if (formerFilter !== undefined && bindingKey(formerFilter) !== bindingKey(filter))
    await channel.unbindQueue(queue, names.eventsExchange, bindingKey(formerFilter));
  for (const delayMs of new Set(delaysMs.filter((delay) => delay > 0))) {
    await channel.assertQueue(names.retryQueue(durable, delayMs), {
      durable: true,
      arguments: {
        ...quorum,
        ...deadLetterAtLeastOnce,
        'x-message-ttl': delayMs,
        // The default exchange routes by queue name: straight back to the durable's queue.
        'x-dead-letter-exchange': '',
        'x-dead-letter-routing-key': queue,
      },
    });
  }
}
