import { DateTime } from 'luxon';
import type { Extension, Runtime } from '../runtime.js';
import { currentStoreGeneration, gauge } from '../metrics.js';
import { lastSuccessByJob } from '../store/tables/job-runs.js';
import { costSinceByApp } from '../store/tables/usage-buckets.js';
import { latestQueueSizes } from '../store/tables/queue-samples.js';
import { openFindingsByMeasure } from '../store/tables/anomalies.js';
import { unbilledRequestsSummary } from '../store/tables/requests.js';
import { MEASURES } from '../insights/anomalies.js';
import { toDateTime64 } from '../values.js';
import { budgetsReport, configuredBudgets } from '../api/budgets-report.js';

const CACHE_MS = 60_000;
export const OTHER_APPS = '__other__';

/** One of the numbers people alert on, read from the store. Added to by other modules (e.g. unbilled requests). */
export interface BusinessGauge {
  name: string;
  help: string;
  labelNames: string[];
  read(rt: Runtime): Promise<Array<{ labels: Record<string, string>; value: number }>>;
}

/** Month-to-date cost per app and currency in the first configured timezone; apps beyond the cap are summed. */
export const monthToDateCost: BusinessGauge = {
  name: 'tallyhouse_usage_month_to_date_cost',
  help: 'Month-to-date usage cost per app, in the currency of the label (net of discounts, surge included), in the first TIMEZONES zone.',
  labelNames: ['app', 'currency', 'timezone'],
  async read(rt) {
    const timezone = rt.config.TIMEZONES[0];
    const monthStart = DateTime.fromJSDate(rt.now()).setZone(timezone).startOf('month').toISODate()!;
    const rows = await costSinceByApp(rt.store, { timezone, from: monthStart });
    const max = rt.config.METRICS_MAX_APPS;
    const out: Array<{ labels: Record<string, string>; value: number }> = [];
    const other = new Map<string, number>();
    const perCurrency = new Map<string, number>();
    for (const r of rows) {
      const seen = perCurrency.get(r.currency) ?? 0;
      perCurrency.set(r.currency, seen + 1);
      if (seen < max) out.push({ labels: { app: r.app, currency: r.currency, timezone }, value: Number(r.cost) });
      else other.set(r.currency, (other.get(r.currency) ?? 0) + Number(r.cost));
    }
    for (const [currency, value] of other) out.push({ labels: { app: OTHER_APPS, currency, timezone }, value });
    return out;
  },
};

/** Seconds since each job last succeeded, from job_runs (so it survives restarts). */
export const jobSuccessAge: BusinessGauge = {
  name: 'tallyhouse_job_last_success_age_seconds',
  help: 'Seconds since the job last finished successfully (from job_runs).',
  labelNames: ['job_name'],
  async read(rt) {
    const rows = await lastSuccessByJob(rt.store, {});
    const now = rt.now().getTime();
    return rows.map((r) => ({ labels: { job_name: r.job }, value: Math.max(0, (now - r.finished_ms) / 1000) }));
  },
};

/**
 * Each app's latest queue backlog sample (the queue job); apps beyond METRICS_MAX_APPS are summed under __other__.
 * `app` is the app's name, as in every other metric (the cost and budget gauges join on it); its owner is `owner`.
 */
export const appQueueSize: BusinessGauge = {
  name: 'tallyhouse_app_queue_size',
  help: 'Requests waiting in each app\'s queue at the latest sample (GET .../queue, sampled by the queue job); app is the name, owner its owner.',
  labelNames: ['app', 'owner'],
  async read(rt) {
    const rows = await latestQueueSizes(rt.store, {});
    const max = rt.config.METRICS_MAX_APPS;
    const out = rows.slice(0, max).map((r) => ({ labels: appLabels(r.endpoint_id), value: Number(r.queue_size) }));
    if (rows.length > max) out.push({ labels: { app: OTHER_APPS, owner: '' }, value: rows.slice(max).reduce((n, r) => n + Number(r.queue_size), 0) });
    return out;
  },
};

/** `owner/name` → the app label (its name) and its owner, as the queue samples name an app. */
export function appLabels(endpointId: string): { app: string; owner: string } {
  const slash = endpointId.indexOf('/');
  return slash < 0 ? { app: endpointId, owner: '' } : { app: endpointId.slice(slash + 1), owner: endpointId.slice(0, slash) };
}

/** The monthly budget per app from APP_BUDGETS, for the alert "month-to-date cost above budget". */
export const appBudgets: BusinessGauge = {
  name: 'tallyhouse_app_budget',
  help: 'Monthly budget per app from APP_BUDGETS, in the currency of the label.',
  labelNames: ['app', 'currency'],
  async read(rt) {
    return Object.entries(rt.config.APP_BUDGETS).map(([app, value]) => ({ labels: { app, currency: rt.config.BUDGET_CURRENCY }, value }));
  },
};

