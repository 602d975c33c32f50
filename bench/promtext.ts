// `npm run bench -- promtext [--runs N]`: samples parsed per second by our parser and by the npm
// package parse-prometheus-text-format on the same 100,000-sample 0.0.4 exposition (histograms
// with 12 buckets and several labels, counters, gauges, summaries, HELP/TYPE lines), and whether
// both yield the same samples. Prints one JSON line.
//
// The package cannot represent labelled histograms or summaries: its flattenMetrics() keeps one
// bucket/quantile map per family (the last series wins) and drops the labels and every labelled
// _sum/_count. So on this exposition it cannot yield our samples, and `same_samples` says so
// honestly; the line also reports whether the counters and gauges, which it does represent, agree
// exactly, and the whole comparison (and timing) on a variant whose histograms and summaries carry
// no labels but le/quantile, which the package can represent.

import { createRequire } from 'node:module';
import { parseExposition, type Sample } from '../src/promtext/index.js';
import { mulberry32 } from '../src/sim/prng.js';
import { repeatRatio, reportRatio } from './repeat.js';

interface FlatSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

// ------------------------------------------------------------------ exposition generator


// Bounds as OpenMetrics-style clients print them (client_python, Prometheus 3 normalisation), so
// that le values need no normalisation and the package's raw strings compare equal to ours.
const BUCKETS = ['0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1.0', '2.5', '5.0', '10.0', '+Inf'];
const QUANTILES = ['0.5', '0.9', '0.99'];
const METHODS = ['GET', 'POST', 'PUT', 'DELETE'];
const CODES = ['200', '201', '204', '400', '404', '429', '500', '503'];
const MACHINES = ['gpu-a100-80gb', 'gpu-h100-80gb', 'gpu-l4-24gb', 'gpu-t4-16gb', 'cpu-standard-8'];
const STATES = ['running', 'pending', 'idle', 'terminating'];

interface GenerateOptions {
  /** Histograms and summaries carry application/method/handler/code labels (false: only le/quantile). */
  labelledDistributions: boolean;
  targetSamples: number;
}

function generateExposition(opts: GenerateOptions): { text: string; samples: number } {
  const rnd = mulberry32(20240606);
  const lines: string[] = [];
  let samples = 0;
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)] as T;
  const app = (i: number): string => `app-${String(i % 997).padStart(4, '0')}`;
  const handler = (i: number): string => `/v1/apps/${app(i)}/${['run', 'queue', 'status', 'logs'][i % 4]}`;
  const float = (): string => {
    const r = rnd();
    if (r < 0.1) return (rnd() * 1e-4).toExponential(4); // 8.3835e-05 style
    if (r < 0.15) return (rnd() * 1e9).toExponential(7); // 1.7560473e+07 style
    return (rnd() * 10000).toFixed(3);
  };
  const remaining = (): number => opts.targetSamples - samples;

  const histogram = (family: string, series: number, labelled: boolean): void => {
    lines.push(`# HELP ${family} Request latency in seconds, by route.`, `# TYPE ${family} histogram`);
    for (let s = 0; s < series; s++) {
      const labels = labelled
        ? `application="${app(s)}",method="${METHODS[s % 4]}",handler="${handler(s)}",code="${CODES[s % 8]}",`
        : '';
      let count = 0;
      for (const le of BUCKETS) {
        count += Math.floor(rnd() * 50);
        lines.push(`${family}_bucket{${labels}le="${le}"} ${count}`);
      }
      const bare = labels.length > 0 ? `{${labels.slice(0, -1)}}` : '';
      lines.push(`${family}_sum${bare} ${float()}`, `${family}_count${bare} ${count}`);
      samples += BUCKETS.length + 2;
    }
  };
  const summary = (family: string, series: number, labelled: boolean): void => {
    lines.push(`# HELP ${family} RPC duration in seconds.`, `# TYPE ${family} summary`);
    for (let s = 0; s < series; s++) {
      const labels = labelled ? `service="${app(s)}",method="${METHODS[s % 4]}",` : '';
      for (const q of QUANTILES) lines.push(`${family}{${labels}quantile="${q}"} ${s % 50 === 0 ? 'NaN' : float()}`);
      const bare = labels.length > 0 ? `{${labels.slice(0, -1)}}` : '';
      lines.push(`${family}_sum${bare} ${float()}`, `${family}_count${bare} ${Math.floor(rnd() * 1e6)}`);
      samples += QUANTILES.length + 2;
    }
  };
  const counter = (family: string, series: number): void => {
    lines.push(`# HELP ${family} Requests completed, by application, method and status.`, `# TYPE ${family} counter`);
    for (let s = 0; s < series; s++) {
      lines.push(`${family}{application="${app(s)}",method="${pick(METHODS)}",status="${CODES[s % 8]}",instance="10.0.${s % 250}.${(s * 7) % 250}:9100"} ${Math.floor(rnd() * 1e7)}`);
    }
    samples += series;
  };
  const gauge = (family: string, series: number, withTimestamps: boolean): void => {
    lines.push(`# HELP ${family} Runners by state and machine type.`, `# TYPE ${family} gauge`);
    for (let s = 0; s < series; s++) {
      const path = s % 100 === 0 ? `,path="C:\\\\runner\\\\${s}",note="said \\"hi\\""` : '';
      const ts = withTimestamps ? ` ${1717000000000 + s * 1000}` : '';
      lines.push(`${family}{application="${app(s)}",state="${STATES[s % 4]}",machine_type="${MACHINES[s % 5]}"${path}} ${float()}${ts}`);
    }
    samples += series;
  };

  if (opts.labelledDistributions) {
    // 5 × 1000 × 14 + 2 × 1000 × 5 + 4 × 3000 + 4 × 2000 = 100,000 at the default target.
    for (let f = 0; f < 5; f++) histogram(`svc_http_request_duration_seconds_${f}`, 1000, true);
    for (let f = 0; f < 2; f++) summary(`svc_rpc_duration_seconds_${f}`, 1000, true);
    for (let f = 0; f < 4; f++) counter(`svc_app_requests_completed_${f}_total`, 3000);
    for (let f = 0; f < 3; f++) gauge(`svc_app_runners_${f}`, 2000, f === 0);
    gauge('svc_app_queue_size', remaining(), false);
  } else {
    let f = 0;
    while (remaining() >= 1000 + BUCKETS.length + 2) {
      histogram(`svc_http_request_duration_seconds_${f}`, 1, false);
      summary(`svc_rpc_duration_seconds_${f}`, 1, false);
      f++;
      if (f % 40 === 0) counter(`svc_app_requests_completed_${f}_total`, 500);
      if (f % 40 === 20) gauge(`svc_app_runners_${f}`, 500, f % 80 === 20);
    }
    gauge('svc_app_queue_size', remaining(), false);
  }
  return { text: `${lines.join('\n')}\n`, samples };
}

