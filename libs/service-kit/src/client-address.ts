import { isIPv4, isIPv6 } from 'node:net';

/**
 * The key that per-client limits count under. An IPv6 host usually owns a whole /64, so one caller could
 * otherwise draw on millions of budgets; IPv4-mapped IPv6 addresses count as the IPv4 address they carry.
 */
export function clientAddress(ip: string | undefined): string {
  if (!ip) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(ip);
  if (mapped && isIPv4(mapped[1]!)) return mapped[1]!;
  if (!isIPv6(ip)) return ip;
  return `${expandIPv6(ip).slice(0, 4).join(':')}::/64`;
}

/**
 * The network a client address (as `clientAddress` gives it) belongs to, for budgets that a caller
 * rotating its addresses must not widen: an IPv4 /24, an IPv6 /48 (what a site or a cloud customer is
 * usually given). Anything else is its own network.
 */
export function clientNetwork(address: string): string {
  const v4 = /^(\d+\.\d+\.\d+)\.\d+$/.exec(address);
  if (v4) return `${v4[1]}.0/24`;
  const v6 = /^([0-9a-f]+:[0-9a-f]+:[0-9a-f]+):[0-9a-f]+::\/64$/.exec(address);
  if (v6) return `${v6[1]}::/48`;
  return address;
}

/** The eight groups of an IPv6 address, '::' filled in; an embedded IPv4 tail counts as two groups. */
function expandIPv6(ip: string): string[] {
  const [head = '', tail] = ip.split('::');
  const groups = (part: string) => (part ? part.split(':').flatMap(ipv4AsGroups) : []);
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const zeros = Array<string>(8 - left.length - right.length).fill('0');
  return [...left, ...zeros, ...right].map((group) => Number.parseInt(group, 16).toString(16));
}

function ipv4AsGroups(group: string): string[] {
  if (!group.includes('.')) return [group];
  const [a = 0, b = 0, c = 0, d = 0] = group.split('.').map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
}
