// The worlds of `npm run bench -- anomalies` (issue 46.6): nine generated worlds, each from a different model of
// ordinary usage, each with 12 planted anomalous episodes of several kinds and sizes, and their truth. Seeded: the
// same world name and seed give the same world. The detector never sees the generator's parameters.
//
// A planted size is given in multiples of the series' own noise (z, the log-scale standard deviation of its
// ordinary day-to-day variation): an anomaly of z = 6-12 is one a person would call an incident on that series, and
// one no detector can tell from noise below z = 3. Kinds: `spike` (up for 1-3 buckets), `drop` (down to a fraction
// for 1-2 buckets: an outage), `level_shift` (a new level that stays: alert once, then learn), `runaway` (growing
// each bucket for 3 days). The episodes are scored by `scoreEpisodes`: a planted episode is found when an episode
// of its series overlaps it; an episode that overlaps nothing planted on its series (a level shift allows 7 days
// to learn the new level) is false.
import type { Grain, SeriesKey, SeriesPoint } from '../../src/insights/anomalies.js';
import { mulberry32 } from '../../src/sim/prng.js';

export type PlantedKind = 'spike' | 'drop' | 'level_shift' | 'runaway';

export interface Planted {
  kind: PlantedKind;
  series: SeriesKey;
  /** Every series the episode moves (its primary first): an episode there, during it, is not false. */
  affects: SeriesKey[];
  startMs: number;
  /** The end of the anomalous buckets (a level shift: the end of the world). */
  endMs: number;
  /** The end of the time an episode on it may last and still be this one (a level shift: start + 7 days). */
  allowedUntilMs: number;
  /** Size in multiples of the series' noise (log scale). */
  z: number;
}

