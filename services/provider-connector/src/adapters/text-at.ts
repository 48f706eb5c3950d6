const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;

/** What a provider's message holds at `path`, whatever it is; undefined where the path leads nowhere. */
export const valueAt = (value: unknown, ...path: string[]): unknown => path.reduce(field, value);

/** The string a provider's message holds at `path` (`textAt(message, 'image', 'caption')`), or ''. */
export const textAt = (value: unknown, ...path: string[]): string => {
  const found = valueAt(value, ...path);
  return typeof found === 'string' ? found : '';
};
