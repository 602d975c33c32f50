// `npm run bench -- anomalies [--seed 1] [--apps 500] [--days 90]`
//
// Issue 32, acceptance 2: a 90-day world of 500 apps with ordinary variation (weekly and daily seasonality, trend,
// noise, Poisson and binomial counting) and 12 injected anomalies of 6 kinds (bench/lib/anomaly-world.ts), judged
// by the detection module (src/api/anomalies.ts) over its last 62 days. Prints one JSON line: recall, false findings
// per 1,000 series-days, and the detection's run time over the world (goal: recall >= 11/12, <= 1 false per 1,000
// series-days, each found in the bucket of its start, under 60 s).
import { parseArgs } from 'node:util';
import { detectAll } from '../src/api/anomalies.js';
import { buildAnomalyWorld, scoreFindings } from './lib/anomaly-world.js';

const { values } = parseArgs({
  options: { seed: { type: 'string', default: '1' }, apps: { type: 'string', default: '500' }, days: { type: 'string', default: '90' } },
});
const built = performance.now();
const world = buildAnomalyWorld({ seed: Number(values.seed), apps: Number(values.apps), days: Number(values.days) });
const generatedMs = performance.now() - built;
const started = performance.now();
const findings = detectAll(world.series, world.fromMs, world.toMs);
const detectMs = performance.now() - started;
const score = scoreFindings(world, findings);
const points = world.series.reduce((n, s) => n + s.points.length, 0);
console.log(
  JSON.stringify({
    bench: 'anomalies',
    seed: Number(values.seed),
    series: world.series.length,
    points,
    injected: score.injected,
    kinds: [...new Set(world.injected.map((a) => a.kind))].length,
    recall: `${score.found}/${score.injected}`,
    missed: score.details.filter((d) => !d.found).map((d) => `${d.kind} ${d.series}`),
    findings: findings.length,
    false_findings: score.falseFindings,
    series_days: score.seriesDays,
    false_per_1000_series_days: Number(score.falsePerThousandSeriesDays.toFixed(3)),
    detect_ms: Math.round(detectMs),
    generate_ms: Math.round(generatedMs),
    goal_met: score.found >= 11 && score.falsePerThousandSeriesDays <= 1 && detectMs < 60_000,
  }),
);
