/**
 * The messages an emulated provider has issued ids for, by id, so a status control can name one: the
 * newest `limit` of them (the sent log's limit), in the order they were issued. A sandbox left up for days
 * sends without end; what a status is asked for is a recent send, and an older id answers as one never
 * issued, as the sent log lets its oldest entries go.
 */
export class IssuedMessages<V> {
  readonly #byId = new Map<string, V>();

  constructor(private readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error('at least one issued message is kept');
  }

  set(id: string, message: V): void {
    this.#byId.delete(id);
    this.#byId.set(id, message);
    // A Map iterates in insertion order: its first key is the oldest issued.
    if (this.#byId.size > this.limit) this.#byId.delete(this.#byId.keys().next().value!);
  }

  get(id: string): V | undefined {
    return this.#byId.get(id);
  }

  clear(): void {
    this.#byId.clear();
  }
}
