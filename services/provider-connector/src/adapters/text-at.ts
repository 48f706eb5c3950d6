const field = (value: unknown, name: string): unknown =>
  typeof value === 'object' && value !== null ? (value as Record<string, unknown>)[name] : undefined;

/** The string a provider's message holds at `path` (`textAt(message, 'image', 'caption')`), or ''. */
export const textAt = (value: unknown, ...path: string[]): string => {
  const found = path.reduce(field, value);
  return typeof found === 'string' ? found : '';
};
