export interface TurnBatchOptions<I, O> {
  /** Runs the batch's items as one statement; the answer has one result per item, in their order. */
  runBatch(items: readonly I[]): Promise<readonly O[]>;
  /**
   * Runs one item on its own: a turn's only call, and each call of a batch that failed for one of its
   * rows. By default the batch's statement with that item alone.
   */
  runAlone?(item: I): Promise<O>;
  /** The largest batch (a statement's arrays stay bounded however many calls a turn brings). */
  maxItems?: number;
}

interface Waiting<I, O> {
  item: I;
  resolve(value: O): void;
  reject(reason: unknown): void;
}

/**
 * Calls made in one turn of the event loop, run together: the first call of a turn schedules the run for
 * the turn's end (`setImmediate`), later calls of the same turn join it, and a batch that reaches
 * `maxItems` runs at once. A bus delivers commands in bursts, so the connector's send records arrive
 * three or so to a turn under load, and each round trip saved is a statement Postgres no longer binds,
 * runs and commits (bench/RESULTS.md, nineteenth session).
 *
 * A batch is one statement, all or nothing. When it fails for one of its rows (a data exception, a
 * broken constraint or a value past a limit, SQLSTATE classes 22, 23 and 54) or for the locks it took
 * together (a deadlock, class 40), every call is run again on its own, so one caller's row fails that
 * caller alone and never the other workspaces' calls that shared its turn. Any other failure (the
 * connection, a timeout) is every call's.
 */
export class TurnBatch<I, O> {
  private waiting: Waiting<I, O>[] = [];
  private scheduled = false;
  private readonly maxItems: number;
  private readonly runAlone: (item: I) => Promise<O>;

  constructor(private readonly options: TurnBatchOptions<I, O>) {
    this.maxItems = options.maxItems ?? 64;
    this.runAlone = options.runAlone ?? ((item) => this.runBatch([item]).then((results) => results[0]!));
  }

  /** The item's result, once the batch it joined has run. */
  run(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.waiting.push({ item, resolve, reject });
      if (this.waiting.length >= this.maxItems) this.flush();
      else if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  private flush(): void {
    this.scheduled = false;
    const batch = this.waiting;
    if (batch.length === 0) return;
    this.waiting = [];
    void this.settle(batch);
  }

  private async settle(batch: Waiting<I, O>[]): Promise<void> {
    let results: readonly O[];
    try {
      results =
        batch.length === 1
          ? [await this.runAlone(batch[0]!.item)]
          : await this.runBatch(batch.map((call) => call.item));
    } catch (error) {
      if (batch.length > 1 && isRowError(error)) return this.settleEachAlone(batch);
      for (const call of batch) call.reject(error);
      return;
    }
    for (const [index, call] of batch.entries()) call.resolve(results[index]!);
  }

  private async runBatch(items: readonly I[]): Promise<readonly O[]> {
    const results = await this.options.runBatch(items);
    if (results.length !== items.length)
      throw new Error(`a batch of ${items.length} answered ${results.length} results`);
    return results;
  }

  private async settleEachAlone(batch: Waiting<I, O>[]): Promise<void> {
    await Promise.all(
      batch.map(async (call) => {
        try {
          call.resolve(await this.runAlone(call.item));
        } catch (error) {
          call.reject(error);
        }
      }),
    );
  }
}

/**
 * A failure that one row of a statement can cause: a data exception (22), a broken constraint (23), or a
 * value past one of Postgres's limits (54: a provider's id too long for an index entry, say). Or one that
 * the batch's many row locks made (40: a deadlock with another statement, or a serialization failure),
 * which its calls, each alone, would not have met.
 */
function isRowError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && ['22', '23', '40', '54'].includes(code.slice(0, 2));
}

/**
 * A batch's rows: the first item of each key (a second call for the same row in one turn would change
 * nothing, as in turn), in the order of their keys, so two batches that share rows take their locks in
 * the same order and one waits for the other instead of both deadlocking. Keys are compared as given:
 * pass uuids in one case (Postgres answers in lower case).
 */
export function firstOfEach<T>(items: readonly T[], keyOf: (item: T) => string): T[] {
  const firsts = new Map<string, T>();
  for (const item of items) {
    const key = keyOf(item);
    if (!firsts.has(key)) firsts.set(key, item);
  }
  return [...firsts.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([, item]) => item);
}
