// Parameter parsing and error replies shared by the simulator's routes. A 400 always names the parameter and
// what it expects, as the platform does.
import { isValidZone, parseTimeParam, TIMEFRAMES, type Timeframe, DAY_MS } from './time.js';

export type ErrorType = 'authorization_error' | 'validation_error' | 'not_found' | 'rate_limited' | 'server_error' | 'not_implemented';

export class ApiError extends Error {
  constructor(readonly status: number, readonly type: ErrorType, message: string) {
    super(message);
  }
}

export const bad = (message: string): ApiError => new ApiError(400, 'validation_error', message);

/** Most values a multi-value parameter (app, endpoint_id, app_id) may carry in one call. */
export const MAX_MULTI_VALUES = 50;

export class Params {
  private readonly map = new Map<string, string[]>();

  constructor(search: string) {
    if (!search) return;
    for (const [k, v] of new URLSearchParams(search)) {
      const list = this.map.get(k);
      if (list) list.push(v);
      else this.map.set(k, [v]);
    }
  }

  has(name: string): boolean {
    return this.map.has(name);
  }

  one(name: string): string | undefined {
    const v = this.map.get(name);
    return v ? v[0] : undefined;
  }

  /** Comma-separated or repeated values; more than `max` is a 400. */
  list(name: string, max = MAX_MULTI_VALUES): string[] | undefined {
    const raw = this.map.get(name);
    if (!raw) return undefined;
    const out: string[] = [];
    for (const v of raw) for (const part of v.split(',')) if (part.trim()) out.push(part.trim());
    if (out.length > max) throw bad(`${name}: at most ${max} values per call (got ${out.length}); split them over several calls`);
    return out;
  }

  int(name: string, def: number, min: number, max: number): number {
    const v = this.one(name);
    if (v === undefined || v === '') return def;
    if (!/^-?\d+$/.test(v)) throw bad(`${name}: expected an integer from ${min} to ${max}, got '${v}'`);
    const n = Number(v);
    if (n < min || n > max) throw bad(`${name}: expected an integer from ${min} to ${max}, got ${n}`);
    return n;
  }

  bool(name: string, def: boolean): boolean {
    const v = this.one(name);
    if (v === undefined || v === '') return def;
    if (v === 'true' || v === '1') return true;
    if (v === 'false' || v === '0') return false;
    throw bad(`${name}: expected true or false, got '${v}'`);
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], def: T): T {
    const v = this.one(name);
    if (v === undefined || v === '') return def;
    if (!(allowed as readonly string[]).includes(v)) throw bad(`${name}: expected one of ${allowed.join(', ')}, got '${v}'`);
    return v as T;
  }

  timezone(): string {
    const tz = this.one('timezone') ?? 'UTC';
    if (!isValidZone(tz)) throw bad(`timezone: expected an IANA time zone name such as America/New_York, got '${tz}'`);
    return tz;
  }

  timeframe(): Timeframe | undefined {
    const v = this.one('timeframe');
    if (v === undefined || v === '') return undefined;
    if (!(TIMEFRAMES as readonly string[]).includes(v)) throw bad(`timeframe: expected one of ${TIMEFRAMES.join(', ')}, got '${v}'`);
    return v as Timeframe;
  }

  /** start/end: `YYYY-MM-DD` (local midnight in tz) or ISO 8601; end exclusive; default the last 24 hours. */
  window(tz: string, nowMs: number): { startMs: number; endMs: number } {
    const s = this.one('start');
    const e = this.one('end');
    let endMs = nowMs;
    if (e !== undefined) {
      const v = parseTimeParam(e, tz);
      if (v === null) throw bad(`end: expected a date YYYY-MM-DD or an ISO 8601 datetime, got '${e}'`);
      endMs = v;
    }
    let startMs = endMs - DAY_MS;
    if (s !== undefined) {
      const v = parseTimeParam(s, tz);
      if (v === null) throw bad(`start: expected a date YYYY-MM-DD or an ISO 8601 datetime, got '${s}'`);
      startMs = v;
    }
    if (startMs >= endMs) throw bad('start: must be before end (end is exclusive)');
    return { startMs, endMs };
  }

  /** Canonical text of the query without the named keys: used for cursor fingerprints and fault keys. */
  canonical(exclude: readonly string[] = []): string {
    return [...this.map.keys()]
      .filter((k) => !exclude.includes(k))
      .sort()
      .map((k) => `${encodeURIComponent(k)}=${this.map.get(k)!.map(encodeURIComponent).join(',')}`)
      .join('&');
  }

  toRecord(): Record<string, string | string[]> {
    const out: Record<string, string | string[]> = {};
    for (const [k, v] of this.map) out[k] = v.length === 1 ? v[0] : [...v];
    return out;
  }
}
