export interface CachedWorkspace {
  id: string;
  status: 'active' | 'inactive' | 'suspended';
  default_country_code: string;
  key_hint: string;
}

/**
 * Key digest → workspace, for a few seconds, so a busy workspace costs no database round trip per
 * request. Entries of a workspace are dropped at once when its key or status changes (a notice every
 * replica hears); the short life bounds staleness should a notice be missed.
 */
export class KeyCache {
  private readonly entries = new Map<string, { workspace: CachedWorkspace; expires: number }>();
  /**
   * Counts invalidations. A lookup that started before one must not cache what it read: the database
   * answer may predate the rotation or suspension that the invalidation announced.
   */
  private generation = 0;

  get epoch(): number {
    return this.generation;
  }

  constructor(
    private readonly ttlMs = 5_000,
    private readonly maxEntries = 10_000,
    private readonly now: () => number = Date.now,
  ) {}

  get(digest: string): CachedWorkspace | undefined {
    const entry = this.entries.get(digest);
    if (!entry) return undefined;
    if (entry.expires <= this.now()) {
      this.entries.delete(digest);
      return undefined;
    }
    return entry.workspace;
  }

  set(digest: string, workspace: CachedWorkspace, readAtEpoch = this.generation): void {
    if (readAtEpoch !== this.generation) return;
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(digest, { workspace, expires: this.now() + this.ttlMs });
  }

  dropWorkspace(workspaceId: string): void {
    this.generation++;
    for (const [digest, entry] of this.entries) {
      if (entry.workspace.id === workspaceId) this.entries.delete(digest);
    }
  }
}
