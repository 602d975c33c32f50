// A world of series with injected anomalies and their truth, for `npm run bench -- anomalies` and the detection
// tests (issue 32, acceptance 2). Seeded: the same options give the same world.
//
// Per app: its endpoint `<app>/infer` with hourly requests (a base rate between 0.3 and 3,000 an hour, a diurnal
// curve, weekends at 60%, a slow trend of up to +-0.3% a day, 5% multiplicative noise per hour, then Poisson
// counting), hourly errors (a base rate between 0.1% and 5%, binomial), a daily p95 latency (0.2 to 5 s, 4% noise),
// and the app's daily cost (an idle floor plus a price per request, 3% noise). Model endpoints and API keys have a
// daily cost with the same weekly shape. Series: app cost per day; endpoint volume and error rate per hour and per
// day; endpoint p95 latency per day; model endpoint cost per day; API key cost per day.
//
// Injected (each starts in the judged part of the world, after the 4 weeks of baseline): a runaway API key (cost
// x6 for 3 days), a unit price change (model endpoint cost x1.5 to the end), an error-rate jump (25% for 6 hours),
// a latency jump (p95 x3 for 2 days), a traffic surge (x5 for 5 hours) and an outage (5% of traffic for 4 hours):
// two of each. `affects` lists every series the anomaly moves (a surge moves the endpoint's hourly and daily volume
// and the app's cost), so a finding there, during it, is not false.
import type { Grain, SeriesKey, SeriesPoint } from '../../src/insights/anomalies.js';
import { mulberry32 } from '../../src/sim/prng.js';

export type InjectedKind = 'runaway_key' | 'price_change' | 'error_jump' | 'latency_jump' | 'traffic_surge' | 'outage';
export const INJECTED_KINDS: readonly InjectedKind[] = ['runaway_key', 'price_change', 'error_jump', 'latency_jump', 'traffic_surge', 'outage'];

export interface InjectedAnomaly {
  kind: InjectedKind;
  /** The series it must be found on, at the grain the deadline applies to (hour for volume and errors). */
  primary: SeriesKey;
  affects: SeriesKey[];
  startMs: number;
  endMs: number;
}

export interface AnomalyWorld {
  series: { key: SeriesKey; points: SeriesPoint[] }[];
  injected: InjectedAnomaly[];
  /** The judged part: from the end of the first 4 weeks to the end. */
  fromMs: number;
  toMs: number;
}

export interface WorldOptions {
  seed: number;
  apps: number;
  days: number;
  modelEndpoints: number;
  apiKeys: number;
  /** Two of each kind by default (12). */
  perKind: number;
  startMs: number;
}

export const DEFAULT_WORLD: WorldOptions = {
  seed: 1,
  apps: 500,
  days: 90,
  modelEndpoints: 40,
  apiKeys: 100,
  perKind: 2,
  startMs: Date.parse('2026-08-03T00:00:00Z'), // a Monday
};

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const BASELINE_DAYS = 28;

export function seriesKeyText(k: SeriesKey): string {
  return `${k.kind}|${k.id}|${k.measure}|${k.grain}|${k.unit}`;
}

