// What a push body (log drain, webhooks, Faro) may cost the service, shared by the three endpoints so that each
// bound is written once (CONTRIBUTING.md rule 21): read slots per endpoint, overall and per remote address; a
// minimum rate while a body is read; one budget of bytes held by bodies not yet authenticated (a signature over
// the body is checked only once the body is in). The total deadline is not here: it is the HTTP server's
// requestTimeout (PUSH_BODY_TIMEOUT_MS, set where the server is built), Node's own 408.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Counter, Gauge, type Registry } from 'prom-client';
import { parseConfig, type Config } from '../config.js';
import { AddressRanges, clientAddress } from '../ip-ranges.js';

export type PushEndpoint = 'drain' | 'webhooks' | 'faro';

/** The limits of src/config.ts this module applies. */
export type PushLimits = Pick<
  Config,
  | 'PUSH_BODY_MIN_BYTES_PER_SECOND'
  | 'PUSH_BODY_RATE_WINDOW_MS'
  | 'PUSH_UNVERIFIED_MAX_BYTES'
  | 'PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS'
  | 'LOG_DRAIN_MAX_BODIES_READING'
  | 'LOG_DRAIN_MAX_BODIES_PER_ADDRESS'
  | 'WEBHOOK_MAX_BODIES_READING'
  | 'WEBHOOK_MAX_BODIES_PER_ADDRESS'
  | 'FARO_MAX_BODIES_READING'
  | 'FARO_MAX_BODIES_PER_ADDRESS'
  | 'PUSH_PROVEN_TTL_SECONDS'
  | 'LOG_DRAIN_UNPROVEN_MAX_BODIES_READING'
  | 'WEBHOOK_UNPROVEN_MAX_BODIES_READING'
  | 'PUSH_CONTENDED_MIN_BYTES_PER_SECOND'
  | 'PUSH_CONTENDED_MAX_BODY_MS'
  | 'PUSH_SLOT_MAX_WAIT_MS'
  | 'TRUSTED_PROXIES'
>;

/** Seconds a sender refused for want of a slot or of budget is asked to wait. */
export const BUSY_RETRY_AFTER_SECONDS = 5;

/**
 * The sender's address as the socket sees it (a proxy in front makes every sender one address: size for it, or
 * name the proxy in TRUSTED_PROXIES and use PushBudgets.clientAddress).
 */
export function remoteAddress(req: IncomingMessage): string {
  return req.socket.remoteAddress ?? 'unknown';
}

/** Proven senders remembered at most (the least recently proven forgotten first). */
export const PROVEN_SENDERS_KEPT = 10_000;

/**
 * What a sender is remembered as proven by: an IPv4 address itself (a cloud /24 holds other tenants), an IPv6
 * address's /64 (one host's addresses rotate within it).
 */
export function provenKeyOf(address: string): string {
  const plain = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)?.[1] ?? address;
  return plain.includes(':') ? slowNetworkOf(plain) : plain;
}

/**
 * Senders that delivered a correctly signed body (a drain batch with its HMAC, a webhook with its Ed25519
 * signature) or authenticated before their body (the drain's bearer token) within `ttlMs`: their bodies read in
 * slots that unproven senders cannot take. A signature costs an attacker nothing to forge, but its check needs
 * the whole body; a sender that passed it once has shown it holds the key.
 */
export class ProvenSenders {
  private readonly at = new Map<string, number>();
  constructor(readonly ttlMs: number) {}

  prove(address: string, now = Date.now()): void {
    const key = provenKeyOf(address);
    this.at.delete(key);
    this.at.set(key, now);
    if (this.at.size > PROVEN_SENDERS_KEPT) this.at.delete(this.at.keys().next().value as string);
  }

  has(address: string, now = Date.now()): boolean {
    const key = provenKeyOf(address);
    const at = this.at.get(key);
    if (at === undefined) return false;
    if (now - at < this.ttlMs) return true;
    this.at.delete(key);
    return false;
  }

  get size(): number {
    return this.at.size;
  }
}

