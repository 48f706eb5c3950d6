import ipaddr from 'ipaddr.js';

/**
 * Which addresses a webhook may reach: public unicast only, unless an operator allows a private range
 * with WEBHOOK_ALLOWED_CIDRS (e.g. `127.0.0.0/8` for local use). Loopback, private, link-local (cloud
 * metadata included), CGNAT, unique-local and every other special range are refused.
 */
export class AddressPolicy {
  private readonly allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(allowedCidrs: string[] = []) {
    this.allowed = allowedCidrs.map((cidr) => {
      try {
        return ipaddr.parseCIDR(cidr.trim());
      } catch (error) {
        throw new Error(`WEBHOOK_ALLOWED_CIDRS: "${cidr}" is not a CIDR range`, { cause: error });
      }
    });
  }

  static fromSetting(setting: string | undefined): AddressPolicy {
    return new AddressPolicy((setting ?? '').split(',').filter((part) => part.trim() !== ''));
  }

  permits(address: string): boolean {
    if (!ipaddr.isValid(address)) return false;
    let parsed = ipaddr.parse(address);
    if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress()) {
      parsed = (parsed as ipaddr.IPv6).toIPv4Address();
    }
    if (this.allowed.some(([range, bits]) => range.kind() === parsed.kind() && parsed.match(range, bits)))
      return true;
    return parsed.range() === 'unicast';
  }
}
