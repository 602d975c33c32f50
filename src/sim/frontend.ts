// A simulated web front end that calls the platform: as the clock moves, every finished request of the caller's
// apps and model calls is one user's action in one of a few browser sessions, reported as Grafana Faro would
// (an event naming the request id, an exception for a failed one) to a Faro receiver. Used by demo mode, so the
// sessions views have data; deterministic from the seed like everything else.
import type { SimModel } from './model.js';
import { HOUR_MS, isoUtcMs } from './time.js';
import { hashString, unit } from './prng.js';

/** Sessions live for an hour; a request belongs to one of this many sessions of its hour. */
const SESSIONS_PER_HOUR = 6;
/** Share of requests a front end made (the rest came from back ends). */
const FRONTEND_SHARE = 0.3;
/**
 * Payloads in flight at once. The simulated browsers all send from one address, and a Faro receiver bounds read
 * slots per address (PUSH_FARO_SLOTS_PER_ADDRESS): a clock step of an hour sent all at once was refused (503) past
 * that; real browsers each send their own payloads one after another.
 */
const MAX_IN_FLIGHT = 2;

export interface FrontEndTarget {
  url: string;
  key: string;
  /** Keep every payload sent and its answer (sent()): for a harness that checks what was accepted was stored. */
  record?: boolean;
}

export class FrontEnd {
  private target: FrontEndTarget | undefined;
  private readonly inflight = new Set<Promise<void>>();
  private readonly queue: Array<{ target: FrontEndTarget; payload: Record<string, unknown>; sent?: { payload: Record<string, unknown>; status: number | null } }> = [];
  /** What was sent and how it was answered (kept only when a target asked for it: the soak's ground truth). */
  private record: Array<{ payload: Record<string, unknown>; status: number | null }> | undefined;
  private closed = false;

  constructor(private readonly model: SimModel) {}

  /** Where payloads go (a Faro receiver's collect URL) and its key; undefined stops the front end. */
  setTarget(target: FrontEndTarget | undefined): void {
    this.target = target;
    if (target?.record) this.record ??= [];
  }

  /** Every payload sent since a target asked to record, with its answer's status (null: no answer). */
  sent(): Array<{ payload: Record<string, unknown>; status: number | null }> {
    return [...(this.record ?? [])];
  }

  /** The Faro payloads of the requests that ended in [fromMs, toMs), one per session. */
  payloads(fromMs: number, toMs: number): Array<Record<string, unknown>> {
    const world = this.model.world;
    const endpoints = world.endpoints.filter((e) => e.isModel || world.apps[e.appIndex]?.ownedByCaller);
    const sessions = new Map<string, { meta: Record<string, unknown>; events: unknown[]; exceptions: unknown[] }>();
    for (let h = Math.floor(fromMs / HOUR_MS); h * HOUR_MS < toMs; h++) {
      for (const ep of endpoints) {
        for (const r of this.model.requests.hour(ep, h, false)) {
          if (r.endedMs < fromMs || r.endedMs >= toMs) continue;
          const u = unit(hashString(r.id, world.seed ^ 0xfa20));
          if (u >= FRONTEND_SHARE) continue;
          const n = Math.floor((u / FRONTEND_SHARE) * SESSIONS_PER_HOUR);
          const id = `demo-${h.toString(36)}-${n}`;
          let s = sessions.get(id);
          if (!s) {
            s = {
              meta: {
                sdk: { name: 'faro-web-sdk', version: '2.12.1' },
                app: { name: 'demo-web', version: '1.0.0', release: 'demo', environment: 'demo' },
                session: { id, attributes: { plan: n % 2 === 0 ? 'pro' : 'free' } },
                user: { id: `user-${n}` },
                page: { url: `https://demo.example/${ep.isModel ? 'studio' : 'app'}` },
              },
              events: [],
              exceptions: [],
            };
            sessions.set(id, s);
          }
          s.events.push({ name: 'queue_submit', domain: 'platform', attributes: { request_id: r.id, endpoint_id: ep.id }, timestamp: isoUtcMs(r.startedMs) });
          if (r.statusClass === 'error') {
            s.exceptions.push({ type: 'PlatformError', value: `request ${r.id} failed with ${r.statusCode}`, context: { request_id: r.id }, timestamp: isoUtcMs(r.endedMs) });
          }
        }
      }
    }
    return [...sessions.values()].map((s) => ({ meta: s.meta, events: s.events, ...(s.exceptions.length > 0 ? { exceptions: s.exceptions } : {}) }));
  }

  onClock(fromMs: number, toMs: number): void {
    const target = this.target;
    if (!target || this.closed) return;
    for (const payload of this.payloads(fromMs, toMs)) {
      const sent = this.record ? { payload, status: null as number | null } : undefined;
      if (sent) this.record!.push(sent);
      this.queue.push({ target, payload, sent });
    }
    while (this.inflight.size < MAX_IN_FLIGHT && this.queue.length > 0) this.sendNext();
  }

  private sendNext(): void {
    const next = this.queue.shift();
    if (!next) return;
    const { target, payload, sent } = next;
    const p = fetch(target.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': target.key },
      body: JSON.stringify(payload),
      signal: AbortSignal.timeout(10_000),
    })
      .then((res) => {
        if (sent) sent.status = res.status;
        return res.body?.cancel();
      })
      .catch(() => undefined) // a demo front end: an unanswered payload is not retried
      .finally(() => {
        this.inflight.delete(p);
        if (!this.closed) this.sendNext();
      });
    this.inflight.add(p);
  }

  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  close(): void {
    this.closed = true;
    this.queue.length = 0;
  }
}