/**
 * For an answer sent while the body is still unread (a refusal): the connection is destroyed once the answer is
 * written, instead of Node reading and discarding the rest of the body first (at loopback speed that is megabytes
 * per connection before its close, all of it garbage: 32 refused 16 MiB bodies cost ~45 MB of memory that way).
 */
export function closeWithoutReading(res: ServerResponse): void {
  res.once('finish', () => res.socket?.destroy());
}

export type SlotRefusal = { refused: string };

/**
 * The network an address is remembered as slow by: its /24 (IPv4, IPv4-mapped IPv6) or /64 (IPv6). One host holds
 * many addresses of its network (loopback 127.0.0.0/8, an IPv6 /64): 40 trickling senders from 40 addresses of one
 * /24 kept a signed batch waiting 55 s when each address was remembered alone.
 */
export function slowNetworkOf(address: string): string {
  const v4 = /^(?:::ffff:)?(\d{1,3}\.\d{1,3}\.\d{1,3})\.\d{1,3}$/i.exec(address);
  if (v4) return `${v4[1]}.0/24`;
  if (!address.includes(':')) return address;
  const [head, tail] = address.toLowerCase().split('::', 2);
  const left = head ? head.split(':') : [];
  const right = tail === undefined ? [] : tail ? tail.split(':') : [];
  const groups = tail === undefined ? left : [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill('0'), ...right];
  return `${groups.slice(0, 4).map((g) => g.replace(/^0+(?=.)/, '')).join(':')}::/64`;
}

/** How long an address whose body was dropped for its rate waits behind other addresses for a read slot. */
export const SLOW_ADDRESS_MEMORY_MS = 15 * 60_000;
/** Slow addresses remembered at most (the oldest forgotten first): a bound on what hostile addresses cost. */
export const SLOW_ADDRESSES_KEPT = 10_000;

/** How long a refusal or a wait for want of the unproven pool counts as contention (SlowBodyGuard). */
export const CONTENTION_MEMORY_MS = 2_000;

type Waiter = { address: string; proven: boolean; grant: () => void };

/**
 * Bodies read at once on one endpoint: `max` in all; of those, unproven senders (ProvenSenders) hold at most
 * `unprovenMax` together and `perAddress` from one address, so the rest is a lane that only senders which proved
 * they hold the key can read in (30 steady senders with forged signatures from 30 addresses kept every signed batch
 * waiting 54 s when all shared one pool). Proven senders have no per-address share: behind a proxy the platform is
 * one address. Without `queue`, a body beyond its limits is refused (the sender retries). With `queue` (the drain:
 * the platform does not retry a failed batch), it waits, its bytes unread, and a freed slot goes to a proven waiter
 * first, then to an unproven waiter whose address is under its share: a legitimate sender is never behind a queue
 * of one hostile address's connections. Among unproven waiters, an address whose network (/24, /64) had a body
 * dropped for its rate within SLOW_ADDRESS_MEMORY_MS (`markSlow`) comes after every other, then the first come:
 * trickling senders from several addresses would otherwise each hold a slot for a whole rate window ahead of a
 * signed batch that queued after them (40 from 8 loopback addresses kept one waiting 47 s). A wait ends at the
 * server's request deadline (PUSH_BODY_TIMEOUT_MS, Node's 408), when the connection closes (`gone`), or with a slot.
 */
export class ReadSlots {
  private busy = 0;
  private unprovenBusy = 0;
  private readonly byAddress = new Map<string, number>();
  /** Network (slowNetworkOf) -> when a body from it was last dropped for its rate (oldest first; at most SLOW_ADDRESSES_KEPT). */
  private readonly slowAt = new Map<string, number>();
  private readonly waiting: Waiter[] = [];
  /** When an unproven body was last refused or queued for want of a slot (contention: SlowBodyGuard). */
  private unprovenTurnedAwayAt = -Infinity;

