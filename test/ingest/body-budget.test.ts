// The shared push-body bounds, alone (pure): read slots per endpoint and per address, and the budget of
// unauthenticated bytes. Expected values are the limits given here, worked by hand.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ReadSlots, slowNetworkOf, UnverifiedBytes } from '../../src/ingest/body-budget.js';

const NAMES = { max: 'MAX', perAddress: 'PER_ADDRESS' };

describe('ReadSlots', () => {
  it('refuses an address at its share while another address still gets a slot; refuses past the total unless it queues', () => {
    const slots = new ReadSlots(3, 2, NAMES);
    const a1 = slots.acquire('10.0.0.1');
    const a2 = slots.acquire('10.0.0.1');
    expect([typeof a1, typeof a2]).toEqual(['function', 'function']);
    expect(slots.acquire('10.0.0.1')).toEqual({ refused: '2 bodies from this address are being read already (PER_ADDRESS)' });
    const b1 = slots.acquire('10.0.0.2');
    expect(typeof b1).toBe('function');
    expect(slots.acquire('10.0.0.3')).toEqual({ refused: '3 bodies are being read already (MAX)' });
    (a1 as () => void)();
    (a1 as () => void)(); // twice is harmless
    expect(slots.inUse).toBe(2);
    expect(typeof slots.acquire('10.0.0.1')).toBe('function');
    expect(slots.inUse).toBe(3);
  });

  it('a queueing endpoint (the drain): beyond either limit a body waits; a freed slot goes to the first waiter whose address is under its share; a closed waiter leaves', async () => {
    const slots = new ReadSlots(2, 1, NAMES, true);
    const order: string[] = [];
    const wait = (address: string, name: string, gone?: EventEmitter) => {
      const got = slots.acquire(address, gone as never);
      expect(got).toBeInstanceOf(Promise);
      return (got as Promise<unknown>).then((r) => {
        order.push(name);
        return r as (() => void) | { refused: string };
      });
    };
    const a = slots.acquire('10.0.0.1') as () => void;
    const b = wait('10.0.0.1', 'b'); // its address's share is taken
    const c = slots.acquire('10.0.0.2') as () => void; // another address still gets the second slot
    expect(typeof c).toBe('function');
    const d = wait('10.0.0.3', 'd'); // both slots taken
    const e = wait('10.0.0.1', 'e');
    const gone = new EventEmitter();
    const f = wait('10.0.0.4', 'f', gone);
    expect(slots.waiters).toBe(4);
    gone.emit('close');
    expect(await f).toEqual({ refused: 'the sender closed the connection while waiting' });
    c(); // 10.0.0.1 still holds its share: b is skipped, d (10.0.0.3) gets the slot
    const dSlot = (await d) as () => void;
    a();
    const bSlot = (await b) as () => void;
    expect(order).toEqual(['f', 'd', 'b']);
    bSlot();
    const eSlot = (await e) as () => void;
    expect(order).toEqual(['f', 'd', 'b', 'e']);
    expect([slots.inUse, slots.waiters]).toEqual([2, 0]);
    dSlot();
    eSlot();
    eSlot();
    expect(slots.inUse).toBe(0);
  });
});

describe('ReadSlots: slow addresses wait behind the others', () => {
  it('a freed slot skips waiters of an address whose body was dropped for its rate, for the others (then theirs, first come)', async () => {
    const slots = new ReadSlots(2, 1, NAMES, true);
    const order: string[] = [];
    const wait = (address: string, name: string) =>
      (slots.acquire(address) as Promise<unknown>).then((r) => {
        order.push(name);
        return r as () => void;
      });
    // Two trickling senders from two addresses hold both slots; each address queues a second body, then the
    // platform's batch (a third address) queues behind them.
    const a1 = slots.acquire('10.0.0.1') as () => void;
    const b1 = slots.acquire('10.0.0.2') as () => void;
    const a2 = wait('10.0.0.1', 'a2');
    const b2 = wait('10.0.0.2', 'b2');
    const platform = wait('10.9.0.9', 'platform');
    // Both are dropped for their rate (the guard marks the address, then the closed connection releases the slot).
    slots.markSlow('10.0.0.1');
    a1();
    await platform;
    expect(order).toEqual(['platform']);
    slots.markSlow('10.0.0.2');
    b1();
    await a2; // only slow addresses wait now: the first come
    expect(order).toEqual(['platform', 'a2']);
    expect([slots.inUse, slots.waiters]).toEqual([2, 1]);
    void b2;
  });
});

