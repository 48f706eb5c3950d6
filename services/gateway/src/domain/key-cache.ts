export interface CachedWorkspace {
  id: string;
  status: 'active' | 'inactive' | 'suspended';
  default_country_code: string;
  key_hint: string;
}

export interface KeyCacheOptions {
  /** How long a resolved key is trusted. */
  ttlMs?: number;
  /** How long a key found in no workspace is remembered as unknown. */
  unknownTtlMs?: number;
  /** Bound on each of the two maps (known and unknown keys). */
  maxEntries?: number;
  /**
   * How long a key found in a workspace stays one an address refused for failed authentications may
   * still have looked up (KeyCache.foundLately).
   */
  foundTtlMs?: number;
  now?: () => number;
}

/**
 * Key digest → workspace, for a few seconds, so a busy workspace costs no database round trip per
 * request. Entries of a workspace are dropped at once when its key or status changes (a notice every
 * replica hears); the short life bounds staleness should a notice be missed.
 *
 * Keys found in no workspace are remembered too, apart, so that a caller repeating a wrong key costs one
 * lookup, and a flood of made-up keys cannot push out the keys of real callers. A key only starts to
 * exist when it is created or rotated, which also invalidates, so unknown keys can be kept longer.
 */
export class KeyCache {
  private readonly entries = new Map<string, { workspace: CachedWorkspace; expires: number }>();
  private readonly unknown = new Map<string, number>();
  /** Keys found in a workspace lately, by digest: the workspace and until when. */
  private readonly found = new Map<string, { workspaceId: string; until: number }>();
  /**
   * Counts invalidations. A lookup that started before one must not cache what it read: the database
   * answer may predate the rotation or suspension that the invalidation announced.
   */
  private generation = 0;
  private readonly ttlMs: number;
  private readonly unknownTtlMs: number;
  private readonly maxEntries: number;
  private readonly foundTtlMs: number;
  private readonly now: () => number;

  get epoch(): number {
    return this.generation;
  }

  constructor({
    ttlMs = 5_000,
    unknownTtlMs = 30_000,
    maxEntries = 10_000,
    foundTtlMs = 30 * 60_000,
    now = Date.now,
  }: KeyCacheOptions = {}) {
    this.ttlMs = ttlMs;
    this.foundTtlMs = foundTtlMs;
    this.unknownTtlMs = unknownTtlMs;
    this.maxEntries = maxEntries;
    this.now = now;
  }

  /** The workspace of the key; null when the key is known to belong to none; undefined when not known. */
  get(digest: string): CachedWorkspace | null | undefined {
    const entry = this.entries.get(digest);
    if (entry && entry.expires > this.now()) return entry.workspace;
    if (entry) this.entries.delete(digest);
    const unknownUntil = this.unknown.get(digest);
    if (unknownUntil !== undefined && unknownUntil > this.now()) return null;
    if (unknownUntil !== undefined) this.unknown.delete(digest);
    return undefined;
  }

  set(digest: string, workspace: CachedWorkspace, readAtEpoch = this.generation): void {
    if (readAtEpoch !== this.generation) return;
    makeRoom(this.entries, this.maxEntries);
    this.entries.set(digest, { workspace, expires: this.now() + this.ttlMs });
    this.found.delete(digest);
    makeRoom(this.found, this.maxEntries);
    this.found.set(digest, { workspaceId: workspace.id, until: this.now() + this.foundTtlMs });
  }

  /**
   * Whether the key was found in a workspace in the last half hour, and its workspace has not changed
   * since. Its entry is trusted for seconds only; this tells a key worth looking up again from one never
   * seen, for an address that may look up no other: callers behind one address (a NAT, an integration
   * platform's egress) share its budget of failures, and one of them spending it must not lock the others
   * out of keys that work.
   */
  foundLately(digest: string): boolean {
    const found = this.found.get(digest);
    if (found && found.until > this.now()) return true;
    if (found) this.found.delete(digest);
    return false;
  }

  setUnknown(digest: string, readAtEpoch = this.generation): void {
    if (readAtEpoch !== this.generation) return;
    makeRoom(this.unknown, this.maxEntries);
    this.unknown.set(digest, this.now() + this.unknownTtlMs);
  }

  dropWorkspace(workspaceId: string): void {
    this.generation++;
    for (const [digest, entry] of this.entries) {
      if (entry.workspace.id === workspaceId) this.entries.delete(digest);
    }
    for (const [digest, found] of this.found) {
      if (found.workspaceId === workspaceId) this.found.delete(digest);
    }
    // Which unknown key the change concerns cannot be told from a digest; forgetting them all is cheap.
    this.unknown.clear();
  }
}

// Maps iterate in insertion order: the first key is the oldest entry.
function makeRoom(map: Map<string, unknown>, maxEntries: number): void {
  if (map.size < maxEntries) return;
  const oldest = map.keys().next().value;
  if (oldest !== undefined) map.delete(oldest);
}
