import { LRUCache } from 'lru-cache';
import { createHash } from 'node:crypto';
import { createGunzip } from 'node:zlib';
import type { Readable } from 'node:stream';
import { request } from 'undici';
import { z } from 'zod';
import { ConfigError, type Config } from '../config.js';
import { ExpositionError, parseExposition, type Sample } from '../promtext/index.js';
import { safeUrl } from '../store/client.js';
import { toDateTime64 } from '../values.js';
import type { SampleRow, ScrapeRow, SeriesRow } from '../store/tables/metrics.js';
import { PlatformError, type PlatformClient } from '../platform/index.js';

/** Prometheus' own Accept header (2.x): OpenMetrics first, then the 0.0.4 text format; never protobuf. */
export const SCRAPE_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

const duration = z.union([
  z.number().positive(),
  z.string().regex(/^\d+(\.\d+)?(ms|s|m|h)$/, 'expected a duration like 500ms, 15s, 1m'),
]);

export function durationMs(v: number | string): number {
  if (typeof v === 'number') return v * 1000;
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(v)!;
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

const TargetSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'expected an http(s) URL' }),
  job: z.string().min(1).optional(),
  interval: duration.default('60s'),
  timeout: duration.default('10s'),
  headers: z.record(z.string(), z.string()).default({}),
  sample_limit: z.number().int().nonnegative().default(0), // 0 = no limit, as in Prometheus
  body_size_limit: z.number().int().positive().default(64 * 1024 * 1024), // bytes
});

export interface ScrapeTarget {
  url: string;
  job: string;
  instance: string;
  intervalMs: number;
  timeoutMs: number;
  headers: Record<string, string>;
  sampleLimit: number;
  bodySizeLimitBytes: number;
  /**
   * The platform's own exposition is read through the shared platform client (issue 50.5): its key, its byte
   * limit, PLATFORM_MAX_IN_FLIGHT, and a 429's wait (which then pauses every platform call, as any 429 does).
   */
  platform?: { client: PlatformClient; path: string };
}

function toTarget(t: z.output<typeof TargetSchema>): ScrapeTarget {
  const u = new URL(t.url);
  return {
    url: t.url,
    job: t.job ?? u.host,
    instance: u.host,
    intervalMs: durationMs(t.interval),
    timeoutMs: Math.min(durationMs(t.timeout), durationMs(t.interval)),
    headers: t.headers,
    sampleLimit: t.sample_limit,
    bodySizeLimitBytes: t.body_size_limit,
  };
}

/** One target given on the command line. */
export function commandLineTarget(url: string, job?: string, headers: Record<string, string> = {}): ScrapeTarget {
  return toTarget(TargetSchema.parse({ url, job, headers }));
}

/**
 * SCRAPE_TARGETS (a JSON list), or by default the platform's metrics exposition with the API key
 * (`platform` may point at the in-process simulator in demo mode).
 */
export function scrapeTargets(config: Config, platform: { baseUrl: string; apiKey?: string; client?: PlatformClient }): ScrapeTarget[] {
  if (config.SCRAPE_TARGETS) {
    let raw: unknown;
    try {
      raw = JSON.parse(config.SCRAPE_TARGETS);
    } catch {
      // The parser's message quotes the text around the error, which may be a header's secret.
      throw new ConfigError([{ variable: 'SCRAPE_TARGETS', expected: 'a JSON list of targets: the value is not valid JSON' }]);
    }
    const parsed = z.array(TargetSchema).safeParse(raw);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      // The path and the schema's message name what is wrong; the value itself is never echoed.
      const where = issue.path.length > 0 ? ` at [${issue.path.join('.')}]` : '';
      throw new ConfigError([{ variable: 'SCRAPE_TARGETS', expected: `a JSON list of targets; the entry${where} is invalid: ${describeTargetIssue(issue)}` }]);
    }
    return parsed.data.map(toTarget);
  }
  if (!platform.apiKey) return [];
  const target = toTarget(
    TargetSchema.parse({
      url: new URL(config.SVC_METRICS_PATH, platform.baseUrl.endsWith('/') ? platform.baseUrl : `${platform.baseUrl}/`).href.replace(
        /\/\/metrics$/,
        '/metrics',
      ),
      job: 'platform',
      // The client sends the key itself; a target read without one (no client given) carries it here.
      headers: platform.client ? {} : { authorization: `Key ${platform.apiKey}` },
    }),
  );
  if (platform.client) {
    const path = config.SVC_METRICS_PATH.startsWith('/') ? config.SVC_METRICS_PATH : `/${config.SVC_METRICS_PATH}`;
    target.platform = { client: platform.client, path };
  }
  return [target];
}

