import { AsyncLocalStorage } from 'node:async_hooks';
import { type LookupAddress, Resolver, lookup as systemLookup } from 'node:dns';

/** What a name server's silence costs a lookup at most: each query's first wait, and how often it is sent. */
export interface ResolverSettings {
  queryTimeoutMs: number;
  tries: number;
  /** Name servers to ask instead of the system's (`/etc/resolv.conf`), as `address[:port]`. */
  servers?: string[];
  /**
   * How many names may be with the system resolver at once, each holding a thread of libuv's pool, and
   * never more than one of any tenant's: half the pool (`UV_THREADPOOL_SIZE`, 4 unless set), so 2.
   */
  systemLookups?: number;
}

const defaultSettings: ResolverSettings = { queryTimeoutMs: 1_500, tries: 2 };

/** The system's resolver (getaddrinfo, on a thread of libuv's pool): every address a name has. */
export type SystemLookup = (hostname: string) => Promise<LookupAddress[]>;

const outboundTenant = new AsyncLocalStorage<string>();

/**
 * Runs `call` as an outbound call made for `tenant` (a workspace): the names its connections look up
 * take that tenant's turn with the system resolver.
 */
export function asTenant<T>(tenant: string, call: () => T): T {
  return outboundTenant.run(tenant, call);
}

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
 * system, which answers those from its own files at once. The system has no time bound of its own,
 * though, and completes a name with its search domains before asking for it as it is: a name server that
 * said it did not know a name to c-ares may keep silent when the system asks, and hold a thread for the
 * system resolver's whole timeout. So the system takes `systemLookups` names at a time (half the pool),
 * one of each tenant's at most, and a name that waits for its turn, or for the system's answer, longer
 * than the name servers' own bound (`queryTimeoutMs` × `tries`) is refused with `ETIMEOUT`: one tenant's
 * names can hold one thread of the pool, never the four, and delay only its own names that only the
 * system knows. The tenant is the one an outbound call is made for (`asTenant`), which reaches the
 * lookup a connection makes. The lookups of one name under way at once for one tenant are one lookup;
 * another tenant's lookup of that name is its own, so it never waits behind the first tenant's turn.
 */
export class HostResolver {
  private readonly resolver: Resolver;
  private readonly inFlight = new Map<string, Promise<LookupAddress[]>>();
  private readonly system: SystemTurns;

  constructor(settings: ResolverSettings = defaultSettings, systemLookup: SystemLookup = askSystem) {
    this.resolver = new Resolver({ timeout: settings.queryTimeoutMs, tries: settings.tries });
    if (settings.servers) this.resolver.setServers(settings.servers);
    this.system = new SystemTurns(
      systemLookup,
      settings.systemLookups ?? halfThePool(),
      settings.queryTimeoutMs * settings.tries,
    );
  }

  /**
   * Every address the name has, IPv4 first; rejects with the name servers' error when it has none.
   * `tenant` is whose lookup it is: the outbound call's (`asTenant`) unless given.
   */
  resolve(hostname: string, tenant = outboundTenant.getStore() ?? ''): Promise<LookupAddress[]> {
    const key = `${tenant}\n${hostname}`;
    const known = this.inFlight.get(key);
    if (known) return known;
    const resolving = this.resolveOnce(hostname, tenant).finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, resolving);
    return resolving;
  }

  private async resolveOnce(hostname: string, tenant: string): Promise<LookupAddress[]> {
    // Loopback by definition (RFC 6761), and always in the hosts file: no name server is asked.
    if (hostname === 'localhost' || hostname.endsWith('.localhost')) return askSystem(hostname);
    const [v4, v6] = await Promise.allSettled([this.query(hostname, 4), this.query(hostname, 6)]);
    const addresses = [v4, v6].flatMap((answer) => (answer.status === 'fulfilled' ? answer.value : []));
    if (addresses.length > 0) return addresses;
    const failures = [v4, v6].map((answer) => (answer as PromiseRejectedResult).reason);
    // Only when neither query met silence: getaddrinfo would ask the silent server again, on a thread.
    if (failures.every((failure) => unknownToDns.has((failure as { code?: string } | null)?.code ?? '')))
      return this.system.lookup(hostname, tenant);
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

/**
 * The system resolver's turns: at most `concurrency` names with it at once, and one of each tenant's. A
 * lookup keeps its turn until the system answers, even after its caller gave up, since its thread stays
 * held until then; a caller is answered within `waitMs`, turn or no turn. A freed turn goes to the
 * longest waiting name whose tenant has none.
 */
class SystemTurns {
  private readonly holders = new Set<string>();
  private readonly waiting: Array<{ tenant: string; start: () => void }> = [];

  constructor(
    private readonly ask: SystemLookup,
    private readonly concurrency: number,
    private readonly waitMs: number,
  ) {}

  lookup(hostname: string, tenant: string): Promise<LookupAddress[]> {
    return new Promise((resolve, reject) => {
      const turn = {
        tenant,
        start: () => {
          this.holders.add(tenant);
          this.ask(hostname)
            .then(resolve, reject)
            .finally(() => {
              clearTimeout(timer);
              this.holders.delete(tenant);
              this.next();
            });
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiting.indexOf(turn);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(timedOut(hostname));
      }, this.waitMs);
      if (this.free(tenant)) turn.start();
      else this.waiting.push(turn);
    });
  }

  private free(tenant: string): boolean {
    return this.holders.size < this.concurrency && !this.holders.has(tenant);
  }

  private next(): void {
    const at = this.waiting.findIndex((turn) => this.free(turn.tenant));
    if (at >= 0) this.waiting.splice(at, 1)[0]!.start();
  }
}

/** As c-ares says a name server kept silent. */
function timedOut(hostname: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`getaddrinfo ETIMEOUT ${hostname}`), {
    code: 'ETIMEOUT',
    syscall: 'getaddrinfo',
    hostname,
  });
}

function askSystem(hostname: string): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) =>
    systemLookup(hostname, { all: true }, (error, addresses) => (error ? reject(error) : resolve(addresses))),
  );
}

/** Half of libuv's thread pool, which `UV_THREADPOOL_SIZE` sizes (4 unless set), and at least one thread. */
function halfThePool(): number {
  const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  return Math.max(1, Math.floor(threads / 2));
}

/** The resolver every outbound call of a process shares. */
export const hostResolver = new HostResolver();
