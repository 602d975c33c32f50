import { createHash } from 'node:crypto';
import { DateTime } from 'luxon';
import { z } from 'zod';
import { defineJob, type JobContext } from '../src/collectors/job.js';
import { commaList } from '../src/jobs/options.js';
import type { TimeRange } from '../src/collectors/time-args.js';
import { chunk } from '../src/platform/index.js';
import { listEndpoints } from '../src/collectors/endpoints.js';
import { PricesFileError, readPricesFile, syncUnitPrices } from '../src/collectors/prices.js';
import { ROLLUP_JOB, ROLLUP_STALE, rollupKey, rollupReady } from '../src/collectors/requests-rollup.js';
import { refreshRequestDays, requestsExtent } from '../src/store/tables/requests-daily.js';
import { unbilledRequestSpans } from '../src/store/tables/requests.js';
import { toDateTime64 } from '../src/values.js';
import { runResumable } from '../src/jobs/resumable.js';
import { collectRequestWindow, coveringEndpointIds, dayChunks, forEachLimited } from '../src/collectors/requests.js';

const JOB = 'requests';
const HOUR_MS = 3_600_000;
/** How far back the first scheduled run (or a newly seen endpoint) reaches; `--lookback-hours` overrides. */
export const FIRST_RUN_LOOKBACK_HOURS = 24;
/** Endpoint groups (of at most 50 ids) paged at the same time. */
export const REQUESTS_CONCURRENCY = 2;
/** Checkpoint key of the scheduled runs: value = JSON {endpoint id: ISO instant collected through}. */
export const SCHEDULED_KEY = 'scheduled';
/** Checkpoint key of the late-billing re-check: value = ISO instant of the last re-check (the platform's clock). */
export const RECHECK_KEY = 'unbilled-recheck';
const DAY_MS = 86_400_000;

/**
 * Serverless requests with billable units (API scope), and the unit prices of PRICES_FILE. A scheduled run
 * loads the prices, then collects each endpoint from its watermark minus REQUESTS_RECOLLECT_HOURS (billing that
 * was still null then is filled in) up to now, in day chunks, saving the watermark after each committed
 * chunk. With --from/--to it backfills that range in day chunks and resumes after an interruption.
 */
export const requestsJob = defineJob({
  name: JOB,
  description: 'requests per endpoint with billable units; unit prices from PRICES_FILE',
  defaultCron: '*/5 * * * *',
  scope: 'api',
  label: 'the requests collector',
  range: 'times',
  options: z.object({
    endpoints: commaList(z.string())
      .optional()
      .describe('comma-separated endpoint ids (default: ENDPOINT_IDS, else every endpoint of the apps)'),
    'lookback-hours': z.coerce
      .number()
      .positive()
      .default(FIRST_RUN_LOOKBACK_HOURS)
      .describe(`first run / new endpoint: hours to reach back (default ${FIRST_RUN_LOOKBACK_HOURS})`),
  }),
  async run(ctx, options) {
    // A bad prices file must not stop request collection (costs are computed when read): collect, then fail
    // the run with the file's error so job_runs and the log name the entry and field.
    let pricesError: PricesFileError | undefined;
    let pricesChanged = false;
    const pricesFile = ctx.runtime.config.PRICES_FILE;
    if (pricesFile) {
      try {
        const result = await syncUnitPrices(ctx.runtime, await readPricesFile(pricesFile), pricesFile);
        pricesChanged = result.added + result.corrected > 0;
        // Persisted at once: a run that fails (or dies) before the rollup is maintained must not leave days
        // priced at the old prices behind for good.
        if (pricesChanged) await markRollupStale(ctx);
        if (pricesChanged) ctx.log.info({ ...result }, 'unit prices loaded');
      } catch (err) {
        if (!(err instanceof PricesFileError)) throw err;
        pricesError = err;
        ctx.log.error({ error: err.message }, 'unit prices not loaded; collecting requests anyway');
      }
    }

    const ids = coveringEndpointIds(options.endpoints ?? (await listEndpoints(ctx)));
    let touched: { from: Date; to: Date } | null = null;
    if (ids.length === 0) ctx.log.warn('no endpoints to collect requests for');
    else if (ctx.range) await backfill(ctx, ctx.range, ids);
    else {
      touched = await scheduled(ctx, ids, { lookbackMs: options['lookback-hours'] * HOUR_MS, allEndpoints: !options.endpoints });
    }
    // Per-day totals for the query API: the days this run wrote (a backfill refreshes its chunks as it goes).
    await maintainRequestRollup(ctx, touched, { rebuild: pricesChanged });
    // After the rollup of this run's window (a failed re-check must not leave it stale). Only a run over every
    // endpoint moves the re-check's checkpoint: a run over --endpoints is not the whole set.
    if (ids.length > 0 && !ctx.range && !options.endpoints) await recheckUnbilled(ctx, ids);

    if (pricesError) throw pricesError;
  },
});

