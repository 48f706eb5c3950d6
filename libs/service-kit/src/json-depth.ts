/**
 * Whether `value` nests objects and arrays more than `limit` levels deep (the value itself, an object or
 * an array, is level 1). Walked a level at a time, without recursion: the value may be as deep as a
 * body limit's worth of `[`.
 */
export function nestsDeeperThan(value: unknown, limit: number): boolean {
  let level: unknown[] = [value];
  for (let depth = 0; level.length > 0; depth++) {
    const next: unknown[] = [];
    for (const item of level) {
      if (item === null || typeof item !== 'object') continue;
      if (depth >= limit) return true;
      for (const child of Array.isArray(item) ? item : Object.values(item))
        if (child !== null && typeof child === 'object') next.push(child);
    }
    level = next;
  }
  return false;
}
