// Request records, generated lazily per (endpoint, hour) from a PRNG keyed on (seed, endpoint, hour, index):
// a world of ten million requests costs no memory until a window is asked for, and only a bounded LRU of
// recent hours after. Every request of an app endpoint runs inside a `running` segment of one of the app's
// runners (runners.ts).
import type { Endpoint, World } from './world.js';
import type { RunnerModel } from './runners.js';
import { MAX_DURATION_MS, requestCount } from './runners.js';
import { HOUR_MS } from './time.js';
import { Rng, hash4, hex, mix, unit, uuidFrom } from './prng.js';
import { formatMilli } from './money.js';
import type { LRUCache } from 'lru-cache';
import type { SimCaches } from './caches.js';
import { errorRateAt, latencyFactor } from './scenario.js';

export type StatusClass = 'success' | 'user_error' | 'error';

export interface Req {
  id: string;
  gatewayId: string;
  endpoint: Endpoint;
  hour: number;
  index: number;
  startedMs: number;
  sentMs: number;
  endedMs: number;
  statusCode: number;
  statusClass: StatusClass;
  durationMs: number;
  prepareMs: number;
  /** Time the request waited for a booting runner, or -1 when it did not hit a cold runner. */
  coldBootMs: number;
  runnerId: string | null;
  /** billable_units × 1000 (at most 3 decimals), as recorded once billed. */
  billableMilli: number;
  billedAtMs: number;
  /** Request-level error type (internal; not served in the list), or null. */
  errorType: string | null;
  /** The served JSON object without billing and without the closing brace (built once, served many times). */
  head: string;
}

/** Request-level error types with their status codes (interface, "Request (infrastructure-level) errors"). */
const SERVER_ERRORS: Array<[string, number, number]> = [
  // [error_type, status, weight]
  ['runner_scheduling_failure', 503, 14],
  ['startup_timeout', 504, 6],
  ['request_timeout', 504, 12],
  ['runner_connection_timeout', 503, 6],
  ['runner_disconnected', 503, 8],
  ['runner_connection_refused', 503, 3],
  ['runner_connection_error', 503, 5],
  ['runner_incomplete_response', 502, 8],
  ['runner_server_error', 500, 28],
  ['internal_error', 500, 10],
];
const SERVER_ERROR_WEIGHT = SERVER_ERRORS.reduce((a, e) => a + e[2], 0);
/** [status, error_type] of caller-side failures: 4xx, counted as user errors. */
const USER_ERRORS: Array<[number, string | null, number]> = [
  [422, null, 60],
  [400, 'bad_request', 20],
  [499, 'client_disconnected', 10],
  [499, 'client_cancelled', 10],
];

/** Maps a request-level error type onto the analytics error-type counters. */
export function errorCategory(errorType: string | null): 'startup' | 'connection' | 'timeout' | 'runtime' | null {
  switch (errorType) {
    case 'startup_timeout': case 'runner_scheduling_failure': return 'startup';
    case 'runner_connection_timeout': case 'runner_disconnected': case 'runner_connection_refused':
    case 'runner_connection_error': case 'client_disconnected': return 'connection';
    case 'request_timeout': return 'timeout';
    case 'runner_server_error': case 'runner_incomplete_response': case 'internal_error': return 'runtime';
    default: return null;
  }
}

export function statusClassOf(code: number): StatusClass {
  return code >= 500 ? 'error' : code >= 400 ? 'user_error' : 'success';
}

/** Request ids encode (endpoint, hour, index) so a lookup by id needs no index; the rest is random. */
function requestId(seed: number, ep: number, hour: number, i: number): string {
  const a = hash4(seed, ep, hour, i);
  const b = mix(a, 0x1d);
  const c = mix(a, 0x2d);
  return `${hex(a, 8)}-${hex(ep, 4)}-4${hex(b & 0xfff, 3)}-${'89ab'[c >>> 30]}${hex((c >>> 16) & 0xfff, 3)}-${hex(hour, 6)}${hex(i, 6)}`;
}

export function decodeRequestId(id: string): { endpointIndex: number; hour: number; index: number } | null {
  const m = /^[0-9a-f]{8}-([0-9a-f]{4})-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-([0-9a-f]{6})([0-9a-f]{6})$/.exec(id);
  if (!m) return null;
  return { endpointIndex: parseInt(m[1], 16), hour: parseInt(m[2], 16), index: parseInt(m[3], 16) };
}