function parseWatermarks(value: string | undefined): Record<string, string> {
  if (!value) return {};
  try {
    const parsed: unknown = JSON.parse(value);
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) {
      return Object.fromEntries(Object.entries(parsed).filter((e): e is [string, string] => typeof e[1] === 'string'));
    }
  } catch {
    // fall through: an unreadable checkpoint is a first run, not a failure
  }
  return {};
}

/**
 * Each endpoint's window is [its watermark - REQUESTS_RECOLLECT_HOURS, now), or the look-back for an endpoint
 * without one. Endpoints with the same start are paged together, 50 ids a call; after each day chunk of a group
 * is committed, the group's watermarks move to the chunk's end (never backwards) and the map of this run's
 * endpoints is saved.
 */
async function scheduled(
  ctx: JobContext,
  ids: string[],
  opts: { lookbackMs: number; allEndpoints: boolean },
): Promise<{ from: Date; to: Date } | null> {
  const nowMs = ctx.now().getTime();
  const recollectMs = ctx.runtime.config.REQUESTS_RECOLLECT_HOURS * HOUR_MS;
  const firstStartMs = nowMs - opts.lookbackMs;
  const saved = parseWatermarks(await ctx.checkpoints.get(JOB, SCHEDULED_KEY));
  // Only this run's endpoints are kept, so ids no longer collected (apps gone, ENDPOINT_IDS changed) do not stay in
  // the map for good. A run over --endpoints keeps the others': it is not the whole set.
  const watermarks = !opts.allEndpoints
    ? saved
    : Object.fromEntries(ids.filter((id) => Object.hasOwn(saved, id)).map((id) => [id, saved[id]]));

  const byStart = new Map<number, string[]>();
  for (const id of ids) {
    const through = watermarks[id] ? Date.parse(watermarks[id]) : NaN;
    const startMs = Number.isNaN(through) ? firstStartMs : Math.min(through, nowMs) - recollectMs;
    if (startMs >= nowMs) continue;
    byStart.set(startMs, [...(byStart.get(startMs) ?? []), id]);
  }
  const groups = [...byStart].flatMap(([startMs, members]) => chunk(members, 50).map((g) => ({ startMs, ids: g })));

  let saving = Promise.resolve();
  const save = (): Promise<void> => {
    const value = JSON.stringify(watermarks);
    saving = saving.then(() => ctx.checkpoints.save(JOB, SCHEDULED_KEY, value));
    return saving;
  };
  await forEachLimited(groups, REQUESTS_CONCURRENCY, async (group) => {
    for (const c of dayChunks(new Date(group.startMs), new Date(nowMs))) {
      ctx.signal.throwIfAborted();
      await collectRequestWindow(ctx, { endpointIds: group.ids, ...c });
      for (const id of group.ids) {
        const old = watermarks[id] ? Date.parse(watermarks[id]) : NaN;
        if (Number.isNaN(old) || old < c.to.getTime()) watermarks[id] = c.to.toISOString();
      }
      await save();
    }
  });
  if (groups.length === 0) return null;
  return { from: new Date(Math.min(...groups.map((g) => g.startMs))), to: new Date(nowMs) };
}

/**
 * The ages (days) at which a request still unbilled is fetched again (issue 50.3): 1, 2, 4, 8... below
 * REQUESTS_UNBILLED_MAX_AGE_DAYS, then that age itself; after it the request is given up on.
 */
export function recheckAgesDays(maxAgeDays: number): number[] {
  const ages: number[] = [];
  for (let d = 1; d < maxAgeDays; d *= 2) ages.push(d);
  ages.push(maxAgeDays);
  return ages;
}

/**
 * The ended_at windows to re-check at `nowMs`: the requests that reached one of the ages since the last re-check
 * (`lastMs`), i.e. [lastMs - age, nowMs - age) per age, merged. Without a last re-check (first run, an upgrade),
 * every request aged between the first and the last age is checked once. Stateless per request: only the time of
 * the last re-check is kept, so the schedule needs no per-request bookkeeping and survives restarts.
 */