function describeTargetIssue(issue: z.core.$ZodIssue): string {
  // zod's default messages for unions and enums can quote the input; name the expectation only.
  switch (issue.code) {
    case 'invalid_type':
      return `expected ${issue.expected}`;
    case 'unrecognized_keys':
      return `unknown field(s) ${issue.keys.join(', ')}`;
    case 'invalid_format':
      // The schema's own messages (a URL, a duration like 15s) never quote the input.
      return issue.format === 'url' ? 'expected an http(s) URL' : issue.message;
    case 'too_small':
      return `expected at least ${String(issue.minimum)}`;
    default:
      return issue.code.replaceAll('_', ' ');
  }
}

export class ScrapeError extends Error {
  constructor(
    message: string,
    readonly line: number | null = null,
  ) {
    super(message);
    this.name = 'ScrapeError';
  }
}

export interface ScrapeResult {
  samples: Sample[];
  bytes: number;
  contentType: string | null;
  durationSeconds: number;
  scrapedAtMs: number;
}

/** One scrape: fetch (with timeout and body limit), decode, parse. Throws ScrapeError; never returns a partial set. */
export async function scrapeTarget(target: ScrapeTarget, signal?: AbortSignal): Promise<ScrapeResult> {
  const started = performance.now();
  const scrapedAtMs = Date.now();
  const timeout = AbortSignal.timeout(target.timeoutMs);
  const abort = signal ? AbortSignal.any([signal, timeout]) : timeout;
  let body: Buffer;
  let contentType: string | null;
  if (target.platform) {
    try {
      const answer = await target.platform.client.getText(target.platform.path, {
        accept: SCRAPE_ACCEPT,
        headers: { 'x-prometheus-scrape-timeout-seconds': String(target.timeoutMs / 1000) },
        ctx: { signal: abort },
        maxBytes: target.bodySizeLimitBytes,
      });
      body = Buffer.from(answer.body, 'utf8');
      contentType = answer.contentType;
    } catch (err) {
      if (timeout.aborted) throw new ScrapeError(`context deadline exceeded: no complete answer within ${target.timeoutMs} ms`);
      if (err instanceof PlatformError && err.status !== null) throw new ScrapeError(`server returned HTTP status ${err.status}: ${err.message}`);
      throw new ScrapeError((err as Error).message);
    }
    return parseScrape(body, contentType, target, started, scrapedAtMs);
  }
  try {
    const res = await request(target.url, {
      method: 'GET',
      headers: {
        accept: SCRAPE_ACCEPT,
        'accept-encoding': 'gzip',
        'user-agent': 'tallyhouse-scraper/0.1',
        'x-prometheus-scrape-timeout-seconds': String(target.timeoutMs / 1000),
        ...target.headers,
      },
      signal: abort,
      headersTimeout: target.timeoutMs,
      bodyTimeout: target.timeoutMs,
    });
    if (res.statusCode !== 200) {
      await res.body.dump().catch(() => undefined);
      throw new ScrapeError(`server returned HTTP status ${res.statusCode}`);
    }
    contentType = headerOf(res.headers['content-type']);
    const gzip = /gzip/i.test(headerOf(res.headers['content-encoding']) ?? '');
    body = await readLimited(gzip ? res.body.pipe(createGunzip()) : res.body, target.bodySizeLimitBytes);
  } catch (err) {
    if (err instanceof ScrapeError) throw err;
    if (timeout.aborted) throw new ScrapeError(`context deadline exceeded: no complete answer within ${target.timeoutMs} ms`);
    const code = (err as { code?: string }).code;
    throw new ScrapeError(`${code ? `${code}: ` : ''}${(err as Error).message}`);
  }
  return parseScrape(body, contentType, target, started, scrapedAtMs);
}

function parseScrape(body: Buffer, contentType: string | null, target: ScrapeTarget, started: number, scrapedAtMs: number): ScrapeResult {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new ScrapeError('the body is not valid UTF-8');
  }
  let samples: Sample[];
  try {
    samples = parseExposition(text, contentType);
  } catch (err) {
    if (err instanceof ExpositionError) throw new ScrapeError(err.message, err.line);
    throw err;
  }
  if (target.sampleLimit > 0 && samples.length > target.sampleLimit) {
    throw new ScrapeError(`sample limit exceeded: ${samples.length} samples, limit ${target.sampleLimit}`);
  }
  return { samples, bytes: body.length, contentType, durationSeconds: (performance.now() - started) / 1000, scrapedAtMs };
}

