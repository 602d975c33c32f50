// `tallyhouse logs tail`: follows the platform's live log stream (POST /v1/serverless/logs/stream, Server-Sent
// Events, one JSON record per `data:` line; platform notes, "Logs and log drains"). When the stream drops it
// reconnects with backoff from the last record's timestamp and skips the records it already printed there, so a
// drop loses nothing and repeats nothing. Pretty lines on a terminal, NDJSON otherwise; --store also writes the
// records into `logs` (origin `tail`; a record already stored by the drain or history is skipped).
import { parseArgs } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import { getConfig, isDemoMode } from '../config.js';
import { commandHost, commandIO, type CommandIO } from '../http/command-host.js';
import { onStdoutClosed } from '../stdio.js';
import { createCommandLogger } from '../log.js';
import { withCommandRuntime } from '../service.js';
import { openDemoPlatform } from './demo-platform.js';
import { claimStorePlatform, demoNotice } from '../jobs/store-platform.js';
import { openPlatformSource } from '../jobs/platform-source.js';
import { AppsResponse, LogRecord, PlatformError, platformPaths, type PlatformClient } from '../platform/index.js';
import { LOG_LEVELS } from '../store/tables/logs.js';
import { closest, describeArgsError, didYouMean } from '../suggest.js';
import type { Runtime } from '../runtime.js';
import { REJECTS_TABLE } from '../store/writer.js';
import { collectorRejects } from '../collectors/common.js';
import { drainLineOf, LogRowBatch, recordKey } from '../collectors/logs.js';
import { retryDelayMs } from '../retry.js';

const USAGE = 'tallyhouse logs tail [--app OWNER/APP] [--level LEVEL] [--search TEXT] [--request-id ID] [--store] [--json]\n';

export interface TailFilters {
  app?: string;
  level?: string;
  search?: string;
  requestId?: string;
}

export type StreamState =
  | { kind: 'connected'; resumedFrom: string | null }
  | { kind: 'dropped'; reason: string; retryInMs: number; attempt: number };

export interface FollowOptions {
  filters: TailFilters;
  signal: AbortSignal;
  onRecord(item: LogRecord): void | Promise<void>;
  onState?(state: StreamState): void;
  /** First reconnect wait, doubled per failed attempt up to maxBackoffMs (default 500 and 30000). */
  backoffBaseMs?: number;
  maxBackoffMs?: number;
}

