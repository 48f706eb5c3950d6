import { uniquePrefix } from '@inbox/testkit';
import { type Channel, type ChannelModel, connect, type Message } from 'amqplib';
import { afterEach, describe, expect, inject, it, vi } from 'vitest';
import { ChannelAcks } from '../src/rabbitmq-acks.js';

describe('acknowledging a channel’s deliveries together', () => {
  const open: ChannelModel[] = [];
  afterEach(async () => {
    await Promise.all(open.splice(0).map((connection) => connection.close().catch(() => undefined)));
  });

  /** A queue holding `count` messages, read unacknowledged through a channel whose ack calls are counted. */
  const deliveries = async (count: number) => {
    const connection = await connect(inject('infra').rabbitmqUrl);
    open.push(connection);
    const channel = await connection.createChannel();
    const queue = `${uniquePrefix()}.acks`;
    await channel.assertQueue(queue, { durable: false });
    for (let i = 1; i <= count; i++) channel.sendToQueue(queue, Buffer.from(String(i)));
    const acks = new ChannelAcks(channel);
    const messages: Message[] = [];
    for (let i = 1; i <= count; i++) {
      const message = await channel.get(queue, { noAck: false });
      if (!message) throw new Error(`message ${i} did not arrive`);
      acks.received(message);
      messages.push(message);
    }
    const ackCalls = vi.spyOn(channel, 'ack');
    return { connection, channel, queue, acks, messages, ackCalls };
  };

  /** What is left in the queue once the channel has closed, which hands back what it left unacknowledged. */
  const leftAfterClosing = async (connection: ChannelModel, channel: Channel, queue: string) => {
    await channel.close();
    const reader = await connection.createChannel();
    const left: string[] = [];
    for (let message = await reader.get(queue); message; message = await reader.get(queue))
      left.push(message.content.toString());
    return left;
  };

  it('sends the acknowledgements of one turn as one `multiple` frame, and none of the messages comes back', async () => {
    const { connection, channel, queue, acks, messages, ackCalls } = await deliveries(10);
    await Promise.all(messages.map((message) => acks.ack(message)));
    expect(ackCalls.mock.calls).toEqual([[messages[9], true]]);
    expect(await leftAfterClosing(connection, channel, queue)).toEqual([]);
  });

  it('never acknowledges past a delivery still being handled', async () => {
    const { connection, channel, queue, acks, messages, ackCalls } = await deliveries(5);
    const [first, ...rest] = messages;
    await Promise.all(rest.map((message) => acks.ack(message)));
    expect(ackCalls.mock.calls).toEqual(rest.map((message) => [message]));
    // The first, still unsettled, goes back to the queue with the channel; the others were taken.
    expect(await leftAfterClosing(connection, channel, queue)).toEqual(['1']);
    expect(first?.content.toString()).toBe('1');
  });

  it('acknowledges the settled run from the oldest delivery together once the one holding it back is done', async () => {
    const { connection, channel, queue, acks, messages, ackCalls } = await deliveries(6);
    await Promise.all([acks.ack(messages[0]!), acks.ack(messages[1]!), acks.ack(messages[4]!)]);
    await Promise.all([acks.ack(messages[2]!), acks.ack(messages[3]!)]);
    expect(ackCalls.mock.calls).toEqual([[messages[1], true], [messages[4]], [messages[3], true]]);
    expect(await leftAfterClosing(connection, channel, queue)).toEqual(['6']);
  });

  it('hands a delivery back at once, and a later `multiple` acknowledgement passes it by', async () => {
    const { connection, channel, queue, acks, messages, ackCalls } = await deliveries(3);
    acks.requeue(messages[0]!);
    await Promise.all([acks.ack(messages[1]!), acks.ack(messages[2]!)]);
    expect(ackCalls.mock.calls).toEqual([[messages[2], true]]);
    expect(await leftAfterClosing(connection, channel, queue)).toEqual(['1']);
  });

  it('keeps the delivery order across turns, as settled deliveries leave and others are handed back', async () => {
    const { connection, channel, queue, acks, messages, ackCalls } = await deliveries(8);
    const m = messages as [Message, Message, Message, Message, Message, Message, Message, Message];
    await Promise.all([acks.ack(m[1]), acks.ack(m[3])]);
    await Promise.all([acks.ack(m[0]), acks.ack(m[2])]);
    acks.requeue(m[4]);
    await Promise.all([acks.ack(m[5]), acks.ack(m[7])]);
    await acks.ack(m[6]);
    expect(ackCalls.mock.calls).toEqual([[m[1]], [m[3]], [m[2], true], [m[5], true], [m[7]], [m[6], true]]);
    expect(await leftAfterClosing(connection, channel, queue)).toEqual(['5']);
  });
});
