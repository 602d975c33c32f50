// Log drain pushes: NDJSON batches of at most 5,000 lines, X-Svc-Signature = hex HMAC-SHA256 of the raw body
// bytes as sent (the gzip bytes when gzip is on), 10 s delivery timeout, no retry of a failed batch, and the
// drain disabled after 5 consecutive failures — so a slow or failing receiver loses data, as upstream.
import { createHmac } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { request } from 'undici';
import type { SimModel } from './model.js';
import type { App } from './world.js';
import type { LogLine } from './activity.js';
import { HOUR_MS, DAY_MS, isoUtcMs } from './time.js';
import { hash3, mix, unit } from './prng.js';

export const MAX_DRAIN_BATCH_LINES = 5000;
const DISABLE_AFTER_FAILURES = 5;

export type MalformedReason = 'not_json' | 'missing_level' | 'missing_message' | 'missing_timestamp' | 'bad_timestamp' | 'not_object';
const MALFORMED: MalformedReason[] = ['not_json', 'missing_level', 'missing_message', 'missing_timestamp', 'bad_timestamp', 'not_object'];

export interface DrainBatch {
  index: number;
  url: string;
  lines: number;
  bytes: number;
  gzip: boolean;
  signature: string;
  status: number | null;
  acknowledged: boolean;
  /** Not sent because the drain was disabled by earlier failures. */
  skipped: boolean;
  error: string | null;
  /** Lines of this batch that were deliberately malformed (0-based line index within the batch). */
  malformed: Array<{ line: number; reason: MalformedReason }>;
  /** The NDJSON text of the batch (before gzip). */
  body: string;
}

export interface DrainRecord {
  batches: DrainBatch[];
  linesSent: number;
  linesAcknowledged: number;
  malformed: Array<{ batch: number; line: number; reason: MalformedReason; text: string }>;
  disabled: boolean;
  consecutiveFailures: number;
}

export interface DrainPushOptions {
  /** Number of lines: the newest N log lines of the window (default: every line of the window). */
  lines?: number;
  /** Window of log lines (default: the last hour before the virtual now; with `lines`, as far back as needed). */
  from?: string | Date | number;
  to?: string | Date | number;
  /** Restrict to these apps (`owner/name` or name). */
  apps?: string[];
  batchSize?: number;
  malformedRate?: number;
  /** Batches in flight at once. */
  concurrency?: number;
  gzip?: boolean;
  url?: string;
  secret?: string;
  timeoutMs?: number;
  /** Share of lines with an extra key the notes do not name. */
  extraKeysRate?: number;
}

export interface DrainPushResult {
  batches: DrainBatch[];
  linesSent: number;
  linesAcknowledged: number;
  malformed: Array<{ batch: number; line: number; reason: MalformedReason; text: string }>;
  disabled: boolean;
}

/** Share of log records with keys the notes do not name (svc_region, trace_id), the same in every way out. */
export const DEFAULT_EXTRA_KEYS_RATE = 0.1;

/**
 * One log record as the platform hands it out by every way (drain line, history item, stream event): timestamp,
 * message, level and the svc_* labels flattened, plus, for a share of records, keys the notes do not name.
 */
export function logRecord(model: SimModel, l: LogLine, extraKeysRate = DEFAULT_EXTRA_KEYS_RATE): Record<string, unknown> {
  const obj: Record<string, unknown> = { timestamp: isoUtcMs(l.tsMs), message: l.message, level: l.level, ...l.labels };
  const h = hash3(model.world.seed, l.appIndex, Math.floor(l.tsMs / 1000) * 4096 + l.seq);
  if (unit(h) < extraKeysRate) {
    obj.svc_region = model.world.apps[l.appIndex].validRegions[0];
    obj.trace_id = (mix(h, 1) >>> 0).toString(16).padStart(8, '0') + (mix(h, 2) >>> 0).toString(16).padStart(8, '0');
  }
  return obj;
}

function toMs(t: string | Date | number): number {
  return typeof t === 'number' ? t : t instanceof Date ? t.getTime() : Date.parse(t);
}

export class Drain {
  private readonly record: DrainRecord = { batches: [], linesSent: 0, linesAcknowledged: 0, malformed: [], disabled: false, consecutiveFailures: 0 };
  private readonly inflight = new Set<Promise<unknown>>();
  private closed = false;
  private lineCounter = 0;

