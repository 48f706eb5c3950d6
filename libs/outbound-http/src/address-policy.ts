import ipaddr from 'ipaddr.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/**
 * IPv6 forms that carry an IPv4 address and reach it: IPv4-compatible `::a.b.c.d` (::/96), IPv4-mapped
 * (::ffff:0:0/96), IPv4-translated (::ffff:0:0:0/96), NAT64's well-known prefix (64:ff9b::/96) and 6to4
 * (2002::/16, the address in bits 16–47). `::` and `::1` are IPv6's own unspecified and loopback addresses.
 */
function embeddedIpv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const bytes = address.toByteArray();
  const words = address.parts;
  const zeros = (from: number, to: number) => words.slice(from, to).every((word) => word === 0);
  const lastFour = () => new ipaddr.IPv4(bytes.slice(12, 16));
  if (zeros(0, 6)) return zeros(6, 7) && words[7]! <= 1 ? undefined : lastFour();
  if (zeros(0, 5) && words[5] === 0xffff) return lastFour();
  if (zeros(0, 4) && words[4] === 0xffff && words[5] === 0) return lastFour();
  if (words[0] === 0x64 && words[1] === 0xff9b && zeros(2, 6)) return lastFour();
  if (words[0] === 0x2002) return new ipaddr.IPv4(bytes.slice(2, 6));
  return undefined;
}

/** Each entry of a comma-separated CIDR list; throws on one that is not a range. */
function parseCidrList(setting: string): Array<[Address, number]> {
  return setting
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')
    .map((cidr) => {
      try {
        return ipaddr.parseCIDR(cidr);
      } catch (error) {
        throw new Error(`"${cidr}" is not a CIDR range`, { cause: error });
      }
    });
}

/** Whether a setting is a comma-separated list of CIDR ranges (empty included), for config schemas. */
export function isCidrList(setting: string): boolean {
  try {
    parseCidrList(setting);
    return true;
  } catch {
    return false;
  }
}

/**
 * Which addresses an outbound call (a webhook, a provider's API) may reach: public unicast only, unless
 * an operator allows a private range (OUTBOUND_ALLOWED_CIDRS, e.g. `127.0.0.0/8` for local use). Loopback,
 * private, link-local (cloud metadata included), CGNAT, unique-local and every other special range are
 * refused. An IPv6 address that embeds an IPv4 one is judged as that IPv4 address, since that is where
 * the packets go.
 */
export class AddressPolicy {
  private readonly allowed: Array<[Address, number]>;

  constructor(allowedCidrs: string[] = []) {
    this.allowed = parseCidrList(allowedCidrs.join(','));
  }

  static fromSetting(setting: string | undefined): AddressPolicy {
    return new AddressPolicy([setting ?? '']);
  }

  permits(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    let parsed: Address = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6') parsed = embeddedIpv4(parsed as ipaddr.IPv6) ?? parsed;
    if (this.allowed.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits)))
      return true;
    return parsed.range() === 'unicast';
  }
}
