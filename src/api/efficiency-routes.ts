import type { FastifyInstance } from 'fastify';
import { DateTime, IANAZone } from 'luxon';
import { z } from 'zod';
import type { Runtime } from '../runtime.js';
import type { Store } from '../store/client.js';
import { currentApps } from '../store/tables/apps.js';
import { runnerHoursByLocalDay } from '../store/tables/runner-history.js';
import { machineVram, runnerMetricsByDay, runnerVramPeaks } from '../store/tables/runner-metrics.js';
import { usageDaysWithPrices } from '../store/tables/usage-buckets.js';
import { schedulingFailuresByApp } from '../store/tables/webhook-deliveries.js';
import { schedulingHints } from '../insights/scheduling.js';
import { toDateTime64 } from '../values.js';
import { efficiencyByDay, efficiencyByHour, recommendations, type AppInput, type EfficiencyHourRow, type EfficiencyRow, type Hint, type HistoryHourInput } from '../insights/efficiency.js';
import { badParameter, checkRangeDays, dateParam, formatParam, listParam, monthParam, sendTable, type Table, isoDay } from './http.js';
import type { RouteRegistry } from './routes.js';
import { CoverageResponse, loadCoverage } from './coverage-report.js';
import type { Coverage } from '../insights/coverage.js';

export const EFFICIENCY_COLUMNS = [
  'date', 'app', 'endpoint_id', 'machine_type', 'currency', 'machine_seconds', 'busy_machine_seconds', 'idle_machine_seconds',
  'draining_machine_seconds', 'unattributed_machine_seconds', 'cost', 'busy_cost', 'idle_cost', 'draining_cost', 'unattributed_cost',
  'idle_share', 'unattributed_share', 'gpu_utilization', 'gpu_samples',
  'vram_peak_used_bytes', 'vram_total_bytes', 'vram_peak_share', 'history_hours',
] as const;

export const HINT_COLUMNS = [
  'kind', 'app', 'endpoint_id', 'currency', 'machine_type', 'recommended_machine_type', 'amount', 'machine_seconds',
  'peak_vram_bytes', 'required_vram_bytes', 'idle_hours', 'share_of_requests', 'scheduling_failures', 'requests', 'last_seen',
  'max_concurrency', 'evidence',
] as const;

const KEEP_WARM_DAYS = 30;

async function appInputs(store: Store): Promise<AppInput[]> {
  return (await currentApps(store, { owners: [] })).map((a) => ({
    name: a.name, owner: a.owner, endpoint_id: a.endpoint_id, keep_alive: a.keep_alive, min_concurrency: a.min_concurrency,
  }));
}

function utcOf(date: string, timezone: string): string {
  return DateTime.fromISO(date, { zone: timezone }).toUTC().toISO()!;
}

async function history(store: Store, timezone: string, from: string, to: string): Promise<HistoryHourInput[]> {
  return runnerHoursByLocalDay(store, { timezone, from, to });
}

/** Busy, idle and draining figures per local day in [from, to) (dates), from the stored usage, history and runner metrics. */
export async function loadEfficiency(store: Store, q: { from: string; to: string; timezone: string; apps?: string[] }): Promise<EfficiencyRow[]> {
  const [usage, hours, metrics, apps] = await Promise.all([
    usageDaysWithPrices(store, { timezone: q.timezone, from: q.from, to: q.to }),
    history(store, q.timezone, q.from, q.to),
    runnerMetricsByDay(store, { timezone: q.timezone, from: utcOf(q.from, q.timezone), to: utcOf(q.to, q.timezone) }),
    appInputs(store),
  ]);
  const keep = (app: string) => !q.apps || q.apps.length === 0 || q.apps.includes(app) || q.apps.some((a) => a.endsWith(`/${app}`));
  return efficiencyByDay({ usage: usage.filter((u) => keep(u.app)), history: hours.filter((h) => keep(h.app)), metrics, apps });
}

/** The same per local hour (each daily row split by hour and state weights). */
export async function loadEfficiencyHourly(store: Store, q: { from: string; to: string; timezone: string; apps?: string[] }): Promise<EfficiencyHourRow[]> {
  const [usage, hours, apps] = await Promise.all([
    usageDaysWithPrices(store, { timezone: q.timezone, from: q.from, to: q.to }),
    history(store, q.timezone, q.from, q.to),
    appInputs(store),
  ]);
  const keep = (app: string) => !q.apps || q.apps.length === 0 || q.apps.includes(app) || q.apps.some((a) => a.endsWith(`/${app}`));
  return efficiencyByHour({ usage: usage.filter((u) => keep(u.app)), history: hours.filter((h) => keep(h.app)), apps });
}