/** Follows the stream until `signal` aborts; every record once, in the order the platform sent them. */
export async function followLogStream(platform: PlatformClient, o: FollowOptions): Promise<void> {
  const base = o.backoffBaseMs ?? 500;
  const max = o.maxBackoffMs ?? 30_000;
  let resumeFrom: string | null = null; // the newest record's timestamp
  let resumeMs = -Infinity;
  let seenAtResume = new Set<string>(); // records of that millisecond already handed out
  let attempt = 0;
  const query = {
    app_id: o.filters.app,
    level: o.filters.level,
    search: o.filters.search,
    request_id: o.filters.requestId,
  };
  // An event that never ends (no newline, ever) would grow the parser's buffer without bound: past the limit of one
  // answer (PLATFORM_MAX_RESPONSE_BYTES) without a complete event, the stream is dropped and opened again.
  const eventLimitBytes = platform.responseLimitBytes(platformPaths.logsStream);
  while (!o.signal.aborted) {
    let reason = 'the stream ended';
    let retryAfterMs: number | null = null;
    try {
      const body = await platform.openEventStream(platformPaths.logsStream, { query: { ...query, start: resumeFrom ?? undefined }, signal: o.signal });
      o.onState?.({ kind: 'connected', resumedFrom: resumeFrom });
      const pending: LogRecord[] = [];
      let ended: string | null = null;
      let bytesSinceEvent = 0;
      const parser = createParser({
        onEvent(event: EventSourceMessage) {
          bytesSinceEvent = 0;
          if (event.event === 'error') {
            ended = `the platform ended the stream: ${event.data || 'no reason given'}`;
            return;
          }
          if (!event.data.trim()) return; // keep-alive
          let parsed: unknown;
          try {
            parsed = JSON.parse(event.data);
          } catch {
            return; // not a record: nothing to hand out
          }
          const record = LogRecord.safeParse(parsed);
          if (record.success) pending.push(record.data);
        },
      });
      for await (const chunk of body) {
        bytesSinceEvent += chunk.length;
        parser.feed(chunk.toString('utf8'));
        if (bytesSinceEvent > eventLimitBytes) {
          ended = `an event longer than ${eventLimitBytes} bytes (PLATFORM_MAX_RESPONSE_BYTES): dropped`;
          break;
        }
        for (const item of pending.splice(0)) {
          const ms = Date.parse(item.timestamp);
          if (ms < resumeMs) continue;
          const line = drainLineOf(item);
          const key = recordKey(item.timestamp, String(line.svc_app_name ?? ''), String(line.svc_request_id ?? ''), String(line.svc_worker_id ?? ''), String(item.message));
          if (ms === resumeMs && seenAtResume.has(key)) continue;
          if (ms > resumeMs) {
            resumeMs = ms;
            resumeFrom = item.timestamp;
            seenAtResume = new Set();
          }
          seenAtResume.add(key);
          attempt = 0;
          await o.onRecord(item);
        }
        if (ended) break;
      }
      if (ended) reason = ended;
    } catch (err) {
      if (o.signal.aborted) return;
      // A refusal that retrying cannot change (404 no such app, 401/403 the key, 400 a filter) ends the tail: it
      // reconnected forever, printing the same 404 with a growing wait.
      if (err instanceof PlatformError && !err.retryable) throw new TailRefusedError(err);
      reason = err instanceof Error ? err.message : String(err);
      // A 429's wait (Retry-After, x-ratelimit-reset) is the platform's: never reconnect before it (issue 50.5).
      if (err instanceof PlatformError) retryAfterMs = err.retryAfterMs;
    }
    if (o.signal.aborted) return;
    attempt++;
    // Exponential, no jitter: a person reads the wait ("reconnecting in 2.0 s"); never shorter than the server's.
    const retryInMs = Math.max(retryDelayMs({ baseMs: base, maxMs: max, growth: 'exponential', jitter: 'none' }, attempt), retryAfterMs ?? 0);
    o.onState?.({ kind: 'dropped', reason, retryInMs, attempt });
    try {
      await sleep(retryInMs, undefined, { signal: o.signal });
    } catch {
      return;
    }
  }
}

/** The platform refused the stream for a reason a retry cannot change: the tail ends (exit 1) with it. */
export class TailRefusedError extends Error {
  constructor(readonly platformError: PlatformError) {
    super(platformError.message);
    this.name = 'TailRefusedError';
  }
}

/** Levels `--level` accepts (any case; comma-separated for several): those the platform's records carry. */
export const TAIL_LEVELS = Object.keys(LOG_LEVELS);

/** `--level`'s value checked before anything is opened; upper-cased, as the platform matches levels exactly. */
export function parseTailLevel(value: string): { level: string } | { error: string } {
  const typedLevels = value.split(',').map((l) => l.trim());
  const bad = typedLevels.find((l) => !TAIL_LEVELS.includes(l.toUpperCase()));
  if (bad === undefined && typedLevels.length > 0) return { level: typedLevels.map((l) => l.toUpperCase()).join(',') };
  const typed = bad ?? value;
  return { error: `--level: unknown level ${JSON.stringify(typed)}${didYouMean(typed, TAIL_LEVELS)}; expected one of ${TAIL_LEVELS.join(', ')} (any case; comma-separated for several)` };
}

/** The next step after a 404 for `--app`: the closest app the platform lists ("did you mean"), or what it lists. */
async function appHint(platform: PlatformClient, typed: string): Promise<string> {
  let names: string[];
  try {
    const listing = await platform.getJson(platformPaths.apps, { schema: AppsResponse });
    names = listing.apps.map((a) => (a.owner && a.name ? `${a.owner}/${a.name}` : a.endpoint_id));
  } catch {
    return '; check --app: an app\'s OWNER/NAME as the platform lists it, or its id';
  }
  const byName = names.map((n) => n.slice(n.indexOf('/') + 1));
  const near = closest(typed, names) ?? (closest(typed, byName) !== undefined ? names[byName.indexOf(closest(typed, byName)!)] : undefined);
  if (near !== undefined) return `; did you mean --app ${near}?`;
  return `; --app takes OWNER/NAME as the platform lists it (${names.length} apps, e.g. ${names.slice(0, 3).join(', ')})`;
}

