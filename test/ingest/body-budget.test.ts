// The shared push-body bounds, alone (pure): read slots per endpoint and per address, and the budget of
// unauthenticated bytes. Expected values are the limits given here, worked by hand.
import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import { ReadSlots, UnverifiedBytes } from '../../src/ingest/body-budget.js';

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

  it('a queueing endpoint: past the total a body waits, in order; its address share counts the waiting; a closed waiter leaves the queue', async () => {
    const slots = new ReadSlots(2, 2, NAMES, true);
    const a = slots.acquire('10.0.0.1') as () => void;
    const b = slots.acquire('10.0.0.2') as () => void;
    const gone = new EventEmitter();
    const waitingC = slots.acquire('10.0.0.3', gone as never) as Promise<unknown>;
    const waitingD = slots.acquire('10.0.0.3') as Promise<unknown>;
    expect(waitingC).toBeInstanceOf(Promise);
    // 10.0.0.3 has two bodies waiting: its share is taken.
    expect(slots.acquire('10.0.0.3')).toEqual({ refused: '2 bodies from this address are being read already (PER_ADDRESS)' });
    gone.emit('close');
    expect(await waitingC).toEqual({ refused: 'the sender closed the connection while waiting' });
    a();
    const d = (await waitingD) as () => void;
    expect(typeof d).toBe('function');
    expect(slots.inUse).toBe(2);
    b();
    d();
    expect(slots.inUse).toBe(0);
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
});
