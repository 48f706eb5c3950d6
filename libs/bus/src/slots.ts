/**
 * What a process has in flight (the responses a server has not finished, the commands a connection waits
 * for or runs), in an array of numbered slots that are reused, not in a Set or a Map.
 *
 * Why not a Set or a Map: one that lives as long as the process sits in V8's old generation while the
 * values that come and go in it are young. Each time its hash table is rebuilt (every few dozen additions,
 * however many were deleted) the old table stays behind, linked to the new one and still holding what it
 * held. Until the next full collection those dead tables are roots to the young-generation collector, so
 * whatever was in flight at any rebuild, and everything reachable from it, survives the collections it
 * should have died in and is promoted. Under the door's 429 load a Set of the gateway's in-flight responses
 * kept 40 % of its young allocation alive (under 4 % without it), for a third more CPU a request and
 * twice the p99 (bench/RESULTS.md, twenty-third session). The array only grows to the peak of what is
 * held at once, and a released slot is cleared at once.
 */
export class Slots<T> {
  private readonly slots: (T | undefined)[] = [];
  private readonly free: number[] = [];

  /** Holds `value` in a free slot and returns that slot's number. */
  hold(value: T): number {
    const slot = this.free.pop() ?? this.slots.length;
    this.slots[slot] = value;
    return slot;
  }

  /** What the slot holds; undefined for a released slot or a number no slot has. */
  get(slot: number): T | undefined {
    return this.slots[slot];
  }

  /** Frees the slot; releasing it again, or a slot that holds nothing, does nothing. */
  release(slot: number): void {
    if (this.slots[slot] === undefined) return;
    this.slots[slot] = undefined;
    this.free.push(slot);
  }

  get size(): number {
    return this.slots.length - this.free.length;
  }

  /** How many slots exist: the most values held at once so far. */
  get capacity(): number {
    return this.slots.length;
  }

  /** Every value held, in slot order. */
  *values(): IterableIterator<T> {
    for (const value of this.slots) if (value !== undefined) yield value;
  }

  clear(): void {
    this.slots.length = 0;
    this.free.length = 0;
  }
}