/** `tallyhouse logs [tail] --help`. */
export function logsHelp(sub: string | undefined): number {
  const io = commandIO();
  if (sub !== undefined && sub !== 'tail') {
    io.err(`tallyhouse logs: unknown subcommand ${JSON.stringify(sub)}${didYouMean(sub, ['tail'])}\nUsage: ${USAGE}`);
    return 2;
  }
  io.out(
    `Usage: ${USAGE}\n` +
      'Follows the platform\'s live log stream until Ctrl-C; reconnects and resumes by itself when the stream drops.\n' +
      '  --app OWNER/APP     only this app (its owner/name, or its id); an app the platform does not know ends the tail (exit 1)\n' +
      `  --level LEVEL       only records of these levels: ${TAIL_LEVELS.join(', ')} (any case; comma-separated)\n` +
      '  --search TEXT       only records whose message contains TEXT\n' +
      '  --request-id ID     only the records of one request\n' +
      '  --store             also store the records in the logs table (origin tail)\n' +
      '  --json              NDJSON also on a terminal (the default when piped)\n' +
      'Exit codes: 0 stopped (Ctrl-C, or the reader went away: 141), 1 the platform refused the stream, 2 a usage error.\n',
  );
  return 0;
}

const LEVEL_COLOURS: Record<string, string> = { ERROR: '\u001b[31m', CRITICAL: '\u001b[31m', FATAL: '\u001b[31m', WARNING: '\u001b[33m', WARN: '\u001b[33m', DEBUG: '\u001b[2m' };

/**
 * A record's text made safe for a terminal: C0 and C1 control characters (tab and newline excepted), DEL among them,
 * shown as `\xNN`. A log line is anyone's text: with ESC, CR or CSI passed through it could set the window title,
 * erase the line and print a forged one.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** The NDJSON form: JSON.stringify escapes C0 but leaves DEL and C1 (U+007F-U+009F) raw, which a terminal may obey. */
export function jsonLine(item: LogRecord): string {
  return `${JSON.stringify(item).replace(/[\u007f-\u009f]/g, (c) => `\\u00${c.charCodeAt(0).toString(16)}`)}\n`;
}

/** One record as a terminal line: time (UTC), level, app, request id when there is one, message. */
export function prettyLine(item: LogRecord, colour: boolean): string {
  const line = drainLineOf(item);
  const time = item.timestamp.replace('T', ' ').replace('Z', '');
  const level = String(item.level ?? '').toUpperCase();
  const request = line.svc_request_id ? ` [${String(line.svc_request_id)}]` : '';
  const text = escapeControls(`${time} ${level.padEnd(7)} ${String(line.svc_app_name ?? item.app ?? '')}${request} ${String(item.message ?? '')}`);
  const c = colour ? LEVEL_COLOURS[level] : undefined;
  return c ? `${c}${text}\u001b[0m\n` : `${text}\n`;
}

/** Writes tailed records into `logs` a second at a time (or 500 records), skipping those already stored. */
class TailStore {
  private readonly rejects = collectorRejects('logs-tail');
  private batch: LogRowBatch;
  private flushing: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout;
  private seq = 0;
  stored = 0;

  constructor(private readonly rt: Runtime, private readonly io: CommandIO) {
    this.batch = this.next();
    this.timer = setInterval(() => void this.flush(), 1000);
  }

  add(item: LogRecord): void {
    this.batch.add(drainLineOf(item), item);
    if (this.batch.size >= 500) void this.flush();
  }

  flush(): Promise<void> {
    const batch = this.batch;
    this.batch = this.next();
    this.flushing = this.flushing.then(async () => {
      try {
        this.stored += await batch.commit({ runtime: this.rt });
        if (this.rejects.rows.length > 0) {
          const rejected = this.rt.writer.reject(this.rejects.rows.splice(0));
          await this.rt.writer.flush(REJECTS_TABLE);
          await rejected;
        }
      } catch (err) {
        this.io.err(`tallyhouse logs tail: could not store ${batch.size} line(s): ${(err as Error).message}\n`);
      }
    });
    return this.flushing;
  }

  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  private next(): LogRowBatch {
    return new LogRowBatch('tail', `${process.pid}\n${Date.now()}\n${this.seq++}`, this.rejects);
  }
}

