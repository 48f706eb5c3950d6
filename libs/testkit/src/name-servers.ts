import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';

/** A DNS server on a loopback UDP port, as a tenant's or a resolver's may behave. */
export interface NameServer {
  /** `127.0.0.1:port`, as `dns.Resolver#setServers` takes it. */
  address: string;
  /** Every query it was sent. */
  queries: Buffer[];
  close(): Promise<void>;
}

/**
 * `silent` takes every query and never answers, as a name server a tenant controls may; `unknowing`
 * answers every query NXDOMAIN at once, as a resolver that knows no name.
 */
export async function startNameServer(kind: 'silent' | 'unknowing'): Promise<NameServer> {
  const socket = createSocket('udp4');
  const queries: Buffer[] = [];
  socket.on('message', (query, from) => {
    queries.push(query);
    if (kind === 'silent') return;
    const answer = Buffer.from(query);
    answer[2] = (answer[2] ?? 0) | 0x80; // a response, the question's id and recursion flag kept
    answer[3] = 0x80 | 3; // recursion available, NXDOMAIN
    socket.send(answer, from.port, from.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    address: `127.0.0.1:${(socket.address() as AddressInfo).port}`,
    queries,
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/**
 * The system's resolver (getaddrinfo) as a tenant's name server can make it: names under
 * `silent.example` are never answered, any other is `address` after `delayMs`. It records the names it
 * was asked and the most it held at once.
 */
export function systemResolverStandIn(address = '10.0.0.7', delayMs = 10) {
  const seen = { asked: [] as string[], atOnce: 0, mostAtOnce: 0 };
  const lookup = (hostname: string): Promise<Array<{ address: string; family: number }>> => {
    seen.asked.push(hostname);
    seen.mostAtOnce = Math.max(seen.mostAtOnce, ++seen.atOnce);
    if (hostname.endsWith('.silent.example')) return new Promise(() => undefined);
    return new Promise((resolve) =>
      setTimeout(() => {
        seen.atOnce--;
        resolve([{ address, family: 4 }]);
      }, delayMs),
    );
  };
  return { lookup, seen };
}
