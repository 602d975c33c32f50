import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Settings } from 'luxon';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { businessMetricsExtension } from '../../src/http/business-metrics.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { commandLineTarget, SCRAPE_ACCEPT, scrapeTargets, type ScrapeTarget } from '../../src/collectors/scrape.js';
import { Scraper } from '../../src/collectors/scraper.js';
import { queryRows, testConfig } from '../support/store.js';
import { runJob } from '../support/jobs.js';
import { runCli } from '../support/process.js';
import { startPrometheus, type PrometheusServer } from '../support/prometheus.js';
import { nonZero } from '../support/truth.js';
import { describeNeeds } from '../support/tools.js';

// A fixed "now" for the simulator and for the service's month-to-date gauge (which reads luxon's clock), so the
// month the gauge covers has the same data on every run date.
const NOW = '2026-11-21T12:00:00Z';
const realLuxonNow = Settings.now;
let sim: Sim;
let service: Service;
let fixtures: Server;
let fixturesUrl: string;
const bodies = new Map<string, { type: string; body: string; delayMs?: number }>();

beforeAll(async () => {
  Settings.now = () => Date.parse(NOW);
  sim = await startSim({ seed: 3, now: NOW, days: 30, apps: 8 });
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry(),
    extensions: [businessMetricsExtension()],
    // The gauges' "this month" is the service clock's (luxon's Settings.now above no longer reaches it).
    now: () => new Date(NOW),
  });
  fixtures = createServer((req, res) => {
    const f = bodies.get(req.url ?? '');
    if (!f) {
      res.writeHead(404).end();
      return;
    }
    setTimeout(() => {
      res.writeHead(200, { 'content-type': f.type }).end(f.body);
    }, f.delayMs ?? 0);
  });
  await new Promise<void>((r) => fixtures.listen(0, '127.0.0.1', r));
  fixturesUrl = `http://127.0.0.1:${(fixtures.address() as { port: number }).port}`;
});

afterAll(async () => {
  await service?.close();
  await sim?.close();
  await new Promise((r) => fixtures?.close(r));
  Settings.now = realLuxonNow;
});

async function storedFor(target: ScrapeTarget) {
  const [row] = await queryRows<{ n: string }>(
    service,
    `SELECT count() AS n FROM metric_samples s
     WHERE (s.metric, s.fingerprint) IN (SELECT metric, fingerprint FROM metric_series FINAL
                                         WHERE labels['job'] = {job:String} AND labels['instance'] = {instance:String})`,
    { job: target.job, instance: target.instance },
  );
  return Number(row.n);
}

async function lastScrape(target: ScrapeTarget) {
  const [row] = await queryRows<{ up: number; samples: number; error: string }>(
    service,
    'SELECT up, samples, error FROM scrapes WHERE job = {job:String} ORDER BY scraped_at DESC LIMIT 1',
    { job: target.job },
  );
  return row;
}