export async function logsCommand(argv: string[]): Promise<number> {
  const io = commandIO();
  const [sub, ...rest] = argv;
  if (sub !== 'tail') {
    io.err(`tallyhouse logs: ${sub ? `unknown subcommand ${JSON.stringify(sub)}${didYouMean(sub, ['tail'])}` : 'which subcommand? tail'}\nUsage: ${USAGE}`);
    return 2;
  }
  let values: { app?: string; level?: string; search?: string; 'request-id'?: string; store?: boolean; json?: boolean };
  try {
    ({ values } = parseArgs({
      args: rest,
      options: {
        app: { type: 'string' },
        level: { type: 'string' },
        search: { type: 'string' },
        'request-id': { type: 'string' },
        store: { type: 'boolean' },
        json: { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`tallyhouse logs tail: ${describeArgsError(err, ['app', 'level', 'search', 'request-id', 'store', 'json'])}\nUsage: ${USAGE}`);
    return 2;
  }
  // Arguments are checked before anything is opened: `--level err` streamed nothing forever.
  let level: string | undefined;
  if (values.level !== undefined) {
    const checked = parseTailLevel(values.level);
    if ('error' in checked) {
      io.err(`tallyhouse logs tail: ${checked.error}\n`);
      return 2;
    }
    level = checked.level;
  }
  for (const [name, value] of [['app', values.app], ['search', values.search], ['request-id', values['request-id']]] as const) {
    if (value !== undefined && value.trim() === '') {
      io.err(`tallyhouse logs tail: --${name}: expected a value, got an empty one\n`);
      return 2;
    }
  }
  const config = getConfig();
  const logger = createCommandLogger(config.CLI_LOG_LEVEL);
  if (isDemoMode(config)) io.err(demoNotice('logs tail'));
  const source = await openPlatformSource(config, logger, { demoNoticeLevel: 'info', openDemo: openDemoPlatform });
  const pretty = !values.json && Boolean(process.stdout.isTTY);
  const stop = new AbortController();
  const onSignal = (): void => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  // A reader that went away (`| head`) ends the tail as Ctrl-C does.
  const unwatchStdout = commandHost() ? () => undefined : onStdoutClosed(onSignal);
  const filters: TailFilters = { app: values.app, level, search: values.search, requestId: values['request-id'] };
  const described = Object.entries(filters).filter(([, v]) => v).map(([k, v]) => `${k}=${v}`).join(' ');
  io.err(`tallyhouse logs tail: following the live log stream${described ? ` (${described})` : ''}${values.store ? ', storing the lines' : ''}; Ctrl-C to stop\n`);
  let printed = 0;
  const follow = async (store: TailStore | null): Promise<void> =>
    followLogStream(source.platform, {
      filters,
      signal: stop.signal,
      onRecord(item) {
        io.out(pretty ? prettyLine(item, true) : jsonLine(item));
        printed++;
        store?.add(item);
      },
      onState(state) {
        if (state.kind === 'dropped') io.err(`tallyhouse logs tail: stream dropped (${escapeControls(state.reason)}); reconnecting in ${(state.retryInMs / 1000).toFixed(1)} s (attempt ${state.attempt})\n`);
        else if (state.resumedFrom) io.err(`tallyhouse logs tail: reconnected; resuming after ${state.resumedFrom}\n`);
      },
    });
  let code = 0;
  try {
    if (values.store) {
      await withCommandRuntime(config, async (rt) => {
        await claimStorePlatform(rt, 'logs tail --store');
        const store = new TailStore(rt, io);
        try {
          await follow(store);
        } finally {
          await store.close();
          io.err(`tallyhouse logs tail: ${printed} line(s), ${store.stored} stored\n`);
        }
      });
    } else {
      await follow(null);
      io.err(`tallyhouse logs tail: ${printed} line(s)\n`);
    }
  } catch (err) {
    if (!(err instanceof TailRefusedError)) throw err;
    const e = err.platformError;
    const next = e.status === 404 && values.app !== undefined ? await appHint(source.platform, values.app) : '';
    io.err(`tallyhouse logs tail: the platform refused the stream (${escapeControls(e.status === null ? e.type : `${e.status} ${e.type}`)}): ${escapeControls(e.message)}${next}\n`);
    code = 1;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    unwatchStdout();
    await source.close();
  }
  return code;
}