  constructor(
    readonly max: number,
    readonly perAddress: number,
    private readonly names: { max: string; perAddress: string; unproven?: string },
    private readonly queue = false,
    readonly unprovenMax = max,
    /** Without `queue`: how long a body may wait for a slot before its refusal (0: refused at once). */
    readonly maxWaitMs = 0,
  ) {}

  get inUse(): number {
    return this.busy;
  }

  get unprovenInUse(): number {
    return this.unprovenBusy;
  }

  get waiters(): number {
    return this.waiting.length;
  }

  /**
   * Unproven bodies that want a slot now (those waiting; one while a refusal is recent): how many unproven bodies
   * being read the guard may drop, the slowest first, to make room.
   */
  contention(now = Date.now()): number {
    let waiting = 0;
    for (const w of this.waiting) if (!w.proven) waiting++;
    if (waiting > 0) return waiting;
    return now - this.unprovenTurnedAwayAt < CONTENTION_MEMORY_MS ? 1 : 0;
  }

  /**
   * A slot for a body from `address` (`proven`: it may use the proven lane): a release function (call it on every
   * path; twice is harmless), a promise of one when it waits its turn, or a refusal naming the limit. `gone` (the
   * connection closed) leaves the queue.
   */
  acquire(
    address: string,
    gone?: { once(event: 'close', fn: () => void): unknown; off(event: 'close', fn: () => void): unknown },
    proven = false,
  ): (() => void) | Promise<(() => void) | SlotRefusal> | SlotRefusal {
    if (this.free(address, proven)) return this.take(address, proven);
    if (!proven) this.unprovenTurnedAwayAt = Date.now();
    const refusal = (): SlotRefusal => {
      if (proven || this.busy >= this.max) return { refused: `${this.max} bodies are being read already (${this.names.max})` };
      return (this.byAddress.get(address) ?? 0) >= this.perAddress
        ? { refused: `${this.perAddress} bodies from this address are being read already (${this.names.perAddress})` }
        : { refused: `${this.unprovenMax} bodies from senders not yet proven are being read already (${this.names.unproven ?? this.names.max})` };
    };
    if (!this.queue && this.maxWaitMs === 0) return refusal();
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      if (!this.queue) {
        // A bounded wait: the contended rule (SlowBodyGuard) drops the slowest unproven body meanwhile.
        timer = setTimeout(() => {
          const at = this.waiting.indexOf(entry);
          if (at === -1) return;
          this.waiting.splice(at, 1);
          gone?.off('close', onGone);
          resolve(refusal());
        }, this.maxWaitMs);
      }
      const onGone = () => {
        const at = this.waiting.indexOf(entry);
        if (at === -1) return; // granted already: the holder releases it
        this.waiting.splice(at, 1);
        clearTimeout(timer);
        resolve({ refused: 'the sender closed the connection while waiting' });
      };
      const entry: Waiter = {
        address,
        proven,
        grant: () => {
          clearTimeout(timer);
          gone?.off('close', onGone);
          resolve(this.take(address, proven));
        },
      };
      this.waiting.push(entry);
      gone?.once('close', onGone);
    });
  }

  private free(address: string, proven: boolean): boolean {
    if (this.busy >= this.max) return false;
    if (proven) return true;
    return this.unprovenBusy < this.unprovenMax && (this.byAddress.get(address) ?? 0) < this.perAddress;
  }

  private take(address: string, proven: boolean): () => void {
    this.busy++;
    if (!proven) this.unprovenBusy++;
    this.byAddress.set(address, (this.byAddress.get(address) ?? 0) + 1);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.busy--;
      if (!proven) this.unprovenBusy--;
      const left = (this.byAddress.get(address) ?? 1) - 1;
      if (left > 0) this.byAddress.set(address, left);
      else this.byAddress.delete(address);
      this.grantNext();
    };
  }

  /** A freed slot: to the first proven waiter, else the first unproven one under its share and not recently slow, else the first under its share. */
  private grantNext(): void {
    const now = Date.now();
    let next = -1;
    let fallback = -1;
    for (let i = 0; i < this.waiting.length; i++) {
      const w = this.waiting[i];
      if (!this.free(w.address, w.proven)) continue;
      if (w.proven) {
        next = i;
        break;
      }
      if (next === -1 && !this.recentlySlow(w.address, now)) next = i;
      if (fallback === -1) fallback = i;
    }
    if (next === -1) next = fallback;
    if (next !== -1) this.waiting.splice(next, 1)[0].grant();
  }

  /** A body from `address` was dropped for its rate: its waiting bodies come after other addresses' for a while. */
  markSlow(address: string, now = Date.now()): void {
    const network = slowNetworkOf(address);
    this.slowAt.delete(network);
    this.slowAt.set(network, now);
    if (this.slowAt.size > SLOW_ADDRESSES_KEPT) this.slowAt.delete(this.slowAt.keys().next().value as string);
  }

  private recentlySlow(address: string, now: number): boolean {
    const network = slowNetworkOf(address);
    const at = this.slowAt.get(network);
    if (at === undefined) return false;
    if (now - at < SLOW_ADDRESS_MEMORY_MS) return true;
    this.slowAt.delete(network);
    return false;
  }
}