export function recheckWindows(nowMs: number, lastMs: number | null, maxAgeDays: number): Array<{ from: Date; to: Date }> {
  const ages = recheckAgesDays(maxAgeDays);
  const raw: Array<[number, number]> =
    lastMs === null ? [[nowMs - maxAgeDays * DAY_MS, nowMs - ages[0] * DAY_MS]] : ages.map((a) => [lastMs - a * DAY_MS, nowMs - a * DAY_MS]);
  const merged: Array<[number, number]> = [];
  for (const [from, to] of raw.filter(([f, t]) => f < t).sort((a, b) => a[0] - b[0])) {
    const prev = merged.at(-1);
    if (prev && from <= prev[1]) prev[1] = Math.max(prev[1], to);
    else merged.push([from, to]);
  }
  return merged.map(([from, to]) => ({ from: new Date(from), to: new Date(to) }));
}

/** Whether a stored (concrete) endpoint id is one this run collects: listed itself, or its bare `owner/app` is. */
function coveredBy(ids: ReadonlySet<string>, endpointId: string): boolean {
  return ids.has(endpointId) || ids.has(endpointId.split('/').slice(0, 2).join('/'));
}

/**
 * Late billing (issue 50.3): requests still unbilled past the re-collection window are fetched again when they
 * reach 1, 2, 4... days of age (recheckWindows), one call per endpoint and UTC day over the span of its unbilled
 * requests; a billed copy outranks the unbilled one (requestVersion), so the request counts once. The days touched
 * are refreshed in requests_daily (every zone), and the re-check's time is saved only once all of it is committed.
 */
async function recheckUnbilled(ctx: JobContext, ids: string[]): Promise<void> {
  const nowMs = ctx.now().getTime();
  const lastText = await ctx.checkpoints.get(JOB, RECHECK_KEY);
  const lastMs = lastText ? Date.parse(lastText) : NaN;
  const windows = recheckWindows(nowMs, Number.isNaN(lastMs) ? null : lastMs, ctx.runtime.config.REQUESTS_UNBILLED_MAX_AGE_DAYS);
  const wanted = new Set(ids);
  let unbilled = 0;
  let billed = 0;
  let calls = 0;
  // A span whose billed copies are stored but whose days are not yet refreshed in requests_daily is kept in a
  // checkpoint until they are: once billed it no longer shows as unbilled, so a run that failed (or died) between
  // the two would otherwise leave those days' rollup unbilled for good. The last run's leftovers go first.
  const pending = new Map<string, { from: string; to: string }>();
  for (const span of parsePendingSpans(await ctx.checkpoints.get(JOB, PENDING_REFRESH_KEY))) {
    await refreshRollupSpan(ctx, new Date(span.from), new Date(span.to));
  }
  let saving: Promise<void> = ctx.checkpoints.save(JOB, PENDING_REFRESH_KEY, '[]');
  const persist = () => (saving = saving.then(() => ctx.checkpoints.save(JOB, PENDING_REFRESH_KEY, JSON.stringify([...pending.values()]))));
  await saving;
  for (const w of windows) {
    const spans = (await unbilledRequestSpans(ctx.runtime.store, { from: toDateTime64(w.from), to: toDateTime64(w.to) }))
      .filter((s) => coveredBy(wanted, s.endpoint_id));
    await forEachLimited(spans, REQUESTS_CONCURRENCY, async (s) => {
      ctx.signal.throwIfAborted();
      const from = new Date(Date.parse(`${s.first.replace(' ', 'T')}Z`));
      const to = new Date(Date.parse(`${s.last.replace(' ', 'T')}Z`) + 1);
      const key = `${s.endpoint_id}|${from.toISOString()}`;
      pending.set(key, { from: from.toISOString(), to: to.toISOString() });
      await persist();
      const result = await collectRequestWindow(ctx, { endpointIds: [s.endpoint_id], from, to });
      unbilled += s.unbilled;
      billed += result.billed;
      calls++;
      await refreshRollupSpan(ctx, from, to);
      pending.delete(key);
      await persist();
    });
  }
  if (calls > 0) ctx.log.info({ windows: calls, unbilled, billed_in_windows: billed }, 'unbilled requests re-checked');
  await ctx.checkpoints.save(JOB, RECHECK_KEY, new Date(nowMs).toISOString());
}

/** The checkpoint of re-checked spans whose rollup days are still to refresh (JSON [{from, to}], ISO instants). */
export const PENDING_REFRESH_KEY = 'unbilled-recheck-pending-refresh';

function parsePendingSpans(value: string | undefined): Array<{ from: string; to: string }> {
  if (!value) return [];
  try {
    const parsed: unknown = JSON.parse(value);
    if (!Array.isArray(parsed)) return [];
    return parsed.filter(
      (p): p is { from: string; to: string } =>
        typeof p?.from === 'string' && typeof p?.to === 'string' && !Number.isNaN(Date.parse(p.from)) && !Number.isNaN(Date.parse(p.to)),
    );
  } catch {
    return [];
  }
}

