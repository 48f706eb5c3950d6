import { isIP } from 'node:net';
import { platformTexts } from '@inbox/contracts';
import type { AddressPolicy } from './address-policy.js';
import { hostResolver } from './host-resolver.js';

/** Why a URL was refused. */
export interface UrlRefusal {
  /** For the caller: names the host, never the address it resolved to (that would map the network). */
  text: string;
  host: string;
  /** The forbidden address, for the server's own log. */
  address?: string;
}

/** A URL's host without IPv6 brackets: an address (already normalised by WHATWG URL parsing) or a name. */
export function hostOf(url: URL): string {
  return url.hostname.replace(/^\[|\]$/g, '');
}

/**
 * Checks a URL when it is configured (a webhook endpoint, a provider's base_url): a literal address
 * directly, a name by resolving it now. Numeric forms such as `http://2130706433/` or `http://127.1/` are
 * dotted addresses by the time they are parsed. `tenant` is the workspace configuring it. Calls are
 * checked again at connect time (guardedAgent).
 */
export async function checkUrl(
  url: string,
  policy: AddressPolicy,
  tenant: string,
): Promise<UrlRefusal | undefined> {
  const host = hostOf(new URL(url));
  const addresses = isIP(host)
    ? [host]
    : await hostResolver.resolve(host, tenant).then(
        (found) => found.map((entry) => entry.address),
        () => [],
      );
  if (addresses.length === 0) return { text: platformTexts.destinationUnresolvable(host), host };
  const forbidden = addresses.find((address) => !policy.permits(address));
  return forbidden ? { text: platformTexts.destinationForbidden(host), host, address: forbidden } : undefined;
}
