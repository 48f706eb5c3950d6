import type { LookupAddress } from 'node:dns';
import { DEFAULT_CIPHERS } from 'node:tls';
import type { AddressPolicy } from './address-policy.js';
import { type HostResolver, hostResolver } from './host-resolver.js';
import { Agent } from './undici-parts.js';

/** An outbound call aimed at an address the policy refuses: a literal one, or what a name resolved to. */
export class ForbiddenAddressError extends Error {
  override name = 'ForbiddenAddressError';
}

/** How long an idle keep-alive connection is kept at most (undici's own default when a server names none). */
export const idleConnectionMs = 4_000;

/**
 * Key exchanges whose cost the server cannot inflate. With finite-field Diffie-Hellman the server picks
 * the group: a tenant's receiver or provider offering TLS 1.2's DHE with a 10,000-bit modulus made each
 * handshake cost the client some 0.7 s of its event loop (measured on Node 20), and TLS 1.3 lets a server
 * ask for ffdhe8192 the same way. Elliptic curves have a fixed, small cost, and the providers all offer
 * them; a tenant's receiver that offers only DHE is refused (its handshake fails, as an attempt's error).
 */
export const tlsKeyExchange = {
  ciphers: `${DEFAULT_CIPHERS}:!kEDH`,
  ecdhCurve: 'X25519:P-256:P-384:P-521',
} as const;

/**
 * An HTTP agent whose lookup refuses forbidden addresses at connect time, so a name that resolves to a
 * private address (or is re-pointed there after the URL was accepted) is never reached. Names are
 * resolved off libuv's thread pool (HostResolver), as the tenant's the call is made for (`asTenant`),
 * whose context reaches the lookup through undici's connect. Literal addresses never go through a
 * lookup: callers check those against the policy themselves.
 */
export function guardedAgent(
  policy: AddressPolicy,
  timeoutMs: number,
  resolver: HostResolver = hostResolver,
): Agent {
  return new Agent({
    // Keep-alive connections with no cap per origin: tenants share hosts, and a request queued behind a
    // cap outlives its abort signal, which undici applies only once it is on a connection.
    connections: null,
    // A receiver's `Keep-Alive: timeout=600` would keep each of its idle sockets for ten minutes (undici's
    // ceiling), and a tenant with endpoints on many origins would hold sockets, descriptors and memory
    // for every tenant's process: an idle connection lives as long as undici keeps one that names no
    // time, or less when the server says so.
    keepAliveTimeout: idleConnectionMs,
    keepAliveMaxTimeout: idleConnectionMs,
    connect: {
      ...tlsKeyExchange,
      timeout: timeoutMs,
      lookup: (hostname, options, callback) => {
        const { family, all } = options as { family?: number; all?: boolean };
        const answer = (addresses: LookupAddress[]) => {
          const ofFamily =
            family === 4 || family === 6 ? addresses.filter((entry) => entry.family === family) : addresses;
          const permitted = ofFamily.filter((entry) => policy.permits(entry.address));
          if (permitted.length === 0) {
            return callback(
              new ForbiddenAddressError(`${hostname} resolves only to forbidden addresses`),
              '',
              0,
            );
          }
          if (all) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, permitted);
          return callback(null, permitted[0]!.address, permitted[0]!.family);
        };
        resolver.resolve(hostname).then(answer, (error: NodeJS.ErrnoException) => callback(error, '', 0));
      },
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}