// ------------------------------------------------------------------ comparing samples

interface BaselineMetric {
  labels?: Record<string, string>;
  value?: string;
  buckets?: Record<string, string>;
  quantiles?: Record<string, string>;
  bucket?: string;
  count?: string;
  sum?: string;
}
interface BaselineFamily {
  name: string;
  type: string;
  metrics: BaselineMetric[];
}

function baselineValue(v: string): number {
  if (v === '+Inf') return Infinity;
  if (v === '-Inf') return -Infinity;
  if (v === 'NaN') return NaN;
  return Number(v);
}

/** The package's family → metrics shape, flattened back into one entry per sample line. */
function flattenBaseline(families: BaselineFamily[], onlyTypes?: readonly string[]): FlatSample[] {
  const out: FlatSample[] = [];
  for (const f of families) {
    if (onlyTypes !== undefined && !onlyTypes.includes(f.type)) continue;
    for (const m of f.metrics) {
      const labels = m.labels ?? {};
      if (m.buckets !== undefined) {
        for (const [le, v] of Object.entries(m.buckets)) out.push({ name: `${f.name}_bucket`, labels: { ...labels, le }, value: baselineValue(v) });
      }
      if (m.quantiles !== undefined) {
        for (const [q, v] of Object.entries(m.quantiles)) out.push({ name: f.name, labels: { ...labels, quantile: q }, value: baselineValue(v) });
      }
      if (m.bucket !== undefined) out.push({ name: `${f.name}_bucket`, labels, value: baselineValue(m.bucket) });
      if (m.value !== undefined) out.push({ name: f.name, labels, value: baselineValue(m.value) });
      if (m.sum !== undefined) out.push({ name: `${f.name}_sum`, labels, value: baselineValue(m.sum) });
      if (m.count !== undefined) out.push({ name: `${f.name}_count`, labels, value: baselineValue(m.count) });
    }
  }
  return out;
}

