import { readAllowedOrigins } from '@inbox/contracts';

/**
 * Whether a browser's Origin header names an origin the integration lists. Browsers send it exactly as
 * `scheme://host[:port]`, so the comparison is exact; `null` (sandboxed frames, files) is never listed.
 */
export function originAllowed(allowedOrigins: string | undefined, origin: string | undefined): boolean {
  if (!origin || !allowedOrigins) return false;
  return (readAllowedOrigins(allowedOrigins) ?? []).includes(origin);
}
