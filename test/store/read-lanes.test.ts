// Issue 49.4: interactive reads first. The embedded engine works through the queries it is handed roughly one
// after another: a person's `/cost` waited behind every query a batch or a job had already handed it. Heavy reads
// now wait in the service for one of EMBEDDED_HEAVY_READS_MAX slots; interactive ones go straight to the engine.
// Seen failing before the gate: no gate held the two later heavy queries (and the small query finished last).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { activeReadGate, currentReadLane, inReadLane, ReadGate } from '../../src/store/read-lanes.js';
import type { Runtime } from '../../src/runtime.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';

/** A read that resolves when the test says so. */
function pending() {
  let finish!: () => void;
  const done = new Promise<void>((resolve) => (finish = resolve));
  return { finish, done };
}
const tick = () => new Promise((resolve) => setImmediate(resolve));

describe('ReadGate', () => {
  it('hands heavy reads at most maxHeavy slots, in arrival order, while interactive reads pass at once', async () => {
    const gate = new ReadGate(2);
    const started: string[] = [];
    const reads = [1, 2, 3, 4].map((i) => pending());
    const heavy = reads.map((r, i) =>
      inReadLane('heavy', () =>
        gate.run(async () => {
          started.push(`h${i + 1}`);
          await r.done;
        }),
      ),
    );
    await tick();
    expect(started).toEqual(['h1', 'h2']);
    expect(gate.stats()).toEqual({ heavyRunning: 2, heavyWaiting: 2, interactiveRunning: 0, interactiveWork: 0 });
    // Interactive: not held although every heavy slot is taken.
    const i = pending();
    const interactive = gate.run(async () => {
      started.push('i');
      await i.done;
    });
    await tick();
    expect(started).toEqual(['h1', 'h2', 'i']);
    expect(gate.stats().interactiveRunning).toBe(1);
    i.finish();
    await interactive;
    // The second finishing first passes its slot to the third in line, then the first to the fourth.
    reads[1].finish();
    await tick();
    expect(started).toEqual(['h1', 'h2', 'i', 'h3']);
    reads[0].finish();
    await tick();
    expect(started).toEqual(['h1', 'h2', 'i', 'h3', 'h4']);
    reads[2].finish();
    reads[3].finish();
    await Promise.all(heavy);
    expect(gate.stats()).toEqual({ heavyRunning: 0, heavyWaiting: 0, interactiveRunning: 0, interactiveWork: 0 });
  });

  it('gives the slot back when a heavy read fails', async () => {
    const gate = new ReadGate(1);
    await expect(inReadLane('heavy', () => gate.run(async () => Promise.reject(new Error('boom'))))).rejects.toThrow('boom');
    expect(gate.stats().heavyRunning).toBe(0);
    expect(await inReadLane('heavy', () => gate.run(async () => 'next'))).toBe('next');
  });

  it('keeps heavy sticky: a route asked from inside a heavy caller stays heavy', async () => {
    expect(currentReadLane()).toBe('interactive');
    expect(inReadLane('interactive', () => currentReadLane())).toBe('interactive');
    expect(inReadLane('heavy', () => inReadLane('interactive', () => currentReadLane()))).toBe('heavy');
    expect(await inReadLane('heavy', async () => {
      await tick();
      return currentReadLane();
    })).toBe('heavy');
  });

  it('refuses a slot count that is not a positive integer', () => {
    expect(() => new ReadGate(0)).toThrow('maxHeavy: expected a positive integer, got 0');
  });
});

describe('the embedded store behind the gate', () => {
  let rt: Runtime;
  beforeAll(async () => {
    rt = await openTestRuntime();
  });
  afterAll(async () => {
    await closeRuntime(rt);
  });

  it("answers a person's small query before the heavy queries handed in after the one already running", async () => {
    // Each heavy query keeps the engine busy for a while (hashing 30M numbers); the small one is a single row.
    const heavySql = 'SELECT sum(cityHash64(number)) AS s FROM numbers(30000000)';
    const order: string[] = [];
    const read = async (sql: string) => (await rt.store.client.query({ query: sql, format: 'JSONEachRow' })).json();
    const heavy = [1, 2, 3].map((i) =>
      inReadLane('heavy', async () => {
        await read(heavySql);
        order.push(`h${i}`);
      }),
    );
    await tick();
    // One heavy query is the engine's, the other two wait in the service.
    expect(activeReadGate()?.stats()).toEqual({ heavyRunning: 1, heavyWaiting: 2, interactiveRunning: 0, interactiveWork: 0 });
    const small = read('SELECT 1 AS one').then((rows) => {
      order.push('s');
      return rows;
    });
    expect(await small).toEqual([{ one: 1 }]);
    await Promise.all(heavy);
    // Which of the queries the engine holds finishes first is the engine's choice (its lock is not fair): the gate
    // only bounds what is ahead of the small one. Without it, all three heavy ones were handed in first and the
    // small one finished last (the stats above are undefined there: no gate).
    expect(order.filter((o) => o !== 's')).toEqual(['h1', 'h2', 'h3']);
  });
});