/**
 * Requests still unbilled past the re-collection window (REQUESTS_RECOLLECT_HOURS): what only the late-billing
 * re-check can fill. The scan is bounded (CONTRIBUTING.md rule 21): requests up to twice REQUESTS_UNBILLED_MAX_AGE_DAYS
 * old, so those given up on stay visible for as long again. Both gauges read one query (shared for a few seconds).
 */
let unbilledRead: { rt: Runtime; atMs: number; generation: number; value: Promise<{ unbilled: number; oldestAgeSeconds: number }> } | undefined;
function readUnbilled(rt: Runtime): Promise<{ unbilled: number; oldestAgeSeconds: number }> {
  // A scan of up to 70 days of requests: shared for 5 minutes unless a job stored something since (the figure only
  // moves when the requests job runs).
  if (unbilledRead && unbilledRead.rt === rt && unbilledRead.generation === currentStoreGeneration() && Date.now() - unbilledRead.atMs < 300_000) {
    return unbilledRead.value;
  }
  const value = (async () => {
    const nowMs = rt.now().getTime();
    const before = new Date(nowMs - rt.config.REQUESTS_RECOLLECT_HOURS * 3_600_000);
    const after = new Date(nowMs - 2 * rt.config.REQUESTS_UNBILLED_MAX_AGE_DAYS * 86_400_000);
    const [row] = await unbilledRequestsSummary(rt.store, { after: toDateTime64(after), before: toDateTime64(before) });
    const oldestMs = row?.oldest_ended_at ? Date.parse(`${row.oldest_ended_at.replace(' ', 'T')}Z`) : nowMs;
    return { unbilled: row?.unbilled ?? 0, oldestAgeSeconds: Math.max(0, (nowMs - oldestMs) / 1000) };
  })();
  unbilledRead = { rt, atMs: Date.now(), generation: currentStoreGeneration(), value };
  // A failed read is not shared: the next gauge (or scrape) asks again.
  value.catch(() => {
    unbilledRead = undefined;
  });
  return value;
}

/** Requests stored without billable units that ended before the re-collection window (issue 50.3). */
export const requestsUnbilled: BusinessGauge = {
  name: 'tallyhouse_requests_unbilled',
  help: 'Requests still unbilled (billable_units null) that ended more than REQUESTS_RECOLLECT_HOURS ago (and at most twice REQUESTS_UNBILLED_MAX_AGE_DAYS): re-checked at 1, 2, 4... days of age up to REQUESTS_UNBILLED_MAX_AGE_DAYS; their cost is missing until billed.',
  labelNames: [],
  async read(rt) {
    return [{ labels: {}, value: (await readUnbilled(rt)).unbilled }];
  },
};

/** Age of the oldest of those requests (0 when none): past REQUESTS_UNBILLED_MAX_AGE_DAYS it is no longer re-checked. */
export const requestsUnbilledOldestAge: BusinessGauge = {
  name: 'tallyhouse_requests_unbilled_oldest_age_seconds',
  help: 'Seconds since the oldest still-unbilled request (of tallyhouse_requests_unbilled) ended; 0 when none. Past REQUESTS_UNBILLED_MAX_AGE_DAYS it is given up on.',
  labelNames: [],
  async read(rt) {
    return [{ labels: {}, value: (await readUnbilled(rt)).oldestAgeSeconds }];
  },
};

/** How far back a finding's bucket may start and still be open. */
export const OPEN_FINDING_HOURS = 48;

/**
 * Findings of the anomalies job whose bucket started within the last 48 hours, per measure (cost, volume,
 * error_rate, p95_latency; 0 when none), for the alert TallyhouseAnomalyFound. Re-evaluated findings count once,
 * tombstoned ones not at all.
 */
export const anomaliesOpen: BusinessGauge = {
  name: 'tallyhouse_anomalies_open',
  help: 'Anomaly findings whose bucket started in the last 48 hours, per measure (kind): cost, volume, error_rate, p95_latency.',
  labelNames: ['kind'],
  async read(rt) {
    const rows = await openFindingsByMeasure(rt.store, { since: toDateTime64(new Date(rt.now().getTime() - OPEN_FINDING_HOURS * 3_600_000)) });
    const byMeasure = new Map(rows.map((r) => [r.measure, r.findings]));
    return MEASURES.map((kind) => ({ labels: { kind }, value: byMeasure.get(kind) ?? 0 }));
  },
};

