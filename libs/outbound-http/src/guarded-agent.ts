import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import type { AddressPolicy } from './address-policy.js';
import { Agent } from './undici-parts.js';

/** An outbound call aimed at an address the policy refuses: a literal one, or what a name resolved to. */
export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError';
}

/**
 * An HTTP agent whose DNS lookup refuses forbidden addresses at connect time, so a name that resolves to
 * a private address (or is re-pointed there after the URL was accepted) is never reached. Literal
 * addresses never go through a lookup: callers check those against the policy themselves.
 */
export function guardedAgent(policy: AddressPolicy, timeoutMs: number, connectionsPerOrigin?: number): Agent {
  return new Agent({
    // Keep-alive connections, at most this many per origin when given.
    connections: connectionsPerOrigin ?? null,
    connect: {
      timeout: timeoutMs,
      lookup: (hostname, options, callback) => {
        dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
          if (error) return callback(error, '', 0);
          const list = addresses as LookupAddress[];
          const permitted = list.filter((entry) => policy.permits(entry.address));
          if (permitted.length === 0) {
            return callback(
              new ForbiddenAddressError(`${hostname} resolves only to forbidden addresses`),
              '',
              0,
            );
          }
          if ((options as { all?: boolean }).all)
            return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, permitted);
          return callback(null, permitted[0]!.address, permitted[0]!.family);
        });
      },
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}
