/**
 * Bounds how many requests may wait at once for another request's answer, per workspace and in all, so
 * that waiting stays cheap for the database and one tenant cannot take every slot.
 */
export class WaiterSlots {
  private total = 0;
  private readonly byWorkspace = new Map<string, number>();

  constructor(
    private readonly maxPerWorkspace: number,
    private readonly maxTotal: number,
  ) {}

  /** Takes a slot for the workspace; false when none is free. Give it back with `leave`. */
  tryEnter(workspaceId: string): boolean {
    const taken = this.byWorkspace.get(workspaceId) ?? 0;
    if (taken >= this.maxPerWorkspace || this.total >= this.maxTotal) return false;
    this.byWorkspace.set(workspaceId, taken + 1);
    this.total++;
    return true;
  }

  leave(workspaceId: string): void {
    const taken = this.byWorkspace.get(workspaceId) ?? 0;
    if (taken <= 1) this.byWorkspace.delete(workspaceId);
    else this.byWorkspace.set(workspaceId, taken - 1);
    this.total = Math.max(0, this.total - 1);
  }
}
