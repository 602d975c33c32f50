// README claims that no other test checked (issue 20): several bad variables named at once; /readyz 503 with its
// reason; the query API on loopback only without API_TOKENS, refused otherwise; CSV from /cost; JOB_<NAME>_CRON
// as the schedule; USAGE_RECOLLECT_DAYS as the reach of a scheduled usage run. Oracles: literals from the README.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { startService, type Service } from '../src/service.js';
import { apiExtension } from '../src/api/index.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { ConfigError } from '../src/config.js';
import { Scheduler } from '../src/jobs/scheduler.js';
import { allJobs } from '../jobs/index.js';
import { startSim, type Sim } from '../src/sim/index.js';
import { runCli } from './support/process.js';
import { testConfig, tempDataDir } from './support/store.js';
import { runJob, simClient } from './support/jobs.js';

let service: Service;
let sim: Sim;
beforeAll(async () => {
  sim = await startSim({ seed: 3, now: '2026-11-05T12:00:00Z', days: 30, apps: 8 });
  service = await startService(testConfig({ PORT: '0', USAGE_RECOLLECT_DAYS: '10', JOB_USAGE_CRON: '*/7 * * * *', JOB_RUNNER_METRICS_CRON: '*/11 * * * *' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension()],
  });
});
afterAll(async () => {
  await service?.close();
  await sim?.close();
});

describe('README claims', () => {
  it('configuration errors name every bad variable at once, exit 2, before anything opens', async () => {
    const cli = runCli(['serve'], { PORT: 'eighty', TIMEZONES: 'Mars/Olympus_Mons', LOG_LEVEL: 'loud', DATA_DIR: tempDataDir() });
    const { code } = await cli.exited;
    expect(code).toBe(2);
    for (const name of ['PORT', 'TIMEZONES', 'LOG_LEVEL']) expect(cli.stderr()).toContain(name);
  });

  it('/readyz answers 503 naming a migration that is not applied, and 200 once it is', async () => {
    const [last] = (await (
      await service.store.client.query({ query: 'SELECT * FROM schema_migrations ORDER BY version DESC LIMIT 1', format: 'JSONEachRow' })
    ).json()) as Array<Record<string, unknown>>;
    await service.store.client.command({ query: `ALTER TABLE schema_migrations DELETE WHERE version = ${Number(last.version)} SETTINGS mutations_sync = 1` });
    const down = await fetch(`${service.url}/readyz`);
    expect(down.status).toBe(503);
    expect(down.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    const body = (await down.json()) as { status: number; type: string; detail: string; reason: string };
    expect(body).toMatchObject({ status: 503, type: 'urn:tallyhouse:problem:not_ready', detail: `migrations not applied: ${String(last.name)}` });
    expect(body.reason).toBe(`migrations not applied: ${String(last.name)}`);
    // The record back (as written first; deduplication off, since the very same row was inserted before).
    await service.store.client.insert({ table: 'schema_migrations', values: [last], format: 'JSONEachRow', clickhouse_settings: { insert_deduplicate: 0 } });
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it('the query API answers on loopback without API_TOKENS, and refuses to start on another address without them', async () => {
    expect((await fetch(`${service.url}/api/v1`)).status).toBe(200);
    const open = startService(testConfig({ PORT: '0', HOST: '0.0.0.0', METRICS_TOKEN: 'metrics-token-0123456789' }), {
      logger: createLogger('silent'),
      registry: createRegistry({ defaultMetrics: false }),
      extensions: [apiExtension()],
    });
    const err = await open.then(
      async (s) => {
        await s.close();
        return null;
      },
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ConfigError);
    expect(String((err as Error).message)).toContain('API_TOKENS');
  });

  it('GET /cost answers CSV (format=csv) with a header row and the JSON rows\' amounts', async () => {
    const run = await runJob(service, sim, 'usage', { from: '2026-10-01', to: '2026-11-05', timezone: 'UTC' });
    expect(run.status, run.error).toBe('ok');
    const q = 'from=2026-10-01&to=2026-11-01&timezone=UTC&group_by=app';
    const json = (await (await fetch(`${service.url}/api/v1/cost?${q}`)).json()) as { rows: Array<Record<string, unknown>> };
    const res = await fetch(`${service.url}/api/v1/cost?${q}&format=csv`);
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    const records = parseCsv(await res.text(), { columns: true }) as Array<Record<string, string>>;
    expect(json.rows.length).toBeGreaterThan(3);
    expect(records.map((r) => [r.app, r.cost, r.currency])).toEqual(json.rows.map((r) => [r.app, String(r.cost), r.currency]));
    expect(records.every((r) => Number(r.cost) >= 0 && r.cost !== '')).toBe(true);
  });

  it('JOB_<NAME>_CRON is the schedule the scheduler uses (and the interval gauge reports)', () => {
    const scheduler = new Scheduler({ runtime: service, platform: simClient(sim), jobs: allJobs, now: () => sim.clock.now() });
    expect(scheduler.cronFor(allJobs.find((j) => j.name === 'usage')!)).toBe('*/7 * * * *');
    expect(scheduler.cronFor(allJobs.find((j) => j.name === 'events')!)).toBe(allJobs.find((j) => j.name === 'events')!.defaultCron);
    // A '-' in a job name is '_' in the variable.
    expect(scheduler.cronFor(allJobs.find((j) => j.name === 'runner-metrics')!)).toBe('*/11 * * * *');
  });

  it('USAGE_RECOLLECT_DAYS: a scheduled usage run on 5 November with 10 days reaches back into October', async () => {
    const since = sim.requestLog().length;
    const run = await runJob(service, sim, 'usage');
    expect(run.status, run.error).toBe('ok');
    const starts = new Set(sim.requestLog().slice(since).filter((c) => c.path === '/v1/serverless/usage').map((c) => String(c.query.start).slice(0, 10)));
    // 5 November minus 10 days is 26 October: the run collects October from its first day, then November.
    expect([...starts].sort()).toEqual(['2026-10-01', '2026-11-01']);
  });
});