export interface GeneratedWorld {
  name: string;
  seed: number;
  series: { key: SeriesKey; points: SeriesPoint[] }[];
  planted: Planted[];
  /** The judged part of the world. */
  fromMs: number;
  toMs: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const DAYS = 84;
const JUDGED_DAYS = 42;
const START_MS = Date.parse('2026-06-01T00:00:00Z'); // a Monday

interface Ordinary {
  /** The ordinary (anomaly-free) value of the series at bucket i, with its noise drawn. */
  value(i: number, ms: number): number;
  /** The log-scale standard deviation of its ordinary variation (sizes are multiples of it). */
  sigma: number;
  /** The first bucket of the series (short histories). */
  firstBucket: number;
  /** Its typical value when used (an intermittent series' planted spike on a day it was idle starts from it). */
  typical?: number;
}

interface WorldModel {
  name: string;
  description: string;
  grain: Grain;
  kinds: readonly PlantedKind[];
  series: number;
  /** A series' ordinary model, drawn with `rnd`. */
  ordinary(rnd: () => number, normal: () => number, index: number): Ordinary;
  /** Where to plant in a series (bucket index) given its first bucket; undefined: the judged part. */
  plantAt?(rnd: () => number, firstBucket: number): number;
  /** The series a planted anomaly also moves, and their values (the cheap runaway's daily cost). */
  unit?: string;
  kind?: SeriesKey['kind'];
  measure?: SeriesKey['measure'];
  /** Cost that barely moves when volume runs away: a daily cost series per key, anomalous by only 2-5%. */
  companionCost?: boolean;
}

const cvToSigma = (cv: number) => Math.sqrt(Math.log(1 + cv * cv));
const logUniform = (rnd: () => number, lo: number, hi: number) => Math.exp(Math.log(lo) + rnd() * Math.log(hi / lo));

function plainNoise(cv: number): WorldModel['ordinary'] {
  return (rnd, normal) => {
    const level = logUniform(rnd, 5, 5000);
    const sigma = cvToSigma(cv);
    return { sigma, firstBucket: 0, value: () => level * Math.exp(sigma * normal() - (sigma * sigma) / 2) };
  };
}

export const WORLD_MODELS: readonly WorldModel[] = [
  { name: 'noise-10', description: 'independent day-to-day noise, CV 10%', grain: 'day', kinds: ['spike', 'drop', 'level_shift', 'runaway'], series: 120, ordinary: plainNoise(0.1) },
  { name: 'noise-20', description: 'independent day-to-day noise, CV 20%', grain: 'day', kinds: ['spike', 'drop', 'level_shift', 'runaway'], series: 120, ordinary: plainNoise(0.2) },
  { name: 'noise-40', description: 'independent day-to-day noise, CV 40%', grain: 'day', kinds: ['spike', 'drop', 'level_shift', 'runaway'], series: 120, ordinary: plainNoise(0.4) },
  {
    name: 'weekly',
    description: 'strong weekly seasonality (weekends at 15-50%, weekdays +-20%), CV 10%',
    grain: 'day',
    kinds: ['spike', 'drop', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 5000);
      const weekend = 0.15 + rnd() * 0.35;
      const shape = [0, 1, 2, 3, 4, 5, 6].map((d) => (d === 0 || d === 6 ? weekend : 0.8 + rnd() * 0.4));
      const sigma = cvToSigma(0.1);
      return { sigma, firstBucket: 0, value: (_i, ms) => level * shape[new Date(ms).getUTCDay()] * Math.exp(sigma * normal()) };
    },
  },
  {
    name: 'growth',
    description: 'steady growth or decline (-1% to +3% a day, compounding), CV 15%',
    grain: 'day',
    kinds: ['spike', 'drop', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 2000);
      const rate = -0.01 + rnd() * 0.04;
      const sigma = cvToSigma(0.15);
      return { sigma, firstBucket: 0, value: (i) => level * Math.exp(rate * i + sigma * normal()) };
    },
  },
  {
    name: 'intermittent',
    description: 'intermittent series: used on 30-80% of days (0 otherwise), CV 30% when used',
    grain: 'day',
    kinds: ['spike', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 2000);
      const p = 0.3 + rnd() * 0.5;
      const sigma = cvToSigma(0.3);
      return { sigma, firstBucket: 0, typical: level, value: () => (rnd() < p ? level * Math.exp(sigma * normal()) : 0) };
    },
  },
  {
    name: 'heavy-tail',
    description: 'CV 10% plus ordinary spikes (x1.3 to x2 on 15% of days: batch jobs); planted sizes in multiples of 0.25',
    grain: 'day',
    kinds: ['spike', 'drop', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 5000);
      // Planted sizes are multiples of the spread with the ordinary spikes (0.25 on the log scale), not of the 10% alone.
      return { sigma: 0.25, firstBucket: 0, value: () => level * Math.exp(cvToSigma(0.1) * normal()) * (rnd() < 0.15 ? 1.3 + rnd() * 0.7 : 1) };
    },
  },
  {
    name: 'level-shifts',
    description: 'CV 15%; 40% of series move to a new level (x0.5 to x2) once in their history (ordinary: a deploy)',
    grain: 'day',
    kinds: ['spike', 'drop', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 5000);
      const sigma = cvToSigma(0.15);
      const shiftAt = rnd() < 0.4 ? 7 + Math.floor(rnd() * 28) : Infinity;
      const factor = rnd() < 0.5 ? 0.5 + rnd() * 0.3 : 1.3 + rnd() * 0.7;
      return { sigma, firstBucket: 0, value: (i) => level * (i >= shiftAt ? factor : 1) * Math.exp(sigma * normal()) };
    },
  },
  {
    name: 'short-history',
    description: 'series younger than two weeks (3-13 days of history at the planted episode), CV 15%',
    grain: 'day',
    kinds: ['spike', 'drop', 'level_shift', 'runaway'],
    series: 120,
    ordinary: (rnd, normal) => {
      const level = logUniform(rnd, 5, 5000);
      const sigma = cvToSigma(0.15);
      return { sigma, firstBucket: DAYS - JUDGED_DAYS + Math.floor(rnd() * (JUDGED_DAYS - 16)), value: () => level * Math.exp(sigma * normal()) };
    },
    plantAt: (rnd, first) => first + 3 + Math.floor(rnd() * 11),
  },
  {
    name: 'cheap-runaway',
    description: 'API keys on cheap endpoints: hourly requests (0.5-2,000 an hour, diurnal, Poisson, 10% noise) whose volume runs away (x3 to x10) while their daily cost moves 2-5%',
    grain: 'hour',
    kinds: ['runaway', 'spike', 'drop'],
    series: 60,
    kind: 'api_key',
    measure: 'volume',
    unit: 'requests',
    companionCost: true,
    ordinary: (rnd, normal) => {
      const rate = logUniform(rnd, 0.5, 2000);
      const phase = rnd() * 24;
      // The noise of an hour is counting noise (Poisson) on top of 10% rate noise: its log sd at the rate.
      const sigma = Math.sqrt(cvToSigma(0.1) ** 2 + 1 / Math.max(rate, 1));
      return {
        sigma,
        firstBucket: 0,
        value: (_i, ms) => {
          const lambda = rate * (0.6 + 0.4 * Math.sin(((new Date(ms).getUTCHours() - phase) / 24) * 2 * Math.PI)) * Math.exp(0.1 * normal());
          return poissonDraw(rnd, normal, lambda);
        },
      };
    },
  },
];

function poissonDraw(rnd: () => number, normal: () => number, lambda: number): number {
  if (lambda > 30) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * normal()));
  const l = Math.exp(-lambda);
  let k = 0;
  for (let p = rnd(); p > l; p *= rnd()) k++;
  return k;
}

