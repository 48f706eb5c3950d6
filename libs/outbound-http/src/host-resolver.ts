import { type LookupAddress, Resolver, lookup as systemLookup } from 'node:dns';

/** What a name server's silence costs a lookup at most: each query's first wait, and how often it is sent. */
export interface ResolverSettings {
  queryTimeoutMs: number;
  tries: number;
  /** Name servers to ask instead of the system's (`/etc/resolv.conf`), as `address[:port]`. */
  servers?: string[];
}

const defaultSettings: ResolverSettings = { queryTimeoutMs: 1_500, tries: 2 };

/**
 * Answers that say the name servers do not know the name (or that there are none to ask), as opposed to
 * not answering. Not SERVFAIL: a recursive resolver answers that once the name's own server has kept
 * silent past its patience, and the system's getaddrinfo would wait for that server again, on a thread.
 */
const unknownToDns = new Set(['ENOTFOUND', 'ENODATA', 'ENONAME', 'ECONNREFUSED', 'EREFUSED']);

/**
 * Resolves the names of tenants' URLs (webhook receivers, providers' base URLs) without libuv's thread
 * pool. `dns.lookup` is getaddrinfo on one of the pool's four threads, with no time bound of its own: a
 * name whose name server never answers held a thread for the system resolver's whole timeout, and four of
 * them, one tenant's endpoints on its own domain, stopped every lookup, file read and Postgres connection
 * of the process, for every tenant. Names go to the name servers through c-ares (`dns.Resolver`),
 * bounded by `queryTimeoutMs` and `tries`; a name the name servers do not know (a hosts-file entry, a
 * cluster's short service name, which only the system's search domains complete) is then asked of the
 * system, which answers those from its own files at once; a name server that stays silent is not. The
 * lookups of one name under way at once are one lookup.
 */
export class HostResolver {
  private readonly resolver: Resolver;
  private readonly inFlight = new Map<string, Promise<LookupAddress[]>>();

  constructor(settings: ResolverSettings = defaultSettings) {
    this.resolver = new Resolver({ timeout: settings.queryTimeoutMs, tries: settings.tries });
    if (settings.servers) this.resolver.setServers(settings.servers);
  }

  /** Every address the name has, IPv4 first; rejects with the name servers' error when it has none. */
  resolve(hostname: string): Promise<LookupAddress[]> {
    const known = this.inFlight.get(hostname);
    if (known) return known;
    const resolving = this.resolveOnce(hostname).finally(() => this.inFlight.delete(hostname));
    this.inFlight.set(hostname, resolving);
    return resolving;
  }

  private async resolveOnce(hostname: string): Promise<LookupAddress[]> {
    // Loopback by definition (RFC 6761), and always in the hosts file: no name server is asked.
    if (hostname === 'localhost' || hostname.endsWith('.localhost')) return askSystem(hostname);
    const [v4, v6] = await Promise.allSettled([this.query(hostname, 4), this.query(hostname, 6)]);
    const addresses = [v4, v6].flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    if (addresses.length > 0) return addresses;
    const failures = [v4, v6].map((answer) => (answer as PromiseRejectedResult).reason);
    // Only when neither query met silence: getaddrinfo would ask the silent server again, on a thread.
    if (failures.every((failure) => unknownToDns.has((failure as { code?: string } | null)?.code ?? '')))
      return askSystem(hostname);
    throw failures.find((failure) => !unknownToDns.has((failure as { code?: string } | null)?.code ?? ''));
  }

  private query(hostname: string, family: 4 | 6): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) => {
      const answer = (error: NodeJS.ErrnoException | null, addresses: string[]) => {
        if (error) reject(error);
        else resolve(addresses.map((address) => ({ address, family })));
      };
      if (family === 4) this.resolver.resolve4(hostname, answer);
      else this.resolver.resolve6(hostname, answer);
    });
  }
}

function askSystem(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    systemLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );
}

/** The resolver every outbound call of a process shares. */
export const hostResolver = new HostResolver();