export function buildAnomalyWorld(options: Partial<WorldOptions> = {}): AnomalyWorld {
  const o = { ...DEFAULT_WORLD, ...options };
  const rnd = mulberry32(o.seed);
  const normal = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const poisson = (lambda: number) => {
    if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * normal()));
    const l = Math.exp(-lambda);
    let k = 0;
    for (let p = rnd(); p > l; p *= rnd()) k++;
    return k;
  };
  const binomial = (n: number, p: number) => {
    if (n * p > 30 && n * (1 - p) > 30) return Math.min(n, Math.max(0, Math.round(n * p + Math.sqrt(n * p * (1 - p)) * normal())));
    let k = 0;
    for (let i = 0; i < n; i++) if (rnd() < p) k++;
    return k;
  };
  const hours = o.days * 24;
  const fromMs = o.startMs + BASELINE_DAYS * DAY;
  const toMs = o.startMs + o.days * DAY;
  const weekly = (ms: number) => ([0, 6].includes(new Date(ms).getUTCDay()) ? 0.6 : 1);
  const diurnal = (ms: number) => 0.55 + 0.45 * Math.sin(((new Date(ms).getUTCHours() - 8) / 24) * 2 * Math.PI);

  // The plan of injections first, so the generator can apply them as it goes.
  const apps = Array.from({ length: o.apps }, (_, i) => ({
    id: `team-${i % 50}/app-${i}`,
    rate: Math.exp(Math.log(0.3) + rnd() * Math.log(3000 / 0.3)),
    trend: (rnd() - 0.5) * 0.006,
    errorRate: 0.001 + rnd() * 0.049,
    latency: 0.2 + rnd() * 4.8,
    costPerRequest: 0.001 + rnd() * 0.02,
    idleCost: 1 + rnd() * 20,
  }));
  const models = Array.from({ length: o.modelEndpoints }, (_, i) => ({ id: `svc-ai/model-${i}`, daily: 20 + rnd() * 2000 }));
  const keys = Array.from({ length: o.apiKeys }, (_, i) => ({ id: `key-${String(i).padStart(3, '0')}`, daily: 5 + rnd() * 500 }));

  const key = (kind: SeriesKey['kind'], id: string, measure: SeriesKey['measure'], grain: Grain, unit: string): SeriesKey => ({ kind, id, measure, grain, unit });
  const endpointOf = (app: string) => `${app}/infer`;
  const judgedStart = (grain: Grain) => {
    const day = fromMs + Math.floor(rnd() * (o.days - BASELINE_DAYS - 4)) * DAY;
    return grain === 'day' ? day : day + (9 + Math.floor(rnd() * 8)) * HOUR;
  };
  const busyApps = apps.filter((a) => a.rate >= 60);
  const taken = new Set<string>();
  const pick = <T extends { id: string }>(list: T[]): T => {
    for (;;) {
      const x = list[Math.floor(rnd() * list.length)];
      if (!taken.has(x.id)) {
        taken.add(x.id);
        return x;
      }
    }
  };
  const injected: InjectedAnomaly[] = [];
  for (const kind of INJECTED_KINDS) {
    for (let n = 0; n < o.perKind; n++) {
      if (kind === 'runaway_key') {
        const k = pick(keys);
        const startMs = judgedStart('day');
        const primary = key('api_key', k.id, 'cost', 'day', 'USD');
        injected.push({ kind, primary, affects: [primary], startMs, endMs: startMs + 3 * DAY });
      } else if (kind === 'price_change') {
        const m = pick(models);
        const startMs = judgedStart('day');
        const primary = key('model_endpoint', m.id, 'cost', 'day', 'USD');
        injected.push({ kind, primary, affects: [primary], startMs, endMs: toMs });
      } else {
        const a = pick(busyApps);
        const ep = endpointOf(a.id);
        if (kind === 'latency_jump') {
          const startMs = judgedStart('day');
          const primary = key('endpoint', ep, 'p95_latency', 'day', 'seconds');
          injected.push({ kind, primary, affects: [primary], startMs, endMs: startMs + 2 * DAY });
        } else if (kind === 'error_jump') {
          const startMs = judgedStart('hour');
          const primary = key('endpoint', ep, 'error_rate', 'hour', 'ratio');
          injected.push({ kind, primary, affects: [primary, { ...primary, grain: 'day' }], startMs, endMs: startMs + 6 * HOUR });
        } else {
          const startMs = judgedStart('hour');
          const primary = key('endpoint', ep, 'volume', 'hour', 'requests');
          const affects = [primary, { ...primary, grain: 'day' as const }, key('app', a.id, 'cost', 'day', 'USD'), key('endpoint', ep, 'error_rate', 'day', 'ratio'), key('endpoint', ep, 'error_rate', 'hour', 'ratio')];
          injected.push({ kind, primary, affects, startMs, endMs: startMs + (kind === 'traffic_surge' ? 5 : 4) * HOUR });
        }
      }
    }
  }
  const effect = (kind: InjectedKind, seriesId: string, ms: number): number | undefined => {
    for (const a of injected) if (a.kind === kind && a.primary.id === seriesId && ms >= a.startMs && ms < a.endMs) return kind === 'traffic_surge' ? 5 : kind === 'outage' ? 0.05 : kind === 'runaway_key' ? 6 : kind === 'price_change' ? 1.5 : kind === 'latency_jump' ? 3 : 0.25;
    return undefined;
  };

  const series: AnomalyWorld['series'] = [];
  for (const a of apps) {
    const ep = endpointOf(a.id);
    const volH: SeriesPoint[] = [];
    const errH: SeriesPoint[] = [];
    const volD: SeriesPoint[] = [];
    const errD: SeriesPoint[] = [];
    const latD: SeriesPoint[] = [];
    const costD: SeriesPoint[] = [];
    let dayRequests = 0;
    let dayErrors = 0;
    for (let h = 0; h < hours; h++) {
      const ms = o.startMs + h * HOUR;
      const day = Math.floor(h / 24);
      const lambda = a.rate * (1 + a.trend * day) * weekly(ms) * diurnal(ms) * Math.exp(0.05 * normal()) * (effect('traffic_surge', ep, ms) ?? effect('outage', ep, ms) ?? 1);
      const requests = poisson(lambda);
      const errors = binomial(requests, effect('error_jump', ep, ms) ?? a.errorRate);
      if (requests > 0) {
        volH.push({ startMs: ms, value: requests });
        errH.push({ startMs: ms, value: errors / requests, requests });
      }
      dayRequests += requests;
      dayErrors += errors;
      if (h % 24 === 23) {
        const dayMs = ms - 23 * HOUR;
        volD.push({ startMs: dayMs, value: dayRequests });
        if (dayRequests > 0) errD.push({ startMs: dayMs, value: dayErrors / dayRequests, requests: dayRequests });
        latD.push({ startMs: dayMs, value: a.latency * Math.exp(0.04 * normal()) * (effect('latency_jump', ep, dayMs) ?? 1), requests: dayRequests });
        costD.push({ startMs: dayMs, value: (a.idleCost + dayRequests * a.costPerRequest) * Math.exp(0.03 * normal()) });
        dayRequests = 0;
        dayErrors = 0;
      }
    }
    series.push(
      { key: key('app', a.id, 'cost', 'day', 'USD'), points: costD },
      { key: key('endpoint', ep, 'volume', 'hour', 'requests'), points: volH },
      { key: key('endpoint', ep, 'volume', 'day', 'requests'), points: volD },
      { key: key('endpoint', ep, 'error_rate', 'hour', 'ratio'), points: errH },
      { key: key('endpoint', ep, 'error_rate', 'day', 'ratio'), points: errD },
      { key: key('endpoint', ep, 'p95_latency', 'day', 'seconds'), points: latD },
    );
  }
  const dailyCost = (kind: 'model_endpoint' | 'api_key', list: { id: string; daily: number }[], injectedKind: InjectedKind) => {
    for (const m of list) {
      const points: SeriesPoint[] = [];
      for (let d = 0; d < o.days; d++) {
        const ms = o.startMs + d * DAY;
        points.push({ startMs: ms, value: m.daily * weekly(ms) * Math.exp(0.05 * normal()) * (effect(injectedKind, m.id, ms) ?? 1) });
      }
      series.push({ key: key(kind, m.id, 'cost', 'day', 'USD'), points });
    }
  };
  dailyCost('model_endpoint', models, 'price_change');
  dailyCost('api_key', keys, 'runaway_key');
  return { series, injected, fromMs, toMs };
}