export const WORLD_NAMES = WORLD_MODELS.map((m) => m.name);

/** The multiplier a planted anomaly applies to bucket `i` (1 outside it). */
function effectAt(p: { kind: PlantedKind; startBucket: number; buckets: number; z: number; sigma: number }, i: number): number {
  if (i < p.startBucket || i >= p.startBucket + p.buckets) return 1;
  const k = i - p.startBucket;
  switch (p.kind) {
    case 'spike':
    case 'level_shift':
      return Math.exp(p.z * p.sigma);
    case 'drop':
      return Math.exp(-p.z * p.sigma);
    case 'runaway':
      // reaches its full size on the last bucket, starting at 40% of it (log scale)
      return Math.exp(p.z * p.sigma * (0.4 + (0.6 * k) / Math.max(1, p.buckets - 1)));
  }
}

export function buildWorld(name: string, seed: number): GeneratedWorld {
  const model = WORLD_MODELS.find((m) => m.name === name);
  if (!model) throw new Error(`unknown world ${name}; worlds: ${WORLD_NAMES.join(', ')}`);
  const rnd = mulberry32(seed * 1000 + WORLD_MODELS.indexOf(model) + 1);
  const normal = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const step = model.grain === 'day' ? DAY : HOUR;
  const perDay = DAY / step;
  const buckets = DAYS * perDay;
  const judgedFrom = (DAYS - JUDGED_DAYS) * perDay;
  const fromMs = START_MS + (DAYS - JUDGED_DAYS) * DAY;
  const toMs = START_MS + DAYS * DAY;
  const seriesKind = model.kind ?? 'app';
  const measure = model.measure ?? 'cost';
  const unit = model.unit ?? 'USD';
  const id = (i: number) => (seriesKind === 'api_key' ? `key-${String(i).padStart(3, '0')}` : `team-${i % 12}/${model.name}-${i}`);

  const ordinaries = Array.from({ length: model.series }, (_, i) => model.ordinary(rnd, normal, i));
  // 12 planted episodes on 12 different series, the kinds in turn.
  const chosen = new Set<number>();
  const plans: { series: number; kind: PlantedKind; startBucket: number; buckets: number; z: number; sigma: number }[] = [];
  for (let n = 0; n < 12; n++) {
    let s: number;
    do s = Math.floor(rnd() * model.series);
    while (chosen.has(s));
    chosen.add(s);
    const kind = model.kinds[n % model.kinds.length];
    const o = ordinaries[s];
    // Within the judged part, far enough from its end for a 3-day episode and 7 days of learning.
    const latest = buckets - 10 * perDay;
    let startBucket = model.plantAt ? model.plantAt(rnd, o.firstBucket) * perDay : judgedFrom + Math.floor(rnd() * (latest - judgedFrom));
    if (model.grain === 'hour') startBucket = Math.floor(startBucket / 24) * 24 + 8 + Math.floor(rnd() * 10); // working hours
    const length = kind === 'level_shift' ? buckets - startBucket : kind === 'runaway' ? 3 * perDay : kind === 'drop' ? (1 + Math.floor(rnd() * 2)) * (model.grain === 'hour' ? 3 : 1) : (1 + Math.floor(rnd() * 3)) * (model.grain === 'hour' ? 4 : 1);
    plans.push({ series: s, kind, startBucket, buckets: length, z: 6 + rnd() * 6, sigma: o.sigma });
  }

  const series: GeneratedWorld['series'] = [];
  const planted: Planted[] = [];
  for (let s = 0; s < model.series; s++) {
    const o = ordinaries[s];
    const key: SeriesKey = { kind: seriesKind, id: id(s), measure, grain: model.grain, unit };
    const mine = plans.filter((p) => p.series === s);
    const points: SeriesPoint[] = [];
    const cost: SeriesPoint[] = [];
    const costPerRequest = 0.00001 + rnd() * 0.0001;
    const idleCost = 5 + rnd() * 50;
    let dayRequests = 0;
    let dayFactor = 1;
    for (let i = o.firstBucket * perDay; i < buckets; i++) {
      const ms = START_MS + i * step;
      const factor = mine.reduce((f, p) => f * effectAt(p, i), 1);
      let v = o.value(i, ms);
      if (v === 0 && factor > 1 && o.typical !== undefined) v = o.typical;
      // A drop or a runaway is of the series' usage: an intermittent day without usage stays 0 under a spike too.
      if (factor !== 1) v = model.grain === 'hour' && factor > 1 ? poissonDraw(rnd, normal, Math.max(v, 0.5) * factor) : v * factor;
      points.push({ startMs: ms, value: model.grain === 'hour' ? Math.round(v) : v });
      if (model.companionCost) {
        dayRequests += v;
        dayFactor = Math.max(dayFactor, factor);
        if ((i + 1) % perDay === 0) {
          // cost barely moves: a cheap endpoint's requests are a few percent of the key's daily cost
          cost.push({ startMs: ms - (perDay - 1) * step, value: (idleCost + dayRequests * costPerRequest) * Math.exp(0.05 * normal()) });
          dayRequests = 0;
          dayFactor = 1;
        }
      }
    }
    series.push({ key, points });
    const costKey: SeriesKey = { kind: seriesKind, id: id(s), measure: 'cost', grain: 'day', unit: 'USD' };
    if (model.companionCost) series.push({ key: costKey, points: cost });
    for (const p of mine) {
      const startMs = START_MS + p.startBucket * step;
      const endMs = START_MS + (p.startBucket + p.buckets) * step;
      planted.push({
        kind: p.kind,
        series: key,
        affects: model.companionCost ? [key, costKey] : [key],
        startMs,
        endMs,
        allowedUntilMs: p.kind === 'level_shift' ? startMs + 7 * DAY : endMs,
        z: p.z,
      });
    }
  }
  return { name: model.name, seed, series, planted, fromMs, toMs };
}