describe('scrape collector', () => {
  it("stores every sample of the platform's exposition with job and instance labels", async () => {
    const [target] = scrapeTargets(testConfig(), { baseUrl: sim.url, apiKey: sim.keys.api });
    expect(target.url).toBe(`${sim.url}/metrics`);
    expect(target.job).toBe('platform');
    const body = await (await fetch(target.url, { headers: { authorization: `Key ${sim.keys.api}` } })).text();
    // Oracle written apart from the parser: in this exposition every line that is neither blank nor a comment is one
    // sample (no label value spans lines).
    const expected = { length: body.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')).length };
    expect(expected.length).toBeGreaterThan(100);

    const scraper = new Scraper(service, [target]);
    const outcome = await scraper.scrape(target);
    expect(outcome).toMatchObject({ up: true, samples: expected.length, error: '' });
    expect(await storedFor(target)).toBe(expected.length);
    expect(await lastScrape(target)).toMatchObject({ up: 1, samples: expected.length, error: '' });

    // The declared-gauge latency family keeps its le buckets as delivered.
    const [series] = await queryRows<{ type: string; le: string; job: string; instance: string }>(
      service,
      "SELECT type, labels['le'] AS le, labels['job'] AS job, labels['instance'] AS instance FROM metric_series FINAL WHERE metric = 'svc_app_request_latency' LIMIT 1",
    );
    expect(series).toMatchObject({ type: 'gauge', job: 'platform', instance: new URL(sim.url).host });
    expect(series.le).not.toBe('');
  });

  it('a scraped job or instance label is kept as exported_<name>, and NaN/Inf values are stored', async () => {
    bodies.set('/conflict', {
      type: 'text/plain; version=0.0.4',
      body: '# TYPE x gauge\nx{job="theirs",instance="i-1",exported_job="older"} NaN\nx{a="1"} +Inf\nx{a="2"} -Inf\n',
    });
    const target = commandLineTarget(`${fixturesUrl}/conflict`, 'conflict');
    const outcome = await new Scraper(service, [target]).scrape(target);
    expect(outcome.up).toBe(true);
    const rows = await queryRows<{ labels: Record<string, string>; v: string }>(
      service,
      `SELECT s.labels AS labels, toString(m.value) AS v FROM metric_samples m
       JOIN (SELECT fingerprint, labels FROM metric_series FINAL WHERE labels['job'] = 'conflict') s USING fingerprint
       ORDER BY v`,
    );
    expect(rows.map((r) => r.v)).toEqual(['-inf', 'inf', 'nan']);
    const conflicted = rows.find((r) => r.v === 'nan')!.labels;
    expect(conflicted).toEqual({
      job: 'conflict',
      instance: new URL(fixturesUrl).host,
      // As Prometheus' resolveConflictingExposedLabels: exported_job was taken, so the scraped job moves one further.
      exported_job: 'older',
      exported_exported_job: 'theirs',
      exported_instance: 'i-1',
    });
  });

  it.each([
    ['a malformed exposition', '/bad', { type: 'text/plain', body: 'ok 1\nbroken{ 2\n' }, /line 2: /],
    ['a timeout', '/slow', { type: 'text/plain', body: 'ok 1\n', delayMs: 1500 }, /deadline exceeded/],
    ['a sample limit', '/many', { type: 'text/plain', body: 'a 1\nb 2\nc 3\n' }, /sample limit exceeded: 3 samples, limit 2/],
    ['a body size limit', '/big', { type: 'text/plain', body: `big ${'1'.repeat(300)}\n` }, /body size limit exceeded/],
  ] as const)('%s stores up = 0 with the reason and no sample', async (_name, path, fixture, reason) => {
    bodies.set(path, fixture);
    // Only the timeout case has a short deadline: the others must fail for their own reason on a slow machine too.
    const timeoutMs = path === '/slow' ? 500 : 60_000;
    const target: ScrapeTarget = { ...commandLineTarget(`${fixturesUrl}${path}`, `fail${path.replace('/', '-')}`), timeoutMs, sampleLimit: 2, bodySizeLimitBytes: 200 };
    const outcome = await new Scraper(service, [target]).scrape(target);
    expect(outcome.up).toBe(false);
    expect(outcome.error).toMatch(reason);
    const row = await lastScrape(target);
    expect(row.up).toBe(0);
    expect(row.samples).toBe(0);
    expect(row.error).toMatch(reason);
    expect(await storedFor(target)).toBe(0);
  });

  it('the CLI dry run prints NDJSON with non-finite values as strings; a rejected exposition exits 1 with the line', async () => {
    bodies.set('/om', {
      type: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
      body: '# TYPE t counter\n# HELP t Things.\nt_total{k="v"} 3 1700000000.5\nt_created{k="v"} 1.6e9\n# TYPE g gauge\ng NaN\n# EOF\n',
    });
    const ok = runCli(['scrape', '--target', `${fixturesUrl}/om`, '--dry-run']);
    expect((await ok.exited).code).toBe(0);
    const lines = ok.stdout().trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toEqual([
      { name: 't_total', labels: { k: 'v' }, value: 3, timestamp_ms: 1700000000500, type: 'counter', help: 'Things.' },
      { name: 't_created', labels: { k: 'v' }, value: 1.6e9, timestamp_ms: null, type: 'counter', help: 'Things.' },
      { name: 'g', labels: {}, value: 'NaN', timestamp_ms: null, type: 'gauge', help: null },
    ]);
    const bad = runCli(['scrape', '--target', `${fixturesUrl}/bad`, '--dry-run']);
    expect((await bad.exited).code).toBe(1);
    expect(bad.stderr()).toMatch(/line 2: /);
    expect(bad.stdout()).toBe('');
  });
});

describeNeeds(['prometheus'])('with a real Prometheus server', () => {
  let prometheus: PrometheusServer;
  afterAll(async () => {
    await prometheus?.close();
  });

  it('scrapes Tallyhouse (up == 1, a business gauge), and we store exactly scrape_samples_scraped of a real exporter', async () => {
    // October's last days are collected too: the gauge must leave them out.
    const run = await runJob(service, sim, 'usage', { from: '2026-10-25', to: '2026-11-22', timezone: 'UTC' });
    expect(run.status, run.error).toBe('ok');
    // A real exporter nobody here wrote: Prometheus' own exposition, served as a fixed body so both scrapers see
    // the same bytes. Taken from a first Prometheus with the Accept header Prometheus itself sends.
    const first = await startPrometheus(`  - job_name: self\n    static_configs:\n      - targets: ['127.0.0.1:1']\n`);
    const self = await fetch(`${first.url}/metrics`, { headers: { accept: SCRAPE_ACCEPT } });
    bodies.set('/prometheus-metrics', { type: self.headers.get('content-type') ?? 'text/plain', body: await self.text() });
    await first.close();

    const tallyhouse = new URL(service.url).host;
    const fixtureHost = new URL(fixturesUrl).host;
    prometheus = await startPrometheus(
      // As the compose file's Prometheus: no honor_labels, Tallyhouse exports no job/instance label of its own (the
      // collector's name is job_name), so job and instance are the target's.
      `  - job_name: tallyhouse\n    static_configs:\n      - targets: ['${tallyhouse}']\n` +
        `  - job_name: exporter\n    metrics_path: /prometheus-metrics\n    static_configs:\n      - targets: ['${fixtureHost}']\n`,
    );
    const up = await prometheus.waitFor('up{job="tallyhouse"}', (r) => r[0].value[1] === '1');
    expect(up[0].value[1]).toBe('1');
    const age = await prometheus.waitFor('tallyhouse_job_last_success_age_seconds{job_name="usage", job="tallyhouse"}');
    // The gauge counts from the run's end as job_runs recorded it, up to the moment Prometheus evaluated the query
    // (its own timestamp on the answer): no clock of this test in the comparison.
    const [finished] = await queryRows<{ ms: string }>(service, "SELECT toUnixTimestamp64Milli(max(finished_at)) AS ms FROM job_runs WHERE job = 'usage' AND status = 'ok'");
    expect(Number(age[0].value[1])).toBeGreaterThanOrEqual(0);
    expect(Number(age[0].value[1])).toBeLessThanOrEqual(Number(age[0].value[0]) - Number(finished.ms) / 1000 + 1e-3);

    // Month-to-date cost per app as Prometheus read it, to the nano-dollar against the simulator's truth for
    // November (UTC, the first TIMEZONES zone) up to NOW (the day of NOW is partial in both). The exposition carries a float64; Math.round(v * 1e9)
    // recovers the exact nanos of amounts below 2^53 nanos (about 9 million dollars).
    const truth = new Map<string, bigint>();
    for (const r of sim.truth.usage({ from: '2026-11-01', to: '2026-11-22', timezone: 'UTC', timeframe: 'day' })) {
      truth.set(r.app, (truth.get(r.app) ?? 0n) + BigInt(r.cost_total_nanos));
    }
    nonZero(truth, 'November cost per app', ([, v]) => v);
    const expected = [...truth].filter(([, v]) => v !== 0n).sort(([a], [b]) => a.localeCompare(b));
    const cost = await prometheus.waitFor('tallyhouse_usage_month_to_date_cost{currency="USD",timezone="UTC"}');
    const got = cost
      .map((r) => [r.metric.app, BigInt(Math.round(Number(r.value[1]) * 1e9))] as const)
      .filter(([, v]) => v !== 0n)
      .sort(([a], [b]) => a.localeCompare(b));
    expect(got).toEqual(expected);

    const scraped = await prometheus.waitFor('scrape_samples_scraped{job="exporter"}');
    const promCount = Number(scraped[0].value[1]);
    expect(promCount).toBeGreaterThan(100);
    const target = commandLineTarget(`${fixturesUrl}/prometheus-metrics`, 'exporter');
    const outcome = await new Scraper(service, [target]).scrape(target);
    expect(outcome.up).toBe(true);
    expect(await storedFor(target)).toBe(promCount);
  });
});