/** One body's share of an UnverifiedBytes budget: reserve as bytes are held, release once (on every path). */
export interface BudgetLease {
  readonly held: number;
  /** False (nothing reserved) when the budget, overall or this address's, cannot take `bytes` more. */
  reserve(bytes: number): boolean;
  release(): void;
}

/**
 * Bytes held by bodies whose signature cannot be checked before the whole body is in, overall and per address. The
 * per-address share bounds what an address holds in several bodies at once: a body alone from its address may grow
 * past it (up to its endpoint's body limit and the overall budget), so the largest legitimate body always fits.
 */
export class UnverifiedBytes {
  used = 0;
  private readonly byAddress = new Map<string, number>();
  constructor(readonly limitBytes: number, readonly perAddressBytes: number) {}

  /** What webhook bodies hold together: at most half the budget, so forged webhooks cannot starve the drain. */
  webhookBytes = 0;

  /**
   * A lease for one body from `address`. `webhook`: the body counts against the webhooks' half too; the other
   * half is the drain's, whose batches the platform does not retry (webhooks it retries).
   */
  lease(address: string, opts: { webhook?: boolean } = {}): BudgetLease {
    let held = 0;
    let released = false;
    const budget = this;
    const webhook = opts.webhook === true;
    return {
      get held() {
        return held;
      },
      reserve(bytes: number): boolean {
        if (released) return false;
        const mine = budget.byAddress.get(address) ?? 0;
        const alone = mine === held; // nothing else of this address is held
        if (budget.used + bytes > budget.limitBytes || (mine + bytes > budget.perAddressBytes && !alone)) return false;
        if (webhook && budget.webhookBytes + bytes > Math.floor(budget.limitBytes / 2)) return false;
        if (webhook) budget.webhookBytes += bytes;
        budget.used += bytes;
        budget.byAddress.set(address, mine + bytes);
        held += bytes;
        return true;
      },
      release(): void {
        if (released) return;
        released = true;
        budget.used -= held;
        if (webhook) budget.webhookBytes -= held;
        const left = (budget.byAddress.get(address) ?? held) - held;
        if (left > 0) budget.byAddress.set(address, left);
        else budget.byAddress.delete(address);
        held = 0;
      },
    };
  }
}

interface Watched {
  req: IncomingMessage;
  res: ServerResponse;
  endpoint: PushEndpoint;
  /** The sender's address as the endpoint counted it (PushBudgets.clientAddress). */
  address: string;
  proven: boolean;
  startedAt: number;
  bytesAtStart: number;
  bytesAtCheck: number;
  nextCheckAt: number;
}