describe('interactive work holds heavy reads back', () => {
  it('a heavy read does not start while a route handler runs, and starts once it ends (or after maxWaitMs)', async () => {
    const gate = new ReadGate(1, 60_000);
    const route = pending();
    const handler = inReadLane('interactive', () => route.done);
    let heavyStarted = false;
    const heavy = inReadLane('heavy', () => gate.run(async () => void (heavyStarted = true)));
    await tick();
    expect(heavyStarted).toBe(false);
    route.finish();
    await handler;
    await heavy;
    expect(heavyStarted).toBe(true);
    // The wait is bounded: a handler that never ends delays a heavy read by maxWaitMs only.
    const stuck = pending();
    void inReadLane('interactive', () => stuck.done);
    const bounded = new ReadGate(1, 20);
    expect(await inReadLane('heavy', () => bounded.run(async () => 'ran'))).toBe('ran');
    stuck.finish();
  });
});

describe('heavy work inside a person\'s request', () => {
  it('takes a heavy slot but does not wait for the request it belongs to (it would wait for itself)', async () => {
    // An MCP tool call (interactive) asking the session route (heavy) in process: before, each of the route's
    // queries waited the whole maxWaitMs for the call's own interactive work to end.
    const gate = new ReadGate(1, 60_000);
    const ran = await inReadLane('interactive', () => inReadLane('heavy', () => gate.run(async () => 'ran')));
    expect(ran).toBe('ran');
    expect(gate.stats().interactiveWork).toBe(0);
  }, 10_000);
});

describe('reads of a client that left, a full heavy queue, one client\'s share', () => {
  it('drops the queued heavy reads of a client that left, and refuses a request\'s heavy read past maxWaiting', async () => {
    const gate = new ReadGate(1, 0, 2);
    const hold = pending();
    const holding = inReadLane('heavy', () => gate.run(() => hold.done));
    await tick();
    const left = new AbortController();
    const queued = inReadLane('heavy', () => gate.run(async () => 'ran'), { signal: left.signal });
    await tick();
    expect(gate.stats().heavyWaiting).toBe(1);
    left.abort();
    await expect(queued).rejects.toMatchObject({ name: 'ReadCancelledError', reason: 'client_gone' });
    // It left the line: nothing waits, and the slot is still the holder's.
    expect(gate.stats()).toMatchObject({ heavyRunning: 1, heavyWaiting: 0 });
    // A request's heavy reads queue up to maxWaiting (2); the third is refused at once. A job's (no signal) queue.
    const stay = new AbortController();
    const two = [1, 2].map(() => inReadLane('heavy', () => gate.run(async () => 'ran'), { signal: stay.signal }));
    await tick();
    await expect(inReadLane('heavy', () => gate.run(async () => 'ran'), { signal: stay.signal })).rejects.toMatchObject({ reason: 'busy' });
    const job = inReadLane('heavy', () => gate.run(async () => 'job'));
    await tick();
    expect(gate.stats().heavyWaiting).toBe(3);
    hold.finish();
    await holding;
    expect(await Promise.all([...two, job])).toEqual(['ran', 'ran', 'job']);
    expect(gate.stats()).toMatchObject({ heavyRunning: 0, heavyWaiting: 0 });
  });

  it('reads a client\'s work beyond its share in the heavy lane', async () => {
    const lanesSeen: string[] = [];
    const ends = [1, 2, 3].map(() => pending());
    const work = ends.map((e) =>
      inReadLane('interactive', async () => {
        lanesSeen.push(currentReadLane());
        await e.done;
      }, { client: 'token:a', maxPerClient: 2 }),
    );
    // Another client still has its own share.
    const other = inReadLane('interactive', async () => currentReadLane(), { client: 'token:b', maxPerClient: 2 });
    expect(await other).toBe('interactive');
    expect(lanesSeen).toEqual(['interactive', 'interactive', 'heavy']);
    for (const e of ends) e.finish();
    await Promise.all(work);
    // The share is given back as the work ends.
    expect(await inReadLane('interactive', async () => currentReadLane(), { client: 'token:a', maxPerClient: 2 })).toBe('interactive');
  });
});
