/**
 * Interactive reads first (issue 49.4). The embedded engine works through its queries more or less one after
 * another, so a person's `/cost` waited behind every query a big caller had already handed it (three MCP batches
 * took `/cost` from 52 ms to 5.2 s). Every read of the embedded store passes this gate:
 *
 * - an **interactive** read (a query-API route, one MCP tool call, the push endpoints: the default) goes to the
 *   engine at once;
 * - a **heavy** read (a session of thousands of requests, an MCP batch, a report, every job) waits for one of
 *   `EMBEDDED_HEAVY_READS_MAX` slots, so at most that many heavy queries are ever ahead of an interactive one.
 *
 * The lane travels with the async context (AsyncLocalStorage), so a route or job says once what it is and every
 * query it causes, however deep, is placed by it. Heavy is sticky: a route asked from inside a heavy caller (an
 * MCP batch asking the query API in process) stays heavy. Heavy callers that read a lot split their work into
 * queries of bounded size (see src/api/session-routes.ts) so the engine is never held long by one of them.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export type ReadLane = 'interactive' | 'heavy';

const lanes = new AsyncLocalStorage<ReadLane>();

/** Runs `fn` with its reads in `lane`; inside a heavy caller everything stays heavy. */
export function inReadLane<T>(lane: ReadLane, fn: () => T): T {
  return lanes.run(lanes.getStore() === 'heavy' ? 'heavy' : lane, fn);
}

/** The lane of the reads made here: interactive unless a caller said heavy. */
export function currentReadLane(): ReadLane {
  return lanes.getStore() ?? 'interactive';
}

/** What the gate has let through and held: for the service's metrics. */
export interface ReadGateStats {
  heavyRunning: number;
  heavyWaiting: number;
  interactiveRunning: number;
}

/** The gate itself: interactive reads pass, heavy ones take one of `maxHeavy` slots in arrival order. */
export class ReadGate {
  private heavyRunning = 0;
  private interactiveRunning = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(private readonly maxHeavy: number) {
    if (!Number.isInteger(maxHeavy) || maxHeavy < 1) throw new RangeError(`maxHeavy: expected a positive integer, got ${maxHeavy}`);
  }

  async run<T>(read: () => Promise<T>): Promise<T> {
    if (currentReadLane() === 'interactive') {
      this.interactiveRunning++;
      try {
        return await read();
      } finally {
        this.interactiveRunning--;
      }
    }
    if (this.heavyRunning >= this.maxHeavy) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.heavyRunning++;
    try {
      return await read();
    } finally {
      // The slot passes straight to the next heavy read in line (the count stays), or is given back.
      const next = this.waiting.shift();
      if (next) next();
      else this.heavyRunning--;
    }
  }

  stats(): ReadGateStats {
    return { heavyRunning: this.heavyRunning, heavyWaiting: this.waiting.length, interactiveRunning: this.interactiveRunning };
  }
}

let active: ReadGate | undefined;

/** The gate of the embedded connection this process opens (one engine per process); its counts feed /metrics. */
export function installReadGate(maxHeavy: number): ReadGate {
  active = new ReadGate(maxHeavy);
  return active;
}

/** The embedded store's gate, once one is open in this process. */
export function activeReadGate(): ReadGate | undefined {
  return active;
}
