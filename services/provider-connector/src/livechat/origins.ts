import { readAllowedOrigins } from '@inbox/contracts';

/**
 * The origins each stored config lists, split once per config object the integration cache holds: the
 * check runs on every widget request, and parsing the list each time made a long one cost the process
 * for every request any address made.
 */
const listed = new WeakMap<object, ReadonlySet<string>>();

function originsOf(config: Readonly<Record<string, string | undefined>>): ReadonlySet<string> {
  let origins = listed.get(config);
  if (!origins) {
    origins = new Set(readAllowedOrigins(config.allowed_origins ?? '') ?? []);
    listed.set(config, origins);
  }
  return origins;
}

/**
 * Whether a browser's Origin header names an origin the integration lists. Browsers send it exactly as
 * `scheme://host[:port]`, so the comparison is exact; `null` (sandboxed frames, files) is never listed.
 */
export function originAllowed(
  config: Readonly<Record<string, string | undefined>>,
  origin: string | undefined,
): boolean {
  return origin !== undefined && originsOf(config).has(origin);
}
