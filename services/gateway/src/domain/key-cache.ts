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

  set(digest: string, workspace: CachedWorkspace): void {
    if (this.entries.size >= this.maxEntries) {
      // Maps iterate in insertion order: the first key is the oldest entry.
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(digest, { workspace, expires: this.now() + this.ttlMs });
  }

  dropWorkspace(workspaceId: string): void {
    for (const [digest, entry] of this.entries) {
      if (entry.workspace.id === workspaceId) this.entries.delete(digest);
    }
  }
}