const SLOW_BODY = JSON.stringify({
  error: 'Request Timeout',
  message: 'the body arrived slower than PUSH_BODY_MIN_BYTES_PER_SECOND; the connection is closed',
});
const CONTENDED_BODY = JSON.stringify({
  error: 'Request Timeout',
  message: 'the body arrived slower than PUSH_CONTENDED_MIN_BYTES_PER_SECOND (or took longer than PUSH_CONTENDED_MAX_BODY_MS) while others waited for a read slot; the connection is closed',
});

/** An unproven body's grace under contention: no body is judged on its first second. */
export const CONTENDED_GRACE_MS = 1_000;

/** Under contention, what an unproven body must do to keep its slot (PUSH_CONTENDED_*). */
export interface ContendedRule {
  minBytesPerSecond: number;
  maxBodyMs: number;
  /** How many unproven bodies of the endpoint may be dropped now to make room (ReadSlots.contention). */
  contention(endpoint: PushEndpoint, now: number): number;
}

/**
 * Drops bodies that arrive slower than `minBytesPerSecond`, measured over consecutive windows of `windowMs` from
 * the moment the body starts being read (the first window is the grace period). Bytes are the socket's own count
 * (`bytesRead`), which needs nothing from the stream that reads the body. One timer for every watched body, running
 * only while there is one. A dropped body is answered 408 (when nothing was answered yet) and its connection
 * destroyed, as Node does at its request timeout: the endpoint's read then fails and frees its slot at once.
 * With `contended`: while unproven bodies want a slot, an unproven body past its first second whose average rate is
 * under the contended minimum, or that is older than the contended deadline, is dropped, the slowest first, as many
 * as want a slot: a steady sender keeping the plain minimum (1.4 KB/s of a declared 10 MB) would otherwise hold its
 * slot to the request deadline.
 */
export class SlowBodyGuard {
  private readonly watched = new Set<Watched>();
  private timer: NodeJS.Timeout | undefined;
  private readonly minBytesPerWindow: number;

  constructor(
    readonly minBytesPerSecond: number,
    readonly windowMs: number,
    private readonly onDrop: (endpoint: PushEndpoint, address: string, reason: 'slow' | 'contended') => void = () => undefined,
    private readonly contended?: ContendedRule,
  ) {
    this.minBytesPerWindow = Math.ceil((minBytesPerSecond * windowMs) / 1000);
  }

  /** Watches the body of `req` until it is complete, the connection closes, or the returned function is called. */
  watch(req: IncomingMessage, res: ServerResponse, endpoint: PushEndpoint, sender: { address?: string; proven?: boolean } = {}): () => void {
    if (req.complete || req.socket.destroyed) return () => undefined;
    const now = Date.now();
    const w: Watched = {
      req,
      res,
      endpoint,
      address: sender.address ?? req.socket.remoteAddress ?? 'unknown',
      proven: sender.proven ?? false,
      startedAt: now,
      bytesAtStart: req.socket.bytesRead,
      bytesAtCheck: req.socket.bytesRead,
      nextCheckAt: now + this.windowMs,
    };
    this.watched.add(w);
    const socket = req.socket;
    const stop = () => {
      req.off('end', stop);
      socket.off('close', stop);
      this.watched.delete(w);
      if (this.watched.size === 0 && this.timer) {
        clearInterval(this.timer);
        this.timer = undefined;
      }
    };
    // Listeners removed again: a kept-alive socket carries many requests.
    req.once('end', stop);
    socket.once('close', stop);
    this.timer ??= setInterval(() => this.check(), Math.max(50, Math.min(250, Math.floor(this.windowMs / 4)))).unref();
    return stop;
  }