/** Each budget's figures (src/insights/budgets.ts), for the budget alerts: amount, spent, forecast and its interval. */
export const budgetFiguresGauge: BusinessGauge = {
  name: 'tallyhouse_budget',
  help: 'Budgets (BUDGETS, BUDGETS_FILE, APP_BUDGETS) this month in the first TIMEZONES zone: figure = amount | spent | forecast | forecast_low | forecast_high, in the currency of the label.',
  labelNames: ['scope', 'name', 'currency', 'figure'],
  async read(rt) {
    const budgets = configuredBudgets(rt.config);
    if (budgets.length === 0) return [];
    const report = await budgetsReport(rt.store, budgets, { timezone: rt.config.TIMEZONES[0], now: rt.now() });
    return report.budgets.flatMap((b) => {
      const labels = { scope: b.scope, name: b.name, currency: b.currency };
      const figures: Array<[string, string | null]> = [['amount', b.amount], ['spent', b.spent], ['forecast', b.forecast], ['forecast_low', b.interval.low], ['forecast_high', b.interval.high]];
      return figures.filter(([, v]) => v !== null).map(([figure, v]) => ({ labels: { ...labels, figure }, value: Number(v) }));
    });
  },
};

const BUDGET_STATES = ['ok', 'at_risk', 'over'] as const;

/**
 * Each budget's state as an enum (Prometheus naming guide): one series per state, 1 for the budget's state and 0 for
 * the others (the alert rules TallyhouseBudgetAtRisk and TallyhouseBudgetOver). It was a 0/1/2 number.
 */
export const budgetStatusGauge: BusinessGauge = {
  name: 'tallyhouse_budget_state',
  help: 'Budget state this month, 1 for the budget\'s state: ok, at_risk (the forecast interval reaches the amount), over (spent passed it).',
  labelNames: ['scope', 'name', 'currency', 'state'],
  async read(rt) {
    const budgets = configuredBudgets(rt.config);
    if (budgets.length === 0) return [];
    const report = await budgetsReport(rt.store, budgets, { timezone: rt.config.TIMEZONES[0], now: rt.now() });
    return report.budgets.flatMap((b) =>
      BUDGET_STATES.map((state) => ({ labels: { scope: b.scope, name: b.name, currency: b.currency, state }, value: b.status === state ? 1 : 0 })),
    );
  },
};

/**
 * Registers gauges whose values come from the store, read in the registry's collect callback at most once a
 * minute (a scrape every few seconds costs one query a minute), or sooner when a job committed new data. A failing read keeps the last values and counts
 * the failure, so /metrics itself never fails because the store is slow.
 */
export function registerBusinessMetrics(rt: Runtime, gauges: BusinessGauge[]): void {
  const failures = gauge(rt.registry, {
    name: 'tallyhouse_business_metric_last_read_failed',
    help: '1 when the last read of a business gauge from the store failed (it keeps its previous values), else 0.',
    labelNames: ['metric'],
  });
  for (const g of gauges) {
    let cached: { at: number; generation: number; values: Array<{ labels: Record<string, string>; value: number }> } | undefined;
    let failed = false;
    gauge(rt.registry, {
      name: g.name,
      help: g.help,
      labelNames: g.labelNames,
      async collect() {
        const generation = currentStoreGeneration();
        if (!cached || Date.now() - cached.at >= CACHE_MS || cached.generation !== generation) {
          try {
            cached = { at: Date.now(), generation, values: await g.read(rt) };
            failed = false;
          } catch (err) {
            if (!failed) rt.logger.warn({ err, metric: g.name }, 'could not read a business metric from the store');
            failed = true;
            cached = { at: Date.now() - CACHE_MS + 10_000, generation, values: cached?.values ?? [] };
          }
          this.reset();
          for (const v of cached.values) this.set(v.labels, v.value);
        }
        failures.set({ metric: g.name }, failed ? 1 : 0);
      },
    });
  }
}

/** Registers the business gauges with the service's registry. */
/** The gauges every service registers (main.ts adds those of other areas, e.g. the idle share of spend). */
export const DEFAULT_BUSINESS_GAUGES: readonly BusinessGauge[] = [monthToDateCost, jobSuccessAge, appBudgets, appQueueSize, budgetFiguresGauge, budgetStatusGauge, anomaliesOpen, requestsUnbilled, requestsUnbilledOldestAge];

export function businessMetricsExtension(gauges: BusinessGauge[] = [...DEFAULT_BUSINESS_GAUGES]): Extension {
  return async (rt) => {
    registerBusinessMetrics(rt, gauges);
  };
}