function headerOf(v: string | string[] | undefined): string | null {
  return v === undefined ? null : Array.isArray(v) ? v[0] : v;
}

async function readLimited(stream: Readable, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) {
      stream.destroy();
      throw new ScrapeError(`body size limit exceeded: more than ${limit} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}

/**
 * The labels a sample is stored with: the scraped ones, then `job` and `instance`. A scraped label of the
 * same name is kept as `exported_<name>` (Prometheus with honor_labels: false). Empty values are dropped, as
 * Prometheus drops them at storage.
 */
export function targetLabels(sample: Sample, target: ScrapeTarget): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(sample.labels)) if (v !== '') out[k] = v;
  for (const [name, value] of [
    ['job', target.job],
    ['instance', target.instance],
  ] as const) {
    if (name in out) {
      let exported = `exported_${name}`;
      while (exported in out) exported = `exported_${exported}`;
      out[exported] = out[name];
    }
    out[name] = value;
  }
  return out;
}

/** A stable 64-bit fingerprint (decimal text) of a metric name and its sorted label pairs. */
export function fingerprint(metric: string, labels: Record<string, string>): string {
  const h = createHash('sha256').update(metric);
  for (const k of Object.keys(labels).sort()) h.update('\u0000').update(k).update('\u0000').update(labels[k]);
  return h.digest().readBigUInt64BE(0).toString();
}

/** Float64 for JSONEachRow: non-finite values as the quoted words ClickHouse reads. */
export function floatValue(v: number): SampleRow['value'] {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return v;
}

export type { SampleRow, ScrapeRow, SeriesRow };

export function scrapeRow(target: ScrapeTarget, at: number, up: 0 | 1, r: Partial<ScrapeResult>, error = ''): ScrapeRow {
  return {
    scraped_at: toDateTime64(at),
    job: target.job,
    instance: target.instance,
    target: safeUrl(target.url),
    up,
    duration_seconds: r.durationSeconds ?? 0,
    samples: up ? (r.samples?.length ?? 0) : 0,
    bytes: r.bytes ?? 0,
    error: error.slice(0, 2000),
  };
}

/**
 * Remembers the series already stored, so each scrape writes only new or changed series (and refreshes hourly).
 * Bounded (SCRAPE_SERIES_CACHE_MAX per target, least recently seen first out): a target whose label values change
 * every scrape made the old Map grow without end (100,000 entries after 200 scrapes of 500 changing series). A
 * series forgotten and seen again is written again, as a changed one is: metric_series keeps its latest row.
 */
export class SeriesCache {
  private readonly seen: LRUCache<string, { fp: string; meta: string; writtenAt: number }>;

  constructor(maxSeries: number) {
    this.seen = new LRUCache({ max: maxSeries });
  }

  /** Series remembered now. */
  get size(): number {
    return this.seen.size;
  }

  rows(target: ScrapeTarget, result: ScrapeResult): { series: SeriesRow[]; samples: SampleRow[] } {
    const series: SeriesRow[] = [];
    const samples: SampleRow[] = new Array(result.samples.length);
    const at = toDateTime64(result.scrapedAtMs);
    for (let i = 0; i < result.samples.length; i++) {
      const s = result.samples[i];
      const labels = targetLabels(s, target);
      const key = `${s.name}\u0001${JSON.stringify(labels)}`;
      const meta = `${s.family}\u0001${s.type}\u0001${s.help ?? ''}\u0001${s.unit ?? ''}`;
      let entry = this.seen.get(key);
      if (!entry || entry.meta !== meta || result.scrapedAtMs - entry.writtenAt > 3_600_000) {
        const fp = entry?.fp ?? fingerprint(s.name, labels);
        entry = { fp, meta, writtenAt: result.scrapedAtMs };
        this.seen.set(key, entry);
        series.push({
          metric: s.name,
          fingerprint: fp,
          labels,
          family: s.family,
          type: s.type,
          help: s.help ?? '',
          unit: s.unit ?? '',
          last_seen: at,
        });
      }
      samples[i] = {
        metric: s.name,
        fingerprint: entry.fp,
        ts: s.timestampMs === null ? at : toDateTime64(s.timestampMs),
        value: floatValue(s.value),
      };
    }
    return { series, samples };
  }
}
