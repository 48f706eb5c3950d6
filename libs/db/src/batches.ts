/**
 * Runs `batch` (a statement over at most `size` rows, saying how many it did) until one does fewer, and
 * says how many in all. For work over every row of a tenant's, which one statement would make as long as
 * the tenant likes: each statement is a transaction, and a long one holds every outbox relay's fence.
 */
export async function inBatches(batch: (size: number) => Promise<number>, size: number): Promise<number> {
  let total = 0;
  for (;;) {
    const done = await batch(size);
    total += done;
    if (done < size) return total;
  }
}
