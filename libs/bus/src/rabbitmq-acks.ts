import type { Channel, Message } from 'amqplib';

interface Unsettled {
  message: Message | undefined;
  acked: boolean;
}

/** Where a delivery stands in its channel's queue of unsettled ones, kept on the message itself. */
const place = Symbol('unsettled delivery');
type Placed = Message & { [place]?: Unsettled };

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
 *
 * The unsettled deliveries are an array in delivery order (the broker numbers a channel's deliveries
 * upwards), not a Map: a Map living as long as the channel, its entries coming and going with every
 * message, keeps whole messages alive through V8's young collections (libs/bus/src/slots.ts).
 */
export class ChannelAcks {
  private readonly unsettled: Unsettled[] = [];
  private flushed: Promise<void> | undefined;

  constructor(private readonly channel: Channel) {}

  received(message: Message): void {
    const entry: Unsettled = { message, acked: false };
    (message as Placed)[place] = entry;
    this.unsettled.push(entry);
  }

  /** Resolves once the acknowledgement is written, so a drain that waits for handlers waits for it too. */
  ack(message: Message): Promise<void> {
    if ((message as Placed)[place]?.message !== message) this.received(message);
    (message as Placed)[place]!.acked = true;
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
    const entry = (message as Placed)[place];
    if (entry?.message === message) entry.message = undefined;
    settle(() => this.channel.nack(message, false, true));
  }

  private flush(): void {
    const unsettled = this.unsettled;
    let upTo: Message | undefined;
    // The settled run from the oldest delivery: the ones acknowledged now and those settled before.
    let run = 0;
    for (; run < unsettled.length; run++) {
      const entry = unsettled[run]!;
      if (entry.message === undefined) continue;
      if (!entry.acked) break;
      upTo = entry.message;
      entry.message = undefined;
    }
    if (upTo) settle(() => this.channel.ack(upTo, true));
    for (let i = run; i < unsettled.length; i++) {
      const entry = unsettled[i]!;
      if (entry.message === undefined || !entry.acked) continue;
      const message = entry.message;
      entry.message = undefined;
      settle(() => this.channel.ack(message));
    }
    // Only the unsettled stay, in place (a new array would be garbage still holding the entries): behind
    // a delivery held long (a handler waiting out an outage), the settled ones would otherwise pile up and
    // every flush walk them again.
    let kept = 0;
    for (const entry of unsettled) if (entry.message !== undefined) unsettled[kept++] = entry;
    unsettled.length = kept;
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