describe('ReadSlots: slow networks', () => {
  it('a body dropped for its rate marks its /24 (IPv4) or /64 (IPv6): the other addresses of that network wait behind other networks too', async () => {
    expect(['127.0.0.41', '::ffff:127.0.0.9', '2001:db8:0:1:aaaa::1', '2001:db8::1:0:0:5', '10.1.2.3'].map(slowNetworkOf)).toEqual([
      '127.0.0.0/24', '127.0.0.0/24', '2001:db8:0:1::/64', '2001:db8:0:0::/64', '10.1.2.0/24',
    ]);
    const slots = new ReadSlots(1, 1, NAMES, true);
    const order: string[] = [];
    const wait = (address: string, name: string) =>
      (slots.acquire(address) as Promise<unknown>).then((r) => {
        order.push(name);
        return r as () => void;
      });
    const first = slots.acquire('127.0.0.2') as () => void;
    const sibling = wait('127.0.0.3', 'sibling'); // another address of the trickling host's network, first in line
    const platform = wait('10.9.8.7', 'platform');
    slots.markSlow('127.0.0.2');
    first();
    (await Promise.race([platform, sibling]))(); // whichever got the slot releases it: the other gets it then
    await Promise.all([platform, sibling]);
    expect(order).toEqual(['platform', 'sibling']);
  });
});

describe('UnverifiedBytes', () => {
  it('bounds the bytes overall and per address; one body alone from its address may pass its share; release returns every byte once', () => {
    const budget = new UnverifiedBytes(100, 30);
    const a = budget.lease('10.0.0.1');
    expect(a.reserve(50)).toBe(true); // alone: past the share of 30
    const a2 = budget.lease('10.0.0.1');
    expect(a2.reserve(1)).toBe(false); // a second body of the same address: over its share
    const b = budget.lease('10.0.0.2');
    expect(b.reserve(30)).toBe(true);
    expect(b.reserve(1)).toBe(true); // still alone: 31 from 10.0.0.2
    const c = budget.lease('10.0.0.3');
    expect(c.reserve(20)).toBe(false); // 50 + 31 + 20 > 100 overall
    expect(c.reserve(19)).toBe(true);
    expect(budget.used).toBe(100);
    a.release();
    a.release();
    expect(budget.used).toBe(50);
    expect(a.reserve(1)).toBe(false); // a released lease takes nothing more
    expect(a2.reserve(30)).toBe(true);
    expect([a2.held, b.held, c.held, budget.used]).toEqual([30, 31, 19, 80]);
    for (const l of [a2, b, c]) l.release();
    expect(budget.used).toBe(0);
  });

  it('webhook bodies hold at most half the budget: the other half stays for the drain, whose batches are not retried', () => {
    const budget = new UnverifiedBytes(100, 30);
    const w1 = budget.lease('10.0.0.1', { webhook: true });
    const w2 = budget.lease('10.0.0.2', { webhook: true });
    const w3 = budget.lease('10.0.0.3', { webhook: true });
    expect([w1.reserve(30), w2.reserve(20), w3.reserve(1)]).toEqual([true, true, false]); // 50 of 100: the webhooks' half
    const drain = budget.lease('10.0.0.9');
    expect(drain.reserve(50)).toBe(true); // alone from its address: past its share, within the drain's half
    expect(budget.used).toBe(100);
    w1.release();
    expect([budget.webhookBytes, w3.reserve(30)]).toEqual([20, true]);
  });
});