export interface Score {
  found: number;
  injected: number;
  /** Per injected anomaly: found in time, and the delay from its start to the end of the first finding's bucket. */
  details: { kind: InjectedKind; series: string; found: boolean; firstFindingMs?: number }[];
  falseFindings: number;
  seriesDays: number;
  falsePerThousandSeriesDays: number;
}

/**
 * Recall and false findings. An injected anomaly is found when its primary series has a finding whose bucket
 * starts within one grain of its start (the bucket holding the start: within one hour for hourly volume and errors,
 * one day for daily series). A finding is false unless an injected anomaly affects its series and the bucket
 * overlaps the anomaly's time. Series-days: the judged days of every series (an hourly series' 24 buckets are one).
 */
export function scoreFindings(world: AnomalyWorld, findings: { series: SeriesKey; startMs: number }[]): Score {
  const grainMs = (g: Grain) => (g === 'day' ? DAY : HOUR);
  const details = world.injected.map((a) => {
    const primary = seriesKeyText(a.primary);
    const hits = findings
      .filter((f) => seriesKeyText(f.series) === primary && f.startMs <= a.startMs && a.startMs < f.startMs + grainMs(f.series.grain))
      .map((f) => f.startMs);
    return { kind: a.kind, series: primary, found: hits.length > 0, firstFindingMs: hits.length ? Math.min(...hits) : undefined };
  });
  let falseFindings = 0;
  for (const f of findings) {
    const k = seriesKeyText(f.series);
    const end = f.startMs + grainMs(f.series.grain);
    const explained = world.injected.some((a) => a.affects.some((s) => seriesKeyText(s) === k) && f.startMs < a.endMs && end > a.startMs);
    if (!explained) falseFindings++;
  }
  const seriesDays = world.series.length * Math.round((world.toMs - world.fromMs) / DAY);
  return {
    found: details.filter((d) => d.found).length,
    injected: world.injected.length,
    details,
    falseFindings,
    seriesDays,
    falsePerThousandSeriesDays: (falseFindings / seriesDays) * 1000,
  };
}
