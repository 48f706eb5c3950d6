/**
 * Turns of one process's work, by workspace: at most `perWorkspace` of a workspace's tasks run at once,
 * and up to `waiting` more wait for a turn, in order; past that, none is given. One workspace, however
 * many integrations it has and however slowly its providers answer, takes a bounded share of the process.
 * Callbacks wait their turn with their bodies still in the kernel's buffers (callback-admission.ts);
 * provider sends wait for none (send-once.ts).
 */
export class WorkspaceTurns {
  private readonly holders = new Map<string, number>();
  private readonly queues = new Map<string, Array<() => void>>();

  constructor(
    readonly perWorkspace: number,
    private readonly waiting: number,
  ) {}

  /** Whether a task of the workspace taken now would wait for its turn. */
  full(workspace: string): boolean {
    return (this.holders.get(workspace) ?? 0) >= this.perWorkspace;
  }

  /** A release for the turn taken, or undefined when too many of the workspace's already wait. */
  async take(workspace: string): Promise<(() => void) | undefined> {
    if (this.perWorkspace === Number.POSITIVE_INFINITY) return () => undefined;
    if (this.full(workspace)) {
      const queue = this.queues.get(workspace) ?? [];
      if (queue.length >= this.waiting) return undefined;
      this.queues.set(workspace, queue);
      await new Promise<void>((resolve) => queue.push(resolve));
    } else {
      this.holders.set(workspace, (this.holders.get(workspace) ?? 0) + 1);
    }
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.handOn(workspace);
    };
  }

  /** A finished task's turn goes to the next that waits, or is freed. */
  private handOn(workspace: string): void {
    const queue = this.queues.get(workspace);
    const next = queue?.shift();
    if (queue?.length === 0) this.queues.delete(workspace);
    if (next) {
      next();
      return;
    }
    const left = (this.holders.get(workspace) ?? 1) - 1;
    if (left > 0) this.holders.set(workspace, left);
    else this.holders.delete(workspace);
  }
}