export interface DetectedBucket {
  series: SeriesKey;
  startMs: number;
}

export interface WorldScore {
  planted: number;
  found: number;
  missed: string[];
  episodes: number;
  falseEpisodes: number;
  seriesDays: number;
  falsePerThousandSeriesDays: number;
  /** Median of (end of the first anomalous bucket of the episode - planted start), in hours, over those found. */
  medianDelayHours: number | null;
  precision: number;
}

export function keyText(k: SeriesKey): string {
  return `${k.kind}|${k.id}|${k.measure}|${k.grain}|${k.unit}`;
}

/**
 * Groups flagged buckets into episodes (consecutive buckets of one series, a gap of one bucket allowed), then
 * scores them: a planted episode is found when an episode of its primary series overlaps [start, allowedUntil); an
 * episode that overlaps no planted episode on its series is false. Series-days: each series' judged days from its
 * first point.
 */
export function scoreEpisodes(world: GeneratedWorld, flagged: readonly DetectedBucket[]): WorldScore {
  const grainMs = (g: Grain) => (g === 'day' ? DAY : HOUR);
  const bySeries = new Map<string, number[]>();
  for (const f of flagged) {
    if (f.startMs < world.fromMs || f.startMs >= world.toMs) continue;
    const k = keyText(f.series);
    (bySeries.get(k) ?? bySeries.set(k, []).get(k)!).push(f.startMs);
  }
  const episodes: { key: string; startMs: number; endMs: number; firstEndMs: number }[] = [];
  for (const [k, starts] of bySeries) {
    const g = grainMs(k.split('|')[3] as Grain);
    starts.sort((a, b) => a - b);
    let cur: (typeof episodes)[number] | undefined;
    for (const t of starts) {
      if (cur && t <= cur.endMs + g) cur.endMs = t + g;
      else episodes.push((cur = { key: k, startMs: t, endMs: t + g, firstEndMs: t + g }));
    }
  }
  const missed: string[] = [];
  const delays: number[] = [];
  let found = 0;
  for (const p of world.planted) {
    const k = keyText(p.series);
    const hit = episodes.filter((e) => e.key === k && e.startMs < p.allowedUntilMs && e.endMs > p.startMs).sort((a, b) => a.startMs - b.startMs)[0];
    if (hit) {
      found++;
      // from the planted start to the end of the episode's first bucket (the data a detector needs is complete)
      delays.push((Math.max(hit.firstEndMs, p.startMs + grainMs(p.series.grain)) - p.startMs) / HOUR);
    } else missed.push(`${p.kind} z=${p.z.toFixed(1)} ${p.series.id}`);
  }
  const falseEpisodes = episodes.filter((e) => !world.planted.some((p) => p.affects.some((a) => keyText(a) === e.key) && e.startMs < Math.max(p.allowedUntilMs, p.endMs) && e.endMs > p.startMs)).length;
  let seriesDays = 0;
  for (const s of world.series) {
    const first = s.points.length ? s.points[0].startMs : world.toMs;
    seriesDays += Math.max(0, Math.round((world.toMs - Math.max(world.fromMs, first)) / DAY));
  }
  delays.sort((a, b) => a - b);
  return {
    planted: world.planted.length,
    found,
    missed,
    episodes: episodes.length,
    falseEpisodes,
    seriesDays,
    falsePerThousandSeriesDays: (falseEpisodes / seriesDays) * 1000,
    medianDelayHours: delays.length ? delays[Math.floor((delays.length - 1) / 2)] : null,
    precision: episodes.length ? (episodes.length - falseEpisodes) / episodes.length : 1,
  };
}