function key(s: FlatSample): string {
  const labels = Object.keys(s.labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(s.labels[k])}`)
    .join(',');
  return `${s.name}{${labels}} ${Number.isNaN(s.value) ? 'NaN' : String(s.value)}`;
}

function countKeys(samples: readonly FlatSample[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const s of samples) {
    const k = key(s);
    counts.set(k, (counts.get(k) ?? 0) + 1);
  }
  return counts;
}

/** Same samples, as multisets (the package groups by family, so its order differs). */
function sameSamples(ours: readonly FlatSample[], baseline: readonly FlatSample[]): boolean {
  if (ours.length !== baseline.length) return false;
  const o = countKeys(ours);
  const b = countKeys(baseline);
  for (const [k, n] of o) if (b.get(k) !== n) return false;
  return true;
}

// The package ships no types; this is the shape its README documents.
const parsePrometheusTextFormat = createRequire(import.meta.url)('parse-prometheus-text-format') as (
  text: string,
) => BaselineFamily[];

// ------------------------------------------------------------------ timing

/**
 * Median seconds per parse for each parser. Rounds alternate the two parsers so both meet the same
 * machine load, and parses follow each other as in a scraping process: each one's garbage is
 * collected during the later parses, and no full GC is forced in between (it would shrink the young
 * generation that a process parsing every scrape keeps grown).
 */
function timeBoth(
  rounds: number,
  ours: () => unknown,
  baseline: () => unknown,
): { ours: number; baseline: number; oursBest: number; baselineBest: number } {
  for (let w = 0; w < 3; w++) {
    ours();
    baseline();
  }
  const o: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    let t0 = process.hrtime.bigint();
    ours();
    o.push(Number(process.hrtime.bigint() - t0) / 1e9);
    t0 = process.hrtime.bigint();
    baseline();
    b.push(Number(process.hrtime.bigint() - t0) / 1e9);
  }
  const median = (xs: number[]): number => xs.sort((x, y) => x - y)[xs.length >> 1] as number;
  return { ours: median(o), baseline: median(b), oursBest: Math.min(...o), baselineBest: Math.min(...b) };
}

async function main(): Promise<void> {
  const runsArg = process.argv.indexOf('--runs');
  const runs = runsArg === -1 ? 11 : Math.max(1, Number(process.argv[runsArg + 1]));

  const labelled = generateExposition({ labelledDistributions: true, targetSamples: 100_000 });
  const ours = parseExposition(labelled.text, 'text/plain; version=0.0.4');
  if (ours.length !== labelled.samples) throw new Error(`generator made ${labelled.samples} samples, parser found ${ours.length}`);
  const parsedByBaseline = parsePrometheusTextFormat(labelled.text);
  const baseline = flattenBaseline(parsedByBaseline);
  const same = sameSamples(ours, baseline);
  // Where the package is lossless (counters, gauges), the samples must agree exactly.
  const sameCountersGauges = sameSamples(
    ours.filter((s) => s.type === 'counter' || s.type === 'gauge'),
    flattenBaseline(parsedByBaseline, ['COUNTER', 'GAUGE']),
  );

  const mainTimes = timeBoth(
    runs,
    () => parseExposition(labelled.text, 'text/plain; version=0.0.4'),
    () => parsePrometheusTextFormat(labelled.text),
  );
  // The ratio repeated until stable: each round is a median of 5 alternating parses of each.
  const stable = await repeatRatio(() => {
    const t = timeBoth(5, () => parseExposition(labelled.text, 'text/plain; version=0.0.4'), () => parsePrometheusTextFormat(labelled.text));
    return t.baseline / t.ours;
  });

  // The variant the package can represent: correctness cross-check and a second ratio.
  const simple = generateExposition({ labelledDistributions: false, targetSamples: 100_000 });
  const simpleOurs = parseExposition(simple.text, 'text/plain; version=0.0.4');
  const simpleBaseline = flattenBaseline(parsePrometheusTextFormat(simple.text));
  const simpleSame = sameSamples(simpleOurs, simpleBaseline);
  const simpleTimes = timeBoth(
    runs,
    () => parseExposition(simple.text, 'text/plain; version=0.0.4'),
    () => parsePrometheusTextFormat(simple.text),
  );

  const perSecond = (samples: number, seconds: number): number => Math.round(samples / seconds);
  console.log(
    JSON.stringify({
      bench: 'promtext',
      samples: labelled.samples,
      ours_samples_per_second: perSecond(labelled.samples, mainTimes.ours),
      baseline_samples_per_second: perSecond(labelled.samples, mainTimes.baseline),
      ratio: Number((mainTimes.baseline / mainTimes.ours).toFixed(2)),
      ...reportRatio(stable, { atLeast: 5 }),
      same_samples: same,
      // The least disturbed run of each, for a machine shared with other work.
      ratio_of_best_runs: Number((mainTimes.baselineBest / mainTimes.oursBest).toFixed(2)),
      baseline_samples_returned: baseline.length,
      why_not_same: same
        ? null
        : 'parse-prometheus-text-format keeps one bucket/quantile map per histogram/summary family (last series wins, other labels dropped) and drops labelled _sum/_count',
      same_samples_in_counters_and_gauges: sameCountersGauges,
      exposition_bytes: labelled.text.length,
      runs,
      timing: 'median of runs; rounds alternate the two parsers after 3 warm-up rounds; no forced GC',
      representable_variant: {
        description: 'same generator, histograms and summaries without labels other than le/quantile',
        samples: simple.samples,
        same_samples: simpleSame,
        ours_samples_per_second: perSecond(simple.samples, simpleTimes.ours),
        baseline_samples_per_second: perSecond(simple.samples, simpleTimes.baseline),
        ratio: Number((simpleTimes.baseline / simpleTimes.ours).toFixed(2)),
      },
    }),
  );
}

await main();