export const EFFICIENCY_HOUR_COLUMNS = [
  'date', 'hour', 'app', 'endpoint_id', 'machine_type', 'currency', 'busy_machine_seconds', 'idle_machine_seconds',
  'draining_machine_seconds', 'busy_cost', 'idle_cost', 'draining_cost',
] as const;

/**
 * Right-sizing hints for a month (savings on that month's usage), keep-warm hints for the last 30 days of it
 * (ending tomorrow at the latest), at a VRAM margin in percent, and raise-max_concurrency hints for the apps whose
 * requests of those 30 days failed with runner_scheduling_failure at least `schedulingSharePercent` of the time.
 */
export async function loadRecommendations(
  store: Store,
  q: { month: string; timezone: string; marginPercent: number; nowMs: number; schedulingSharePercent: number },
): Promise<{ hints: Hint[]; window: { from: string; to: string } }> {
  const monthStart = DateTime.fromISO(`${q.month}-01`, { zone: q.timezone });
  const monthEnd = monthStart.plus({ months: 1 });
  const tomorrow = DateTime.fromMillis(q.nowMs, { zone: q.timezone }).startOf('day').plus({ days: 1 });
  const idleEnd = monthEnd < tomorrow ? monthEnd : tomorrow;
  const idleStart = idleEnd.minus({ days: KEEP_WARM_DAYS });
  const from = monthStart.toISODate()!;
  const to = monthEnd.toISODate()!;
  const window = { from: idleStart.toISODate()!, to: idleEnd.toISODate()! };
  const [apps, monthUsage, peaks, machines, idleRows, idleHistory, listing, scheduling] = await Promise.all([
    appInputs(store),
    usageDaysWithPrices(store, { timezone: q.timezone, from, to }),
    runnerVramPeaks(store, { from: monthStart.toUTC().toISO()!, to: monthEnd.toUTC().toISO()! }),
    machineVram(store, {}),
    loadEfficiency(store, { ...window, timezone: q.timezone }),
    history(store, q.timezone, window.from, window.to),
    currentApps(store, { owners: [] }),
    schedulingFailuresByApp(store, { from: toDateTime64(idleStart.toJSDate()), to: toDateTime64(idleEnd.toJSDate()) }),
  ]);
  const hints = recommendations({ apps, monthUsage, peaks, machines, marginPercent: q.marginPercent, idleRows, idleHistory, idleWindow: window });
  const concurrency = schedulingHints({ rows: scheduling, apps: listing, minSharePercent: q.schedulingSharePercent, window });
  const none = { currency: null, machine_type: null, recommended_machine_type: null, amount: null, peak_vram_bytes: null, required_vram_bytes: null, machine_seconds: null, idle_hours: null };
  return { hints: [...hints, ...concurrency.map((c) => ({ ...none, ...c }))], window };
}

function toTable(rows: ReadonlyArray<object>, columns: readonly string[]): Table {
  return { columns: [...columns], rows: rows.map((r) => Object.fromEntries(columns.map((c) => [c, ((r as Record<string, unknown>)[c] ?? null) as string | number | null]))) };
}

export function efficiencyTable(rows: readonly EfficiencyRow[]): Table {
  return toTable(rows, EFFICIENCY_COLUMNS);
}

export function hintTable(hints: readonly Hint[]): Table {
  return toTable(hints, HINT_COLUMNS);
}


function checkZone(rt: Runtime, timezone: string): void {
  if (!IANAZone.isValidZone(timezone) || !rt.config.TIMEZONES.includes(timezone)) {
    throw badParameter('timezone', `expected one of the collected timezones: ${rt.config.TIMEZONES.join(', ')}`);
  }
}

const EfficiencyRowSchema = z.object({
  date: z.string(), app: z.string(), endpoint_id: z.string(), machine_type: z.string(), currency: z.string(),
  machine_seconds: z.string().describe('machine-seconds (exact decimal)'),
  busy_machine_seconds: z.string(), idle_machine_seconds: z.string(), draining_machine_seconds: z.string(),
  cost: z.string().describe('usage cost (exact decimal, currency)'),
  busy_cost: z.string(), idle_cost: z.string(), draining_cost: z.string(),
  unattributed_machine_seconds: z.string().describe('machine-seconds of usage rows whose app-day has no billed runner in the collected history'),
  unattributed_cost: z.string().describe('their cost: known, its split unknown (never counted idle); busy + idle + draining + unattributed = cost exactly'),
  idle_share: z.number().nullable().describe('idle_cost / attributed cost (cost - unattributed_cost); null when nothing is attributed'),
  unattributed_share: z.number().describe('unattributed_cost / cost'),
  gpu_utilization: z.number().nullable().describe('GPU-utilisation-weighted efficiency: mean utilisation (0-1) over the per-runner samples of the day, taken at regular times from ready runners, so idle and draining time counts with its near-zero use'),
  gpu_samples: z.number(),
  vram_peak_used_bytes: z.number().nullable(), vram_total_bytes: z.number().nullable(), vram_peak_share: z.number().nullable(),
  history_hours: z.number().describe('hourly runner-history buckets the state split rests on'),
});