  constructor(
    private readonly model: SimModel,
    private readonly defaults: { url?: string; secret: string; malformedRate?: number; gzip?: boolean; timeoutMs?: number },
  ) {}

  get secret(): string {
    return this.defaults.secret;
  }

  get url(): string | undefined {
    return this.defaults.url;
  }

  /** Where clock-driven batches go from now on (a receiver that learns its port after the simulator started). */
  setUrl(url: string | undefined): void {
    this.defaults.url = url;
  }

  get disabled(): boolean {
    return this.record.disabled;
  }

  /** Re-enables a drain the failure rule disabled (as an owner would in the dashboard). */
  enable(): void {
    this.record.disabled = false;
    this.record.consecutiveFailures = 0;
  }

  sent(): DrainRecord {
    return structuredClone(this.record);
  }

  async idle(): Promise<void> {
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
  }

  close(): void {
    this.closed = true;
  }

  /** The drain form of a log line (see logRecord). */
  lineObject(l: LogLine, extraKeysRate: number): Record<string, unknown> {
    return logRecord(this.model, l, extraKeysRate);
  }

  /** Log lines of the caller's apps in [fromMs, toMs), oldest first. */
  collect(fromMs: number, toMs: number, apps?: string[]): LogLine[] {
    const world = this.model.world;
    let list: App[] = world.apps.filter((a) => a.ownedByCaller);
    if (apps) list = list.filter((a) => apps.includes(a.endpointId) || apps.includes(a.name));
    const out: LogLine[] = [];
    for (let h = Math.floor(fromMs / HOUR_MS); h * HOUR_MS < toMs; h++) {
      const merged: LogLine[] = [];
      for (const app of list) for (const l of this.model.activity.logs(app, h)) if (l.tsMs >= fromMs && l.tsMs < toMs) merged.push(l);
      merged.sort((a, b) => a.tsMs - b.tsMs || a.appIndex - b.appIndex || a.seq - b.seq);
      for (const l of merged) out.push(l);
    }
    return out;
  }

