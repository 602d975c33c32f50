// `npm run bench -- anomalies-classic [--seed 1] [--apps 500] [--days 90]` (the single world of issue 32; the benchmark of
// many worlds is `npm run bench -- anomalies`)
//
// Issue 32, acceptance 2: a 90-day world of 500 apps with ordinary variation (weekly and daily seasonality, trend,
// noise, Poisson and binomial counting) and 12 injected anomalies of 6 kinds (bench/lib/anomaly-world.ts), judged
// by the detection module (src/insights/anomalies.ts) over its last 62 days. Prints one JSON line: recall, false findings
// per 1,000 series-days, and the detection's run time over the world (goal: recall >= 11/12, <= 1 false per 1,000
// series-days, each found in the bucket of its start, under 60 s). Then (unless --module-only) the same world is
// written into an embedded store in a temporary directory as the collectors store it (bench/lib/anomaly-store.ts),
// the anomalies job re-evaluates the judged 62 days (`collect anomalies --from --to`), and its findings, read back
// from the anomalies table, are scored the same way: the job's run time is what the goal is about.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { detectAll, type SeriesKey } from '../src/insights/anomalies.js';
import { parseConfig } from '../src/config.js';
import { closeRuntime, openRuntime } from '../src/service.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { parseJobArgs } from '../src/jobs/options.js';
import type { PlatformClient } from '../src/platform/index.js';
import { anomaliesJob } from '../jobs/anomalies.js';
import { findingsInRange } from '../src/store/tables/anomalies.js';
import { buildAnomalyWorld, scoreFindings } from './lib/anomaly-world.js';
import { writeWorld } from './lib/anomaly-store.js';

const { values } = parseArgs({
  options: {
    seed: { type: 'string', default: '1' },
    apps: { type: 'string', default: '500' },
    days: { type: 'string', default: '90' },
    'module-only': { type: 'boolean', default: false },
  },
});
const built = performance.now();
const world = buildAnomalyWorld({ seed: Number(values.seed), apps: Number(values.apps), days: Number(values.days) });
const generatedMs = performance.now() - built;
const started = performance.now();
const findings = detectAll(world.series, world.fromMs, world.toMs);
const detectMs = performance.now() - started;
const score = scoreFindings(world, findings);
const points = world.series.reduce((n, s) => n + s.points.length, 0);

async function runJobOverStore() {
  const dir = mkdtempSync(join(tmpdir(), 'tallyhouse-bench-anomalies-'));
  try {
    const config = parseConfig({ DATA_DIR: dir, LOG_LEVEL: 'silent', WRITER_MAX_ROWS: '200000' });
    const rt = await openRuntime(config, { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }) });
    try {
      const writeStarted = performance.now();
      const rows = await writeWorld(rt, world);
      const writeMs = performance.now() - writeStarted;
      const now = new Date(world.toMs + 3_600_000);
      const scheduler = new Scheduler({ runtime: rt, platform: {} as PlatformClient, jobs: [anomaliesJob], now: () => now });
      const args = parseJobArgs(anomaliesJob, { from: new Date(world.fromMs).toISOString(), to: new Date(world.toMs).toISOString() });
      const jobStarted = performance.now();
      const run = await scheduler.run('anomalies', 'manual', args);
      const jobMs = performance.now() - jobStarted;
      if (run.status !== 'ok') throw new Error(`the anomalies job: ${run.status} ${run.error ?? ''}`);
      const stored = await findingsInRange(rt.store, { from: new Date(world.fromMs).toISOString(), to: new Date(world.toMs).toISOString(), series_kind: '', measure: '', series_id: '', limit: 1_000_000 });
      const found = stored.map((f) => ({ series: { kind: f.series_kind, id: f.series_id, measure: f.measure, grain: f.grain, unit: f.unit } as SeriesKey, startMs: Date.parse(`${f.bucket_utc.replace(' ', 'T')}Z`) }));
      const s = scoreFindings(world, found);
      return {
        store_rows: rows,
        store_write_ms: Math.round(writeMs),
        job_ms: Math.round(jobMs),
        job_recall: `${s.found}/${s.injected}`,
        job_missed: s.details.filter((d) => !d.found).map((d) => `${d.kind} ${d.series}`),
        job_findings: stored.length,
        job_false_findings: s.falseFindings,
        job_false_per_1000_series_days: Number(s.falsePerThousandSeriesDays.toFixed(3)),
        job_goal_met: s.found >= 11 && s.falsePerThousandSeriesDays <= 1 && jobMs < 60_000,
      };
    } finally {
      await closeRuntime(rt);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const job = values['module-only'] ? {} : await runJobOverStore();
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
    ...job,
  }),
);
