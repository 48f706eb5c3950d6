import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP } from 'node:net';
import { Agent } from 'undici';
import type { AddressPolicy } from './address-policy.js';

export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError';
}

/**
 * An HTTP agent whose DNS lookup refuses forbidden addresses at connect time, so a name that resolves to
 * a private address (or is re-pointed there after the URL was accepted) is never reached.
 */
export function guardedAgent(policy: AddressPolicy, timeoutMs: number, connectionsPerOrigin = 8): Agent {
  return new Agent({
    // Keep-alive connections, at most this many per receiver origin.
    connections: connectionsPerOrigin,
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

/** Checks a URL when an endpoint is created: literal addresses directly, names by resolving them now. */
export async function checkUrl(url: string, policy: AddressPolicy): Promise<string | undefined> {
  const { hostname } = new URL(url);
  const host = hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host)
    ? [host]
    : await new Promise<string[]>((resolve) =>
        dnsLookup(host, { all: true }, (error, found) =>
          resolve(error ? [] : found.map((entry) => entry.address)),
        ),
      );
  if (addresses.length === 0) return `não foi possível resolver ${host}`;
  const forbidden = addresses.find((address) => !policy.permits(address));
  return forbidden ? `o destino ${host} aponta para um endereço não permitido (${forbidden})` : undefined;
}