  async push(opts: DrainPushOptions = {}): Promise<DrainPushResult> {
    const url = opts.url ?? this.defaults.url;
    if (!url) throw new Error('drain: no url (set drainUrl or pass url)');
    const secret = opts.secret ?? this.defaults.secret;
    const nowMs = this.model.clock.nowMs();
    const toMsV = opts.to !== undefined ? Math.min(toMs(opts.to), nowMs) : nowMs;
    let lines: LogLine[];
    if (opts.from === undefined && opts.lines !== undefined) {
      // The newest N lines: walk back an hour at a time (at most 30 days) until there are enough.
      lines = [];
      for (let back = 1; lines.length < opts.lines && back <= 30 * 24; back++) {
        const hourStart = (Math.floor((toMsV - 1) / HOUR_MS) - back + 1) * HOUR_MS;
        lines = [...this.collect(hourStart, Math.min(hourStart + HOUR_MS, toMsV), opts.apps), ...lines];
      }
    } else {
      lines = this.collect(opts.from !== undefined ? toMs(opts.from) : toMsV - HOUR_MS, toMsV, opts.apps);
    }
    if (opts.lines !== undefined) lines = lines.slice(Math.max(0, lines.length - opts.lines));
    const batchSize = Math.max(1, Math.min(MAX_DRAIN_BATCH_LINES, opts.batchSize ?? 1000));
    const malformedRate = opts.malformedRate ?? this.defaults.malformedRate ?? 0;
    const gzip = opts.gzip ?? this.defaults.gzip ?? false;
    const extraKeysRate = opts.extraKeysRate ?? DEFAULT_EXTRA_KEYS_RATE;
    const timeoutMs = opts.timeoutMs ?? this.defaults.timeoutMs ?? 10_000;

    const batches: DrainBatch[] = [];
    const malformedAll: DrainPushResult['malformed'] = [];
    for (let start = 0; start < lines.length; start += batchSize) {
      const slice = lines.slice(start, start + batchSize);
      const index = this.record.batches.length + batches.length;
      const malformed: DrainBatch['malformed'] = [];
      const texts = slice.map((l, i) => {
        const obj = this.lineObject(l, extraKeysRate);
        const h = hash3(this.model.world.seed, 0xba0, this.lineCounter++);
        if (malformedRate > 0 && unit(h) < malformedRate) {
          const reason = MALFORMED[mix(h, 3) % MALFORMED.length];
          const text = corrupt(obj, reason);
          malformed.push({ line: i, reason });
          malformedAll.push({ batch: index, line: i, reason, text });
          return text;
        }
        return JSON.stringify(obj);
      });
      const body = texts.join('\n') + '\n';
      batches.push({
        index, url, lines: slice.length, bytes: 0, gzip, signature: '', status: null, acknowledged: false, skipped: false, error: null, malformed, body,
      });
    }
    this.record.batches.push(...batches);
    this.record.malformed.push(...malformedAll);

    const concurrency = Math.max(1, opts.concurrency ?? 1);
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < batches.length) {
        const b = batches[next++];
        await this.send(b, secret, timeoutMs);
      }
    };
    const p = Promise.all(Array.from({ length: Math.min(concurrency, batches.length) }, worker));
    this.inflight.add(p);
    try {
      await p;
    } finally {
      this.inflight.delete(p);
    }
    return {
      batches,
      linesSent: batches.filter((b) => !b.skipped).reduce((a, b) => a + b.lines, 0),
      linesAcknowledged: batches.filter((b) => b.acknowledged).reduce((a, b) => a + b.lines, 0),
      malformed: malformedAll,
      disabled: this.record.disabled,
    };
  }

  /** Automatic pushes when the virtual clock moves: the lines of (fromMs, toMs], at most a day's worth. */
  onClock(fromMs: number, toMs: number): void {
    if (!this.defaults.url || toMs <= fromMs || this.closed) return;
    const p = this.push({ from: Math.max(fromMs, toMs - DAY_MS), to: toMs }).catch(() => undefined);
    this.inflight.add(p);
    p.finally(() => this.inflight.delete(p)).catch(() => undefined);
  }

  private async send(b: DrainBatch, secret: string, timeoutMs: number): Promise<void> {
    if (this.record.disabled || this.closed) {
      b.skipped = true;
      return;
    }
    const raw = b.gzip ? gzipSync(b.body) : Buffer.from(b.body);
    b.bytes = raw.length;
    b.signature = createHmac('sha256', secret).update(raw).digest('hex');
    try {
      const res = await request(b.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/x-ndjson',
          'x-svc-signature': b.signature,
          ...(b.gzip ? { 'content-encoding': 'gzip' } : {}),
        },
        body: raw,
        headersTimeout: timeoutMs,
        bodyTimeout: timeoutMs,
        signal: AbortSignal.timeout(timeoutMs),
      });
      b.status = res.statusCode;
      await res.body.dump();
      b.acknowledged = res.statusCode >= 200 && res.statusCode < 300;
    } catch (err) {
      b.error = err instanceof Error ? err.name + ': ' + err.message : String(err);
    }
    this.record.linesSent += b.lines;
    if (b.acknowledged) {
      this.record.linesAcknowledged += b.lines;
      this.record.consecutiveFailures = 0;
    } else if (++this.record.consecutiveFailures >= DISABLE_AFTER_FAILURES) {
      this.record.disabled = true;
    }
  }
}

function corrupt(obj: Record<string, unknown>, reason: MalformedReason): string {
  switch (reason) {
    case 'not_json': {
      const s = JSON.stringify(obj);
      return s.slice(0, Math.max(1, Math.floor(s.length / 2)));
    }
    case 'missing_level': {
      const { level: _level, ...rest } = obj;
      return JSON.stringify(rest);
    }
    case 'missing_message': {
      const { message: _message, ...rest } = obj;
      return JSON.stringify(rest);
    }
    case 'missing_timestamp': {
      const { timestamp: _timestamp, ...rest } = obj;
      return JSON.stringify(rest);
    }
    case 'bad_timestamp':
      return JSON.stringify({ ...obj, timestamp: 'yesterday at noon' });
    case 'not_object':
      return JSON.stringify([obj.timestamp, obj.level, obj.message]);
  }
}
