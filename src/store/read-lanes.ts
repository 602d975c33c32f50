/**
 * Interactive reads first (issue 49.4). The embedded engine works through its queries more or less one after
 * another, so a person's `/cost` waited behind every query a big caller had already handed it (three MCP batches
 * took `/cost` from 52 ms to 5.2 s). Every read of the embedded store passes this gate:
 *
 * - an **interactive** read (a query-API route, one MCP tool call, the push endpoints: the default) goes to the
 *   engine at once;
 * - a **heavy** read (a session of thousands of requests, an MCP batch, a report, every job) does not start while
 *   interactive work is running (for up to a second), and then waits for one of `EMBEDDED_HEAVY_READS_MAX` slots:
 *   a person's request of several queries waits for the heavy queries already running, never for those after.
 *
 * The lane travels with the async context (AsyncLocalStorage), so a route or job says once what it is and every
 * query it causes, however deep, is placed by it. Heavy is sticky: a route asked from inside a heavy caller (an
 * MCP batch asking the query API in process) stays heavy. Heavy callers that read a lot split their work into
 * queries of bounded size (see src/api/session-routes.ts) so the engine is never held long by one of them.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

export type ReadLane = 'interactive' | 'heavy';

/** A context's lane; `forInteractive`: heavy work a person's request started (an MCP call asking the session route). */
interface LaneContext {
  lane: ReadLane;
  forInteractive: boolean;
}

const lanes = new AsyncLocalStorage<LaneContext>();

let interactiveWork = 0;
let idleWaiters: Array<() => void> = [];

function interactiveDone(): void {
  interactiveWork--;
  if (interactiveWork > 0) return;
  const waiters = idleWaiters;
  idleWaiters = [];
  for (const wake of waiters) wake();
}

/**
 * Runs `fn` with its reads in `lane`; inside a heavy caller everything stays heavy. Interactive work (a route's
 * whole handler, not only its queries) is counted while it runs: heavy reads do not start meanwhile (up to the
 * gate's maxWaitMs), so a request of several queries waits for at most the heavy query already running.
 */
export function inReadLane<T>(lane: ReadLane, fn: () => T): T {
  const outer = lanes.getStore();
  if (outer?.lane === 'heavy') return lanes.run(outer, fn);
  // Heavy work inside a person's request does not wait for that request's own interactive work to end (it would
  // wait for itself, a second per query); it still takes a heavy slot.
  if (lane === 'heavy') return lanes.run({ lane: 'heavy', forInteractive: outer?.lane === 'interactive' }, fn);
  interactiveWork++;
  let result: T;
  try {
    result = lanes.run({ lane: 'interactive', forInteractive: false }, fn);
  } catch (err) {
    interactiveDone();
    throw err;
  }
  if (result instanceof Promise) return result.finally(interactiveDone) as T;
  interactiveDone();
  return result;
}

/** Resolves once no interactive work runs, or after `ms`. */
function interactiveIdle(ms: number): Promise<void> {
  if (interactiveWork === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      idleWaiters = idleWaiters.filter((w) => w !== wake);
      resolve();
    }, ms);
    const wake = () => {
      clearTimeout(timer);
      resolve();
    };
    idleWaiters.push(wake);
  });
}

/** The lane of the reads made here: interactive unless a caller said heavy. */
export function currentReadLane(): ReadLane {
  return lanes.getStore()?.lane ?? 'interactive';
}

/** What the gate has let through and held: for the service's metrics. */
export interface ReadGateStats {
  heavyRunning: number;
  heavyWaiting: number;
  interactiveRunning: number;
  /** Route handlers and MCP calls running in the interactive lane (heavy reads hold back while any are). */
  interactiveWork: number;
}

/** The gate itself: interactive reads pass, heavy ones take one of `maxHeavy` slots in arrival order. */
export class ReadGate {
  private heavyRunning = 0;
  private interactiveRunning = 0;
  private readonly waiting: Array<() => void> = [];

  /**
   * `maxHeavy` heavy reads at once; a heavy read holds back at most `maxWaitMs` for interactive work to finish
   * (so a steady stream of people's questions slows the jobs, never stops them).
   */
  constructor(
    private readonly maxHeavy: number,
    private readonly maxWaitMs = 1000,
  ) {
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
    if (!lanes.getStore()?.forInteractive) await interactiveIdle(this.maxWaitMs);
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
    return { heavyRunning: this.heavyRunning, heavyWaiting: this.waiting.length, interactiveRunning: this.interactiveRunning, interactiveWork };
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