  private drop(w: Watched, reason: 'slow' | 'contended'): void {
    this.watched.delete(w);
    const socket = w.req.socket;
    this.onDrop(w.endpoint, w.address, reason);
    const body = reason === 'slow' ? SLOW_BODY : CONTENDED_BODY;
    if (!w.res.headersSent && socket.writable) {
      socket.write(
        `HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
    }
    socket.destroy();
  }

  private check(): void {
    const now = Date.now();
    const candidates = new Map<PushEndpoint, Array<{ w: Watched; rate: number }>>();
    for (const w of [...this.watched]) {
      const socket = w.req.socket;
      if (w.req.complete || socket.destroyed) {
        this.watched.delete(w);
        continue;
      }
      const age = now - w.startedAt;
      if (this.contended && !w.proven && age >= CONTENDED_GRACE_MS) {
        const rate = ((socket.bytesRead - w.bytesAtStart) * 1000) / age;
        const { minBytesPerSecond, maxBodyMs } = this.contended;
        if ((minBytesPerSecond > 0 && rate < minBytesPerSecond) || (maxBodyMs > 0 && age > maxBodyMs)) {
          const list = candidates.get(w.endpoint) ?? [];
          list.push({ w, rate });
          candidates.set(w.endpoint, list);
        }
      }
      if (now < w.nextCheckAt) continue;
      const received = socket.bytesRead - w.bytesAtCheck;
      if (received >= this.minBytesPerWindow) {
        w.bytesAtCheck = socket.bytesRead;
        w.nextCheckAt = now + this.windowMs;
        continue;
      }
      this.drop(w, 'slow');
    }
    for (const [endpoint, list] of candidates) {
      const room = this.contended!.contention(endpoint, now);
      if (room === 0) continue;
      list.sort((a, b) => a.rate - b.rate);
      for (const { w } of list.slice(0, room)) if (this.watched.has(w)) this.drop(w, 'contended');
    }
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = undefined;
    }
  }
}

/** Every bound of the three push endpoints of one server: one instance per HTTP server (pushBudgets). */
export class PushBudgets {
  readonly slots: Record<PushEndpoint, ReadSlots>;
  readonly unverified: UnverifiedBytes;
  readonly guard: SlowBodyGuard;
  readonly proven: ProvenSenders;
  private readonly trustedProxies: AddressRanges | undefined;
  private readonly refusedTotal: Counter<'endpoint' | 'reason'>;

  constructor(limits: PushLimits, registry?: Registry) {
    this.refusedTotal = new Counter({
      name: 'tallyhouse_push_bodies_refused_total',
      help: 'Push bodies (drain, webhooks, faro) ended by a body bound: slow (408), contended (408: an unproven body too slow while others waited), busy (no read slot, 503), memory (unauthenticated byte budget, 503), address (a webhook from outside webhook_ip_ranges, 403), url (a drain request without LOG_DRAIN_URL_TOKEN, 404).',
      labelNames: ['endpoint', 'reason'],
      registers: registry ? [registry] : [],
    });
    // The unproven pool is at most the whole (a configuration that sets it higher means "no proven lane").
    const unproven = (max: number, limit: number) => Math.min(max, limit);
    this.slots = {
      drain: new ReadSlots(
        limits.LOG_DRAIN_MAX_BODIES_READING,
        limits.LOG_DRAIN_MAX_BODIES_PER_ADDRESS,
        { max: 'LOG_DRAIN_MAX_BODIES_READING', perAddress: 'LOG_DRAIN_MAX_BODIES_PER_ADDRESS', unproven: 'LOG_DRAIN_UNPROVEN_MAX_BODIES_READING' },
        true,
        unproven(limits.LOG_DRAIN_MAX_BODIES_READING, limits.LOG_DRAIN_UNPROVEN_MAX_BODIES_READING),
      ),
      webhooks: new ReadSlots(
        limits.WEBHOOK_MAX_BODIES_READING,
        limits.WEBHOOK_MAX_BODIES_PER_ADDRESS,
        { max: 'WEBHOOK_MAX_BODIES_READING', perAddress: 'WEBHOOK_MAX_BODIES_PER_ADDRESS', unproven: 'WEBHOOK_UNPROVEN_MAX_BODIES_READING' },
        false,
        unproven(limits.WEBHOOK_MAX_BODIES_READING, limits.WEBHOOK_UNPROVEN_MAX_BODIES_READING),
        limits.PUSH_SLOT_MAX_WAIT_MS,
      ),
      // Faro's key is public (it ships in the page): nothing a sender shows proves it, so no proven lane; the
      // contended rule still ends steady senders when others want a slot.
      faro: new ReadSlots(
        limits.FARO_MAX_BODIES_READING,
        limits.FARO_MAX_BODIES_PER_ADDRESS,
        { max: 'FARO_MAX_BODIES_READING', perAddress: 'FARO_MAX_BODIES_PER_ADDRESS' },
        false,
        limits.FARO_MAX_BODIES_READING,
        limits.PUSH_SLOT_MAX_WAIT_MS,
      ),
    };
    this.unverified = new UnverifiedBytes(limits.PUSH_UNVERIFIED_MAX_BYTES, limits.PUSH_UNVERIFIED_MAX_BYTES_PER_ADDRESS);
    this.proven = new ProvenSenders(limits.PUSH_PROVEN_TTL_SECONDS * 1000);
    this.trustedProxies = limits.TRUSTED_PROXIES.length > 0 ? new AddressRanges(limits.TRUSTED_PROXIES) : undefined;
    const slots = this.slots;
    this.guard = new SlowBodyGuard(
      limits.PUSH_BODY_MIN_BYTES_PER_SECOND,
      limits.PUSH_BODY_RATE_WINDOW_MS,
      (endpoint, address, reason) => {
        this.refusedTotal.inc({ endpoint, reason });
        slots[endpoint].markSlow(address);
      },
      {
        minBytesPerSecond: limits.PUSH_CONTENDED_MIN_BYTES_PER_SECOND,
        maxBodyMs: limits.PUSH_CONTENDED_MAX_BODY_MS,
        contention: (endpoint, now) => slots[endpoint].contention(now),
      },
    );
    if (registry) {
      const slots = this.slots;
      new Gauge({
        name: 'tallyhouse_push_bodies_reading',
        help: 'Push bodies holding a read slot, by endpoint (bounded by *_MAX_BODIES_READING).',
        labelNames: ['endpoint'],
        registers: [registry],
        collect() {
          for (const [endpoint, s] of Object.entries(slots)) this.set({ endpoint }, s.inUse);
        },
      });
      new Gauge({
        name: 'tallyhouse_push_bodies_waiting',
        help: 'Push bodies waiting, unread, for a read slot, by endpoint (only the drain queues).',
        labelNames: ['endpoint'],
        registers: [registry],
        collect() {
          for (const [endpoint, s] of Object.entries(slots)) this.set({ endpoint }, s.waiters);
        },
      });
      const unverified = this.unverified;
      new Gauge({
        name: 'tallyhouse_push_unverified_bytes',
        help: 'Bytes held by push bodies whose signature is not checked yet (bounded by PUSH_UNVERIFIED_MAX_BYTES).',
        registers: [registry],
        collect() {
          this.set(unverified.used);
        },
      });
    }
  }

  refused(endpoint: PushEndpoint, reason: 'busy' | 'memory' | 'address' | 'url'): void {
    this.refusedTotal.inc({ endpoint, reason });
  }

  /** The sender's address: the socket's peer, or what a trusted proxy (TRUSTED_PROXIES) says in X-Forwarded-For. */
  clientAddress(req: IncomingMessage): string {
    return clientAddress(req, this.trustedProxies);
  }
}

const budgetsByServer = new WeakMap<object, PushBudgets>();
let defaults: PushLimits | undefined;
/** The configuration's defaults, for a route registered without a configuration (tests). */
export function defaultPushLimits(): PushLimits {
  defaults ??= parseConfig({});
  return defaults;
}

/**
 * The one PushBudgets of this HTTP server (the unauthenticated byte budget is shared by the drain and the webhooks,
 * which are registered by separate extensions): made on first use from `limits`.
 */
export function pushBudgets(server: object, limits: PushLimits, registry?: Registry): PushBudgets {
  let budgets = budgetsByServer.get(server);
  if (!budgets) {
    budgets = new PushBudgets(limits, registry);
    budgetsByServer.set(server, budgets);
  }
  return budgets;
}