/** Refreshes the local days of [from, to) in requests_daily for every zone whose rollup is in use. */
async function refreshRollupSpan(ctx: JobContext, from: Date, to: Date): Promise<void> {
  for (const zone of ctx.runtime.config.TIMEZONES) {
    if (await rollupReady(ctx, zone)) await refreshRequestDays(ctx.runtime.store, zone, from, to);
  }
}

/** --from/--to: day chunks (in --timezone, default UTC), every endpoint group per chunk, then a checkpoint. */
async function backfill(ctx: JobContext, range: TimeRange, ids: string[]): Promise<void> {
  const timezone = ctx.timezone ?? 'UTC';
  const instants = range.instants(timezone);
  const from = new Date(instants.fromMs);
  const requestedTo = new Date(instants.toMs);
  // Nothing exists after now; the platform would cut the range there anyway.
  const to = new Date(Math.min(requestedTo.getTime(), ctx.now().getTime()));
  const groups = chunk(ids, 50);
  const idsHash = createHash('sha256').update(ids.join(',')).digest('hex').slice(0, 12);
  await runResumable(ctx, {
    job: JOB,
    key: `backfill:${from.toISOString()}:${requestedTo.toISOString()}:${idsHash}`,
    chunks: dayChunks(from, to, timezone),
    label: `requests ${range.from}..${range.to}`,
    position: (c) => c.from.toISOString(),
    work: async (c) => {
      let count = 0;
      await forEachLimited(groups, REQUESTS_CONCURRENCY, async (g) => {
        // Not `count += await ...`: that reads count before the await and loses the other groups' additions.
        const { requests: received } = await collectRequestWindow(ctx, { endpointIds: g, ...c });
        count += received;
      });
      for (const zone of ctx.runtime.config.TIMEZONES) {
        if (await rollupReady(ctx, zone)) await refreshRequestDays(ctx.runtime.store, zone, c.from, c.to);
      }
      return `${c.from.toISOString().slice(0, 10)}: ${count} requests`;
    },
  });
}

/** Marks every zone's rollup stale (before anything else can fail), so the next maintenance rebuilds it. */
async function markRollupStale(ctx: Pick<JobContext, 'runtime' | 'checkpoints'>): Promise<void> {
  for (const timezone of ctx.runtime.config.TIMEZONES) await ctx.checkpoints.save(ROLLUP_JOB, rollupKey(timezone), ROLLUP_STALE);
}

/**
 * Keeps `requests_daily` in step with `requests` for every zone in TIMEZONES: the days a run touched, plus
 * everything since the last successful refresh (so a run that died between committing requests and refreshing
 * leaves no stale day behind). A zone never built, or a change of prices, rebuilds the zone in full, a month at a
 * time. The checkpoint is saved only after the refresh is committed.
 */
export async function maintainRequestRollup(
  ctx: Pick<JobContext, 'runtime' | 'checkpoints' | 'log' | 'now'>,
  touched: { from: Date; to: Date } | null,
  opts: { rebuild?: boolean } = {},
): Promise<void> {
  const { store, config } = ctx.runtime;
  const now = ctx.now();
  for (const timezone of config.TIMEZONES) {
    const through = await ctx.checkpoints.get(ROLLUP_JOB, rollupKey(timezone));
    if (!through || through === ROLLUP_STALE || opts.rebuild) {
      const [extent] = await requestsExtent(store, {});
      if (extent && extent.n > 0) {
        let start = DateTime.fromSQL(extent.first, { zone: 'utc' });
        const end = DateTime.fromSQL(extent.last, { zone: 'utc' }).plus({ milliseconds: 1 });
        while (start < end) {
          const next = DateTime.min(start.plus({ months: 1 }), end);
          await refreshRequestDays(store, timezone, start.toJSDate(), next.toJSDate());
          start = next;
        }
        ctx.log.info({ timezone, requests: extent.n }, 'requests_daily rebuilt');
      }
    } else {
      const from = touched ? new Date(Math.min(touched.from.getTime(), Date.parse(through))) : new Date(Date.parse(through));
      const to = touched ? new Date(Math.max(touched.to.getTime(), now.getTime())) : now;
      if (from < to) await refreshRequestDays(store, timezone, from, to);
    }
    await ctx.checkpoints.save(ROLLUP_JOB, rollupKey(timezone), now.toISOString());
  }
}
