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

/**
 * A context's lane; `forInteractive`: heavy work a person's request started (an MCP call asking the session route);
 * `signal`: aborted when the client that asked has gone, so its reads not yet handed to the engine are dropped.
 */
interface LaneContext {
  lane: ReadLane;
  forInteractive: boolean;
  signal?: AbortSignal;
}

/** Where a read is cancelled: its client left, or the heavy queue is full. */
export class ReadCancelledError extends Error {
  constructor(
    message: string,
    readonly reason: 'client_gone' | 'busy',
  ) {
    super(message);
    this.name = 'ReadCancelledError';
  }
}

/** What a top-level caller says of itself: the signal of its client, and who it is for the per-client share. */
export interface LaneOptions {
  signal?: AbortSignal;
  /** A token digest or an address: interactive work beyond `maxPerClient` of one client reads in the heavy lane. */
  client?: string;
  maxPerClient?: number;
}

const perClient = new Map<string, number>();

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
export function inReadLane<T>(lane: ReadLane, fn: () => T, opts: LaneOptions = {}): T {
  const outer = lanes.getStore();
  const signal = outer?.signal && opts.signal ? AbortSignal.any([outer.signal, opts.signal]) : (outer?.signal ?? opts.signal);
  if (outer?.lane === 'heavy') return lanes.run({ ...outer, signal }, fn);
  // Heavy work inside a person's request does not wait for that request's own interactive work to end (it would
  // wait for itself, a second per query); it still takes a heavy slot.
  if (lane === 'heavy') return lanes.run({ lane: 'heavy', forInteractive: outer?.lane === 'interactive', signal }, fn);
  // Interactive inside interactive (an MCP call asking a route in process): the same work, counted once.
  if (outer) return lanes.run({ ...outer, signal }, fn);
  // One client's share of interactive work: beyond it, its requests read in the heavy lane (32 concurrent single
  // calls from one client took everyone's /cost from 25 ms to 600 ms).
  const client = opts.client;
  if (client !== undefined && opts.maxPerClient !== undefined && (perClient.get(client) ?? 0) >= opts.maxPerClient) {
    return lanes.run({ lane: 'heavy', forInteractive: false, signal }, fn);
  }
  interactiveWork++;
  if (client !== undefined) perClient.set(client, (perClient.get(client) ?? 0) + 1);
  const done = () => {
    if (client !== undefined) {
      const left = (perClient.get(client) ?? 1) - 1;
      if (left > 0) perClient.set(client, left);
      else perClient.delete(client);
    }
    interactiveDone();
  };
  let result: T;
  try {
    result = lanes.run({ lane: 'interactive', forInteractive: false, signal }, fn);
  } catch (err) {
    done();
    throw err;
  }
  if (result instanceof Promise) return result.finally(done) as T;
  done();
  return result;
}

/**
 * Runs `fn` in the heavy lane detached from its caller: no client's signal, no request's lane. For work many
 * clients share that one of them happens to start (the live log feed's poller): the first client leaving must not
 * cancel it for the others.
 */
export function inSharedHeavyLane<T>(fn: () => T): T {
  return lanes.run({ lane: 'heavy', forInteractive: false }, fn);
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
    private readonly maxWaiting = 256,
  ) {
    if (!Number.isInteger(maxHeavy) || maxHeavy < 1) throw new RangeError(`maxHeavy: expected a positive integer, got ${maxHeavy}`);
  }

  async run<T>(read: () => Promise<T>): Promise<T> {
    const context = lanes.getStore();
    const signal = context?.signal;
    throwIfGone(signal);
    if ((context?.lane ?? 'interactive') === 'interactive') {
      this.interactiveRunning++;
      try {
        return await read();
      } finally {
        this.interactiveRunning--;
      }
    }
    if (!context?.forInteractive) await interactiveIdle(this.maxWaitMs);
    throwIfGone(signal);
    if (this.heavyRunning >= this.maxHeavy) {
      // A request's heavy reads queue up to maxWaiting (then its answer is a 503 to retry); a job's always queue.
      if (signal && this.waiting.length >= this.maxWaiting) {
        throw new ReadCancelledError(`${this.waiting.length} heavy reads are waiting for the store already (EMBEDDED_HEAVY_READS_MAX_WAITING); try again shortly`, 'busy');
      }
      await this.queue(signal);
    } else this.heavyRunning++;
    // The slot is this read's now: given on if its client left while it waited.
    if (signal?.aborted) {
      this.release();
      throwIfGone(signal);
    }
    try {
      return await read();
    } finally {
      this.release();
    }
  }

  /** Waits for a slot handed on by a finishing read; leaves the line if the client goes first. */
  private queue(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      const take = () => {
        signal?.removeEventListener('abort', leave);
        resolve();
      };
      const leave = () => {
        const at = this.waiting.indexOf(take);
        if (at < 0) return; // the slot was handed over already: run() gives it on
        this.waiting.splice(at, 1);
        reject(gone());
      };
      this.waiting.push(take);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  /** The slot passes straight to the next heavy read in line (the count stays), or is given back. */
  private release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.heavyRunning--;
  }

  stats(): ReadGateStats {
    return { heavyRunning: this.heavyRunning, heavyWaiting: this.waiting.length, interactiveRunning: this.interactiveRunning, interactiveWork };
  }
}

const gone = () => new ReadCancelledError('the client has gone: its reads not yet started are dropped', 'client_gone');

function throwIfGone(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw gone();
}

let active: ReadGate | undefined;

/** The gate of the embedded connection this process opens (one engine per process); its counts feed /metrics. */
export function installReadGate(maxHeavy: number, maxWaiting?: number): ReadGate {
  active = new ReadGate(maxHeavy, 1000, maxWaiting);
  return active;
}

/** The embedded store's gate, once one is open in this process. */
export function activeReadGate(): ReadGate | undefined {
  return active;
}