// toISOString is a visible share of generation time; timestamps of one hour share their "YYYY-MM-DDTHH:" prefix.
let isoHour = -1;
let isoPrefix = '';
function iso(ms: number): string {
  const hour = Math.floor(ms / 3_600_000);
  if (hour !== isoHour) {
    isoHour = hour;
    isoPrefix = new Date(hour * 3_600_000).toISOString().slice(0, 14);
  }
  const rest = ms - hour * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  const seconds = Math.floor((rest % 60_000) / 1000);
  const millis = rest % 1000;
  return isoPrefix + (minutes < 10 ? '0' : '') + minutes + ':' + (seconds < 10 ? '0' : '') + seconds + '.' + (millis < 10 ? '00' : millis < 100 ? '0' : '') + millis + 'Z';
}

export function compareByEnded(a: Req, b: Req): number {
  return a.endedMs - b.endedMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

/** Per-(endpoint, hour) cache keys: hours since 1970 stay below this. */
const HOUR_KEY_STRIDE = 16_777_216;

export class RequestModel {
  private readonly hourCache: LRUCache<number, Req[]>;
  private readonly mergedCache: LRUCache<string, Req[]>;

  constructor(private readonly world: World, private readonly runners: RunnerModel, caches: SimCaches) {
    this.hourCache = caches.create('requestHours', (list) => list.length);
    this.mergedCache = caches.create('mergedHours', (list) => list.length);
  }

  /**
   * All requests of one endpoint that end in `hour`, sorted by (ended_at, request_id). `keep: false` (a scan
   * over a long range) reads the cache but does not fill it, so one truth figure does not evict the pages
   * being served.
   */
  hour(ep: Endpoint, hour: number, keep = true): Req[] {
    const key = ep.index * HOUR_KEY_STRIDE + hour;
    let list = this.hourCache.get(key);
    if (!list) {
      list = this.generate(ep, hour);
      if (keep) this.hourCache.set(key, list);
    }
    return list;
  }

  /** Requests of several endpoints ending in `hour`, merged in (ended_at, request_id) order. */
  hourMerged(eps: Endpoint[], setKey: string, hour: number): Req[] {
    if (eps.length === 1) return this.hour(eps[0], hour);
    const key = `${setKey}|${hour}`;
    let list = this.mergedCache.get(key);
    if (!list) {
      list = [];
      // The merged list is what is kept; the endpoints' own hours are only read to build it.
      for (const ep of eps) for (const r of this.hour(ep, hour, false)) list.push(r);
      list.sort(compareByEnded);
      this.mergedCache.set(key, list);
    }
    return list;
  }

  byId(id: string): Req | null {
    const d = decodeRequestId(id);
    if (!d) return null;
    const ep = this.world.endpoints[d.endpointIndex];
    if (!ep) return null;
    return this.hour(ep, d.hour).find((r) => r.id === id) ?? null;
  }

  private generate(ep: Endpoint, hour: number): Req[] {
    const world = this.world;
    const seed = world.seed;
    const out: Req[] = [];
    if (hour < world.historyStartHour) return out;
    const k = requestCount(world, ep, hour);
    const app = ep.isModel ? null : world.apps[ep.appIndex];
    const appRunners = app ? this.runners.of(app) : null;
    const segs = appRunners && k > 0 ? appRunners.busySegments(hour) : [];
    const hStart = hour * HOUR_MS;
    const errorRate = errorRateAt(world, ep, hour, app ? app.errorRate : 0.03);
    const slower = latencyFactor(world, ep, hour);
    const units = app ? app.billing === 'units' : true;
    const epJson = '"' + ep.id + '"';

    const build = (i: number, r: Rng, f: {
      startedMs: number; sentMs: number; durationMs: number; statusCode: number; errorType: string | null;
      runnerId: string | null; coldBootMs: number;
    }): Req => {
      const id = requestId(seed, ep.index, hour, i);
      const gatewayId = r.chance(0.04) ? uuidFrom(r.u32(), r.u32(), r.u32(), r.u32()) : id;
      const endedMs = f.sentMs + f.durationMs;
      const statusClass = statusClassOf(f.statusCode);
      const billableMilli = statusClass !== 'success' ? 0 : units ? r.range(1, 4) * 1000 : f.durationMs;
      let billedAtMs = endedMs + r.range(60, 1800) * 1000 + r.int(1000);
      // Drawn from its own hash, not from r: a world without late billing generates the very same requests.
      const late = world.lateBilling;
      if (late && unit(hash4(seed ^ 0x1a7eb111, ep.index, hour, i)) < late.rate) billedAtMs += late.delayMs;
      const head =
        '{"request_id":"' + id + '","gateway_request_id":"' + gatewayId + '","endpoint_id":' + epJson +
        ',"started_at":"' + iso(f.startedMs) + '","sent_at":"' + iso(f.sentMs) + '","ended_at":"' + iso(endedMs) +
        '","status_code":' + f.statusCode + ',"duration":' + formatMilli(f.durationMs) +
        ',"runner_id":' + (f.runnerId ? '"' + f.runnerId + '"' : 'null');
      return {
        id, gatewayId, endpoint: ep, hour, index: i, startedMs: f.startedMs, sentMs: f.sentMs, endedMs,
        statusCode: f.statusCode, statusClass, durationMs: f.durationMs, prepareMs: f.sentMs - f.startedMs,
        coldBootMs: f.coldBootMs, runnerId: f.runnerId, billableMilli, billedAtMs, errorType: f.errorType, head,
      };
    };

    for (let i = 0; i < k; i++) {
      const r = new Rng(hash4(seed, ep.index, hour, i) ^ 0x5bd1e995);
      let statusCode = 200;
      let errorType: string | null = null;
      const u = r.next();
      if (u < errorRate * 0.35) {
        let x = r.next() * 100;
        for (const [code, type, w] of USER_ERRORS) {
          x -= w;
          if (x < 0) { statusCode = code; errorType = type; break; }
        }
      } else if (u < errorRate) {
        let x = r.next() * SERVER_ERROR_WEIGHT;
        for (const [type, code, w] of SERVER_ERRORS) {
          x -= w;
          if (x < 0) { statusCode = code; errorType = type; break; }
        }
      }
      let durationMs = Math.round(ep.medianDurationMs * slower * Math.exp(0.6 * r.normal()));
      durationMs = Math.min(MAX_DURATION_MS, Math.max(5, durationMs));
      if (errorType === 'request_timeout') durationMs = Math.min(MAX_DURATION_MS, (app?.requestTimeoutSeconds ?? 60) * 1000);
      const noRunner = ep.isModel || errorType === 'runner_scheduling_failure' || errorType === 'startup_timeout';
      if (errorType === 'runner_scheduling_failure') durationMs = r.range(5, 2000);
      if (errorType === 'startup_timeout') durationMs = Math.min(MAX_DURATION_MS, (app?.startupTimeoutSeconds ?? 300) * 1000);
      const prepareMs = r.chance(0.9) ? r.range(3, 400) : r.range(400, 8000);
      let sentMs: number;
      let runnerId: string | null = null;
      if (noRunner || segs.length === 0) {
        sentMs = hStart + prepareMs + r.int(HOUR_MS - prepareMs - durationMs - 1);
      } else {
        const seg = segs[r.int(segs.length)];
        sentMs = seg.startMs + r.int(seg.endMs - seg.startMs - durationMs - 1);
        runnerId = seg.runner.id;
      }
      out.push(build(i, r, { startedMs: sentMs - prepareMs, sentMs, durationMs, statusCode, errorType, runnerId, coldBootMs: -1 }));
    }

    // Requests that arrived while a new runner was booting and were served by it once ready.
    if (appRunners) {
      let i = k;
      for (const runner of appRunners.runnersStartingIn(hour)) {
        if (runner.coldBootEndpoint !== ep.index || runner.readyMs === null) continue;
        for (let c = 0; c < runner.coldBoots; c++, i++) {
          const r = new Rng(hash4(seed, ep.index, hour, i) ^ 0x3c6ef372);
          const startedMs = runner.runStartMs + r.int(1500);
          const sentMs = runner.readyMs + r.range(20, 400) + c * r.range(0, 3000);
          let durationMs = Math.round(ep.medianDurationMs * Math.exp(0.6 * r.normal()));
          durationMs = Math.min(MAX_DURATION_MS, Math.max(5, durationMs));
          out.push(build(i, r, { startedMs, sentMs, durationMs, statusCode: 200, errorType: null, runnerId: runner.id, coldBootMs: sentMs - startedMs }));
        }
      }
    }
    out.sort(compareByEnded);
    return out;
  }
}