const HintSchema = z.object({
  kind: z.enum(['right_size', 'keep_warm', 'raise_max_concurrency']), app: z.string(), endpoint_id: z.string(),
  currency: z.string().nullable().describe('null for raise_max_concurrency'), machine_type: z.string().nullable().describe('null for raise_max_concurrency'),
  recommended_machine_type: z.string().nullable(),
  amount: z.string().nullable().describe('right_size: the month saving; keep_warm: the idle cost of the window (exact decimal, currency); null for raise_max_concurrency'),
  machine_seconds: z.string().nullable(), peak_vram_bytes: z.number().nullable(), required_vram_bytes: z.number().nullable(),
  idle_hours: z.string().nullable(),
  share_of_requests: z.number().nullable().describe('raise_max_concurrency: share (0-1) of the app\'s requests with a known outcome (a stored webhook delivery) in the keep-warm window that failed with runner_scheduling_failure'),
  scheduling_failures: z.number().nullable().describe('raise_max_concurrency: those failures'),
  requests: z.number().nullable().describe('raise_max_concurrency: the requests the share is of'),
  last_seen: z.string().nullable().describe('raise_max_concurrency: when the latest of them ended (ISO 8601 UTC)'),
  max_concurrency: z.number().nullable().describe('raise_max_concurrency: the app\'s current max_concurrency as last collected; null when unknown'),
  evidence: z.string(),
});

/** The query of both efficiency routes (daily and hourly): a range of local days, a zone, apps, the format. */
const efficiencyQuery = z.strictObject({
  from: dateParam('first local day'),
  to: dateParam('day after the last'),
  timezone: z.string().default('UTC').describe('timezone the usage and history were collected in'),
  app: listParam().describe('only these apps (name or owner/name, repeatable)'),
  format: formatParam,
});

function checkEfficiencyRange(rt: Runtime, q: { from: string; to: string; timezone: string }): void {
  checkZone(rt, q.timezone);
  if (q.to <= q.from) throw badParameter('to', 'expected a day after from (to is exclusive)');
  checkRangeDays(DateTime.fromISO(q.to).diff(DateTime.fromISO(q.from), 'days').days, rt.config.API_MAX_RANGE_DAYS, 'API_MAX_RANGE_DAYS');
}

/** What the efficiency figures rest on: usage and runner history of the range (rule 23). */
export function efficiencyCoverage(rt: Pick<Runtime, 'store' | 'now'>, q: { from: string; to: string; timezone: string }): Promise<Coverage> {
  return loadCoverage(rt.store, {
    sources: ['usage', 'runner_history'], zone: q.timezone, from: q.from, to: q.to, now: rt.now(),
    consequence: { usage: 'its cost is not in these figures', runner_history: 'its cost is unattributed (known, not split), not idle' },
  });
}

