import { Slots } from './slots.js';

/**
 * The commands a connection has sent and waits for, by the id their reply carries: `<slot>-<count>`, the
 * slot they are held in (Slots, for why not a Map) and which call, counted from the connection's first,
 * so that a reply coming after its caller gave up finds nothing even once another call holds the slot.
 */
export class PendingCalls<T> {
  private readonly slots = new Slots<{ count: number; call: T }>();
  private issued = 0;

  /** Holds the call; returns the id its reply will carry. */
  add(call: T): string {
    const count = ++this.issued;
    return `${this.slots.hold({ count, call })}-${count}`;
  }

  get(id: string): T | undefined {
    const slot = this.slotHolding(id);
    return slot === undefined ? undefined : this.slots.get(slot)!.call;
  }

  /** Forgets the call; an id already forgotten, or of no call, changes nothing. */
  delete(id: string): void {
    const slot = this.slotHolding(id);
    if (slot !== undefined) this.slots.release(slot);
  }

  *values(): IterableIterator<T> {
    for (const { call } of this.slots.values()) yield call;
  }

  /** The slot holding the call the id names, read strictly: the id comes back from the wire. */
  private slotHolding(id: string): number | undefined {
    const dash = id.indexOf('-');
    const text = id.slice(0, dash);
    const slot = Number(text);
    if (dash <= 0 || String(slot) !== text) return undefined;
    const held = this.slots.get(slot);
    return held && String(held.count) === id.slice(dash + 1) ? slot : undefined;
  }
}
