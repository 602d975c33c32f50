// Address ranges (TRUSTED_PROXIES, the platform's webhook_ip_ranges) and the address a request comes from, as the push
// endpoints' per-address bounds see it (src/ingest/body-budget.ts). A leaf: imports only node.
// Behind a reverse proxy every connection comes from the proxy: X-Forwarded-For then names the sender, but only a
// proxy the operator trusts (TRUSTED_PROXIES) may say so; from anyone else the header is a claim an attacker writes.
import { BlockList, isIP } from 'node:net';
import type { IncomingMessage } from 'node:http';

/** An address or CIDR range (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7`): undefined when it is neither. */
export function parseRange(text: string): { address: string; prefix: number; family: 'ipv4' | 'ipv6' } | undefined {
  const [address, prefixText, extra] = text.trim().split('/');
  if (extra !== undefined || address === undefined) return undefined;
  const version = isIP(address);
  if (version === 0) return undefined;
  const max = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return undefined;
  const prefix = prefixText === undefined ? max : Number(prefixText);
  if (prefix > max) return undefined;
  return { address, prefix, family: version === 4 ? 'ipv4' : 'ipv6' };
}

/** IPv4-mapped IPv6 (`::ffff:10.0.0.1`, how a dual-stack socket reports an IPv4 peer) as the IPv4 address. */
export function plainAddress(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  return mapped ? mapped[1] : address;
}

/** A set of address ranges (TRUSTED_PROXIES, the platform's webhook_ip_ranges). */
export class AddressRanges {
  private readonly list = new BlockList();
  readonly size: number;

  /** Throws naming the first entry that is not an address or a CIDR range. */
  constructor(readonly ranges: readonly string[]) {
    for (const text of ranges) {
      const range = parseRange(text);
      if (!range) throw new Error(`not an IP address or CIDR range: ${JSON.stringify(text.slice(0, 64))}`);
      this.list.addSubnet(range.address, range.prefix, range.family);
    }
    this.size = ranges.length;
  }

  has(address: string): boolean {
    const plain = plainAddress(address);
    const version = isIP(plain);
    if (version === 0) return false;
    return this.list.check(plain, version === 4 ? 'ipv4' : 'ipv6');
  }
}

/** Hops of X-Forwarded-For read at most: a header of thousands of entries costs no more than this. */
const MAX_FORWARDED_HOPS = 32;

/**
 * The sender's address: the socket's peer, unless that peer is a trusted proxy and the request carries
 * X-Forwarded-For; then the rightmost entry that is not itself a trusted proxy (entries left of it were written by
 * whoever sent the request to the first proxy, and can say anything). No trusted proxies: always the socket's peer.
 */
export function clientAddress(req: IncomingMessage, trusted: AddressRanges | undefined): string {
  const peer = plainAddress(req.socket.remoteAddress ?? 'unknown');
  if (!trusted || trusted.size === 0 || !trusted.has(peer)) return peer;
  const header = req.headers['x-forwarded-for'];
  const text = Array.isArray(header) ? header.join(',') : header;
  if (!text) return peer;
  const hops = text.split(',').slice(-MAX_FORWARDED_HOPS);
  let client = peer;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = plainAddress(hops[i].trim().replace(/^\[(.*)\]$/, '$1'));
    // A hop that is not an address (a proxy writing "unknown", a garbled header): the last address before it stands.
    if (isIP(hop) === 0) return client;
    client = hop;
    if (!trusted.has(hop)) return hop;
  }
  return client;
}