/** GET /efficiency and /recommendations: spend by runner state, GPU use and VRAM headroom; right-sizing and keep-warm hints. */
export function efficiencyRoutes(app: FastifyInstance, registry: RouteRegistry, rt: Runtime): void {
  registry.get(app, {
    path: '/efficiency',
    operationId: 'getEfficiency',
    response: z.object({ from: isoDay(), to: isoDay(), timezone: z.string(), split_rule: z.string(), coverage: CoverageResponse, rows: z.array(EfficiencyRowSchema) }),
    summary: 'Busy, idle and draining machine-seconds and cost per local day, app, machine type and currency, with GPU utilisation and VRAM headroom',
    description:
      'Each daily usage row is split by the app-day\'s hourly avg runner history (running : idle : draining), exactly (largest remainder at 12 decimals); ' +
      'an app with several machine types on a day has the same state mix apportioned to each. A day with no billed runner in the history is unattributed (its cost known, ' +
      'its split not), never idle; `coverage` names the ranges of usage and runner history not collected.',
    query: efficiencyQuery,
    csv: true,
    handler: async (q, request, reply) => {
      checkEfficiencyRange(rt, q);
      const [rows, coverage] = await Promise.all([
        loadEfficiency(rt.store, { from: q.from, to: q.to, timezone: q.timezone, apps: q.app }),
        efficiencyCoverage(rt, q),
      ]);
      return sendTable(reply, request, q.format, efficiencyTable(rows), () => ({
        from: q.from, to: q.to, timezone: q.timezone,
        split_rule: 'cost x state share of the app-day (hourly avg runner history); several machine types share the app-day mix; no history: unattributed',
        coverage,
        rows,
      }), 'efficiency.csv', coverage);
    },
  });

  registry.get(app, {
    path: '/efficiency/hourly',
    operationId: 'getEfficiencyHourly',
    response: z.object({
      from: isoDay(), to: isoDay(), timezone: z.string(), coverage: CoverageResponse,
      rows: z.array(z.object({
        date: z.string(), hour: z.number().describe('local hour of day, 0-23'), app: z.string(), endpoint_id: z.string(), machine_type: z.string(), currency: z.string(),
        busy_machine_seconds: z.string(), idle_machine_seconds: z.string(), draining_machine_seconds: z.string(),
        busy_cost: z.string(), idle_cost: z.string(), draining_cost: z.string(),
      })),
    }),
    summary: 'Busy, idle and draining machine-seconds and cost per local hour, app, machine type and currency',
    description: 'Usage is daily: each daily row is split by the app-day\'s runner history per hour and state (largest remainder), so the hours of a day add up to its row; the daily figures of /efficiency are the reference.',
    query: efficiencyQuery,
    csv: true,
    handler: async (q, request, reply) => {
      checkEfficiencyRange(rt, q);
      const [rows, coverage] = await Promise.all([
        loadEfficiencyHourly(rt.store, { from: q.from, to: q.to, timezone: q.timezone, apps: q.app }),
        efficiencyCoverage(rt, q),
      ]);
      return sendTable(reply, request, q.format, toTable(rows, EFFICIENCY_HOUR_COLUMNS), () => ({ from: q.from, to: q.to, timezone: q.timezone, coverage, rows }), 'efficiency-hourly.csv', coverage);
    },
  });

  registry.get(app, {
    path: '/recommendations',
    operationId: 'getRecommendations',
    response: z.object({ month: z.string(), timezone: z.string(), margin_percent: z.number(), keep_warm_window: z.object({ from: z.string(), to: z.string() }), hints: z.array(HintSchema) }),
    summary: 'Right-sizing (cheapest machine whose VRAM covers the observed peak with a margin, and the month saving), keep-warm idle cost, and raising max_concurrency where scheduling failures are frequent',
    description:
      'Prices: the non-surge unit price and discount the platform reported in the owner\'s usage rows (machine-second prices are per owner and ' +
      'machine type; unit_prices holds per-endpoint output prices). Candidates: machine types whose VRAM a runner reported and that the owner\'s usage prices. ' +
      'raise_max_concurrency: the platform\'s advice "frequent runner_scheduling_failure suggests raising max_concurrency", for apps whose requests of the keep-warm window ' +
      'failed with it at least SCHEDULING_FAILURE_HINT_PERCENT of the time (and at least 3 times), from the error types of their webhook deliveries.',
    query: z.strictObject({
      month: monthParam('the month to right-size').optional().describe('default: the current month'),
      timezone: z.string().default('UTC').describe('timezone the usage and history were collected in'),
      margin_percent: z.coerce.number().min(0).max(1000).optional().describe('VRAM margin over the observed peak (default RIGHTSIZING_VRAM_MARGIN_PERCENT)'),
      format: formatParam,
    }),
    csv: true,
    handler: async (q, request, reply) => {
      checkZone(rt, q.timezone);
      const nowMs = rt.now().getTime();
      const month = q.month ?? DateTime.fromMillis(nowMs, { zone: q.timezone }).toFormat('yyyy-MM');
      const marginPercent = q.margin_percent ?? rt.config.RIGHTSIZING_VRAM_MARGIN_PERCENT;
      const { hints, window } = await loadRecommendations(rt.store, { month, timezone: q.timezone, marginPercent, nowMs, schedulingSharePercent: rt.config.SCHEDULING_FAILURE_HINT_PERCENT });
      return sendTable(reply, request, q.format, hintTable(hints), () => ({
        month, timezone: q.timezone, margin_percent: marginPercent, keep_warm_window: window, hints,
      }), 'recommendations.csv');
    },
  });
}
