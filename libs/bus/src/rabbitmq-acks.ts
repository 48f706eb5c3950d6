import type { Channel, Message } from 'amqplib';

interface Unsettled {
  message: Message;
  acked: boolean;
}

/**
 * Acknowledges one consuming channel's deliveries in as few frames as their order allows.
 *
 * Why: amqplib writes every frame to the socket on its own, and the broker answers each acknowledgement by
 * sending one message more. A handler that settles its deliveries together (the dispatcher's group commit)
 * then got its next messages one by one, the first of them alone in the next batch, and the broker worked
 * through a frame per message. Acknowledgements made in one turn of the event loop go out as one `multiple`
 * acknowledgement of the longest settled run from the oldest delivery, and one each for the rest.
 *
 * A `multiple` acknowledgement settles every unsettled delivery of the channel up to its tag, so it never
 * reaches past a delivery still being handled; a delivery handed back (nack) leaves the count first.
 */
export class ChannelAcks {
  // Insertion order is delivery order: the broker numbers a channel's deliveries upwards.
  private readonly unsettled = new Map<number, Unsettled>();
  private flushed: Promise<void> | undefined;

  constructor(private readonly channel: Channel) {}

  received(message: Message): void {
    this.unsettled.set(message.fields.deliveryTag, { message, acked: false });
  }

  /** Resolves once the acknowledgement is written, so a drain that waits for handlers waits for it too. */
  ack(message: Message): Promise<void> {
    // Setting a key the map holds keeps its place, so the delivery order stands.
    this.unsettled.set(message.fields.deliveryTag, { message, acked: true });
    this.flushed ??= new Promise((resolve) =>
      setImmediate(() => {
        this.flushed = undefined;
        this.flush();
        resolve();
      }),
    );
    return this.flushed;
  }

  /** Hands the delivery back to its queue, at once; a later `multiple` acknowledgement passes it by. */
  requeue(message: Message): void {
    this.unsettled.delete(message.fields.deliveryTag);
    settle(() => this.channel.nack(message, false, true));
  }

  private flush(): void {
    let upTo: Message | undefined;
    for (const [tag, entry] of this.unsettled) {
      if (!entry.acked) break;
      upTo = entry.message;
      this.unsettled.delete(tag);
    }
    if (upTo) settle(() => this.channel.ack(upTo, true));
    for (const [tag, entry] of this.unsettled) {
      if (!entry.acked) continue;
      this.unsettled.delete(tag);
      settle(() => this.channel.ack(entry.message));
    }
  }
}

/** Acknowledges on the channel the message came by; once that channel is gone the broker has it back. */
export function settle(action: () => void): void {
  try {
    action();
  } catch {
    // The channel closed: the broker returns the message to its queue by itself.
  }
}
