// The proven-sender lane, the contended count and the bounded wait of ReadSlots, ProvenSenders' memory, and the
// client address behind a trusted proxy (issue 49.1), alone (pure). Expected values are the limits given here,
// worked by hand.
import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { PROVEN_SENDERS_KEPT, ProvenSenders, provenKeyOf, ReadSlots } from '../../src/ingest/body-budget.js';
import { AddressRanges, clientAddress, parseRange } from '../../src/ip-ranges.js';
import { parseConfig } from '../../src/config.js';

const NAMES = { max: 'MAX', perAddress: 'PER_ADDRESS', unproven: 'UNPROVEN' };
type Release = () => void;

describe('ReadSlots: the proven lane', () => {
  it('unproven senders share only their pool; a proven sender takes the rest, with no per-address share', () => {
    const slots = new ReadSlots(4, 2, NAMES, false, 2);
    expect(typeof slots.acquire('10.0.0.1')).toBe('function');
    expect(typeof slots.acquire('10.0.0.2')).toBe('function');
    expect(slots.acquire('10.0.0.3')).toEqual({ refused: '2 bodies from senders not yet proven are being read already (UNPROVEN)' });
    expect(slots.unprovenInUse).toBe(2);
    // The platform, proven, from one address (a proxy): both remaining slots, past the per-address share of 2... of 4.
    const p1 = slots.acquire('10.0.0.9', undefined, true);
    const p2 = slots.acquire('10.0.0.9', undefined, true);
    expect([typeof p1, typeof p2]).toEqual(['function', 'function']);
    expect(slots.acquire('10.0.0.9', undefined, true)).toEqual({ refused: '4 bodies are being read already (MAX)' });
    (p1 as Release)();
    // A freed proven-lane slot is not the unproven pool's.
    expect(slots.acquire('10.0.0.4')).toEqual({ refused: '2 bodies from senders not yet proven are being read already (UNPROVEN)' });
    expect(slots.inUse).toBe(3);
  });

  it('a queueing endpoint grants a freed slot to a proven waiter before unproven ones that came first; contention counts unproven waiters', async () => {
    const slots = new ReadSlots(2, 2, NAMES, true, 2);
    const held = [slots.acquire('10.0.0.1') as Release, slots.acquire('10.0.0.2') as Release];
    const order: string[] = [];
    const wait = (address: string, proven: boolean) => {
      const got = slots.acquire(address, undefined, proven) as Promise<Release>;
      void got.then(() => order.push(address));
      return got;
    };
    const waiters = [wait('10.0.0.3', false), wait('10.0.0.4', false), wait('10.0.0.9', true)];
    expect(slots.contention()).toBe(2);
    held[0]();
    await waiters[2];
    expect(order).toEqual(['10.0.0.9']);
    held[1]();
    await waiters[0];
    expect(order).toEqual(['10.0.0.9', '10.0.0.3']);
    expect(slots.contention()).toBe(1);
  });

  it('without a queue, a body waits up to maxWaitMs for a slot, then is refused; a refusal counts as contention for a while', async () => {
    const slots = new ReadSlots(1, 1, NAMES, false, 1, 50);
    const held = slots.acquire('10.0.0.1') as Release;
    const refused = slots.acquire('10.0.0.2');
    expect(refused).toBeInstanceOf(Promise);
    expect(await refused).toEqual({ refused: '1 bodies are being read already (MAX)' });
    expect(slots.waiters).toBe(0);
    expect(slots.contention()).toBe(1);
    // wall-clock: the slots' contention window counts from the machine's clock
    expect(slots.contention(Date.now() + 60_000)).toBe(0);
    const granted = slots.acquire('10.0.0.3') as Promise<Release>;
    held();
    expect(typeof (await granted)).toBe('function');
  });
});

describe('ProvenSenders', () => {
  it('remembers an IPv4 address alone and an IPv6 address by its /64, for the TTL', () => {
    const proven = new ProvenSenders(1000);
    proven.prove('203.0.113.7', 0);
    proven.prove('2001:db8:1:2::5', 0);
    expect([proven.has('203.0.113.7', 999), proven.has('::ffff:203.0.113.7', 999), proven.has('203.0.113.8', 999)]).toEqual([true, true, false]);
    expect(proven.has('2001:db8:1:2:aaaa::1', 500)).toBe(true);
    expect(proven.has('2001:db8:1:3::5', 500)).toBe(false);
    expect(proven.has('203.0.113.7', 1000)).toBe(false);
    expect(provenKeyOf('2001:db8:1:2::5')).toBe('2001:db8:1:2::/64');
  });

  it('keeps at most PROVEN_SENDERS_KEPT, forgetting the least recently proven', () => {
    const proven = new ProvenSenders(60_000);
    for (let i = 0; i <= PROVEN_SENDERS_KEPT; i++) proven.prove(`10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, 0);
    expect(proven.size).toBe(PROVEN_SENDERS_KEPT);
    expect(proven.has('10.0.0.0', 1)).toBe(false);
    expect(proven.has('10.0.0.1', 1)).toBe(true);
  });
});

describe('clientAddress and TRUSTED_PROXIES', () => {
  const req = (peer: string, xff?: string) => ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } }) as unknown as IncomingMessage;
  const trusted = new AddressRanges(['10.0.0.0/8', '::1']);

  it.each([
    ['no trusted proxies: the peer, whatever the header says', undefined, '10.0.0.5', '198.51.100.1', '10.0.0.5'],
    ['a trusted peer: the rightmost entry that is not a trusted proxy', trusted, '10.0.0.5', '198.51.100.1, 203.0.113.9, 10.1.2.3', '203.0.113.9'],
    ['an untrusted peer: the header is ignored', trusted, '192.0.2.1', '198.51.100.1', '192.0.2.1'],
    ['a trusted peer without the header: the peer', trusted, '10.0.0.5', undefined, '10.0.0.5'],
    ['an IPv4-mapped trusted peer', trusted, '::ffff:10.0.0.5', '198.51.100.1', '198.51.100.1'],
    ['a garbled hop stops the walk at the last address before it', trusted, '10.0.0.5', '198.51.100.1, unknown, 10.9.9.9', '10.9.9.9'],
    ['every hop trusted: the leftmost', trusted, '::1', '10.0.0.1, 10.0.0.2', '10.0.0.1'],
  ] as const)('%s', (_name, ranges, peer, xff, expected) => {
    expect(clientAddress(req(peer, xff), ranges)).toBe(expected);
  });

  it('parses addresses and CIDR ranges, and names a bad TRUSTED_PROXIES entry by position', () => {
    expect(parseRange('10.0.0.0/8')).toEqual({ address: '10.0.0.0', prefix: 8, family: 'ipv4' });
    expect(parseRange('fd00::/129')).toBeUndefined();
    expect(parseRange('10.0.0.0/8/1')).toBeUndefined();
    expect(parseRange('example.com')).toBeUndefined();
    expect(parseConfig({ TRUSTED_PROXIES: '10.0.0.0/8, ::1' }).TRUSTED_PROXIES).toEqual(['10.0.0.0/8', '::1']);
    expect(() => parseConfig({ TRUSTED_PROXIES: '10.0.0.0/8,proxy.local' })).toThrow(
      'TRUSTED_PROXIES: expected comma-separated IP addresses or CIDR ranges (e.g. 10.0.0.0/8,::1); the 2nd is not one',
    );
  });
});
