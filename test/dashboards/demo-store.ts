import { startService, type Service } from '../../src/service.js';
import { businessMetricsExtension } from '../../src/http/business-metrics.js';
import { logDrainExtension } from '../../src/ingest/drain/extension.js';
import { webhookExtension } from '../../src/ingest/webhooks.js';
import { faroExtension, FARO_PATH } from '../../src/ingest/faro/extension.js';
import type { SpoolReplayer } from '../../src/ingest/drain/replay.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { startSim, type Sim } from '../../src/sim/index.js';
import { commandLineTarget } from '../../src/collectors/scrape.js';
import { Scraper } from '../../src/collectors/scraper.js';
import { allJobs } from '../../jobs/index.js';
import { testConfig } from '../support/store.js';
import { anomalies } from '../../src/store/tables/anomalies.js';
import { toDateTime64 } from '../../src/values.js';
import { runJob, simClient } from '../support/jobs.js';

const DRAIN_SECRET = 'd'.repeat(64);
const FARO_KEY = 'demo-faro-key-0123456789';

export interface DemoStore {
  service: Service;
  sim: Sim;
  /** "now" for the dashboards' time ranges: the wall clock (= the simulator's clock) once the store is filled. */
  nowMs: number;
  /** What the simulator pushed through the drain. */
  drain: { linesSent: number; malformed: number };
  close(): Promise<void>;
}

/**
 * A store filled the way production fills it: every scheduled job run against a small simulator whose "now" is
 * the wall clock (scrapes and job runs carry real timestamps), the simulator's log drain pushed through the
 * service's drain endpoint (with some malformed lines, so rejects exist), one failed job run (a revoked key), and a
 * few scrapes: the platform's exposition, Tallyhouse's own /metrics (the source of the spool panel) and a target
 * that is down.
 */
export async function openDemoStore(): Promise<DemoStore> {
  // wall-clock: the drain stamps what it receives with the machine's clock, and Grafana's time macros read it
  const now = new Date();
  let replayer: SpoolReplayer | undefined;
  const config = testConfig({ PORT: '0', LOG_DRAIN_SECRET: DRAIN_SECRET, JOBS_ENABLED: 'false', TIMEZONES: 'UTC,America/New_York', FARO_APP_KEYS: `demo-web=${FARO_KEY}` });
  const service = await startService(config, {
    logger: createLogger(config.LOG_LEVEL),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [
      businessMetricsExtension(),
      logDrainExtension({ onStarted: (d) => (replayer = d.replayer) }),
      webhookExtension({ jwksUrl: () => `${simUrl}/.well-known/jwks.json` }),
      faroExtension(),
    ],
  });
  let drain = { linesSent: 0, malformed: 0 };
  let simUrl = '';
  const sim = await startSim({ seed: 11, now, days: 7, apps: 8, drainUrl: `${service.url}/v1/drains/logs`, drainSecret: DRAIN_SECRET });
  simUrl = sim.url;
  try {
    for (const job of allJobs) {
      const run = await runJob(service, sim, job.name);
      if (run.status !== 'ok') throw new Error(`job ${job.name}: ${run.error}`);
    }
    // A scheduled usage run reaches back to the 1st of the month (or 3 days): backfill the simulator's whole
    // history too, so the cost panels see every day whatever today's date.
    const day = (ms: number) => new Date(ms).toISOString().slice(0, 10);
    const backfill = await runJob(service, sim, 'usage', { from: day(now.getTime() - 8 * 86_400_000), to: day(now.getTime() + 2 * 86_400_000) });
    if (backfill.status !== 'ok') throw new Error(`usage backfill: ${backfill.error}`);
    // A run with a key the platform does not know: a failed run, as after a key rotation.
    const refused = simClient(sim, { api: 'revoked-key', admin: 'revoked-key' });
    const failed = await runJob(service, sim, 'usage', {}, { platform: refused });
    await refused.close();
    if (failed.status !== 'failed') throw new Error('a usage run with a revoked key should fail');
    const pushed = await sim.drain.push({ from: now.getTime() - 6 * 3_600_000, to: now.getTime(), batchSize: 2000, malformedRate: 0.01 });
    if (pushed.linesAcknowledged !== pushed.linesSent) throw new Error(`drain: ${pushed.linesAcknowledged} of ${pushed.linesSent} lines acknowledged`);
    drain = { linesSent: pushed.linesSent, malformed: pushed.malformed.length };
    await replayer!.whenReplayed();
    // The simulated front end's sessions of the last 6 hours (Faro payloads naming collected requests).
    for (const payload of sim.frontEnd.payloads(now.getTime() - 6 * 3_600_000, now.getTime())) {
      const res = await fetch(`${service.url}${FARO_PATH}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': FARO_KEY }, body: JSON.stringify(payload) });
      if (res.status !== 202) throw new Error(`faro: ${res.status} ${await res.text()}`);
    }
    // Queue webhooks of failed requests (their error types feed the Errors dashboard), verified by the receiver.
    const failedRequests = sim.truth
      .apps()
      .filter((a) => a.owned_by_caller)
      .flatMap((a) => sim.truth.requestList({ endpointId: a.endpoint_id, from: new Date(now.getTime() - 86_400_000).toISOString(), to: now.toISOString() }))
      .filter((r) => r.status_code >= 400)
      .slice(0, 20);
    for (const r of failedRequests) {
      const d = await sim.webhooks.deliver({ requestId: r.request_id, url: `${service.url}/v1/webhooks/queue` });
      if (d.outcome !== 'delivered') throw new Error(`webhook ${r.request_id}: ${d.outcome}`);
    }
    const targets = [commandLineTarget(`${sim.url}/metrics`, 'platform', { authorization: `Key ${sim.keys.api}` }), commandLineTarget(`${service.url}/metrics`, 'tallyhouse')];
    // A target that is down (nothing listens on port 1).
    const down = { ...commandLineTarget('http://127.0.0.1:1/metrics', 'gone'), timeoutMs: 1000 };
    const scraper = new Scraper(service, [...targets, down]);
    for (let i = 0; i < 3; i++) {
      for (const t of targets) {
        const outcome = await scraper.scrape(t);
        if (!outcome.up) throw new Error(`scrape ${t.url}: ${outcome.error}`);
      }
    }
    if ((await scraper.scrape(down)).up) throw new Error('the scrape of a closed port should fail');
    // The anomalies job judges against four weeks of history, more than this world's 7 days: two findings as it
    // writes them (a cost day and an error-rate hour of a simulated app), for the Cost and Errors annotations.
    const endpoint = sim.truth.apps().find((a) => a.owned_by_caller)!.endpoint_id;
    const finding = { expected: 1, expected_low: 0, expected_high: 2, score: 9, direction: 'up', version: 1, is_deleted: 0, evaluated_at: toDateTime64(now) };
    const bucket = toDateTime64(new Date(Math.floor(now.getTime() / 3_600_000) * 3_600_000 - 3 * 3_600_000));
    const seeded = service.writer.insert(anomalies, [
      { ...finding, series_kind: 'app', series_id: endpoint, measure: 'cost', grain: 'day', unit: 'USD', bucket, finding_id: 'demo-cost', actual: 20, summary: `cost of app ${endpoint}: 20 USD, expected 1 (0-2), up, score 9.0`, explanation: 'volume effect +19 USD' },
      { ...finding, series_kind: 'endpoint', series_id: endpoint, measure: 'error_rate', grain: 'hour', unit: 'ratio', bucket, finding_id: 'demo-errors', expected: 0.01, expected_high: 0.05, actual: 0.4, summary: `error rate of endpoint ${endpoint}: 0.4, expected 0.01 (0-0.05), up, score 9.0`, explanation: '' },
    ]);
    await service.writer.flush();
    await seeded;
    await service.writer.flush();
  } catch (err) {
    await sim.close();
    await service.close();
    throw err;
  }
  return {
    service,
    sim,
    // A second on: the time macros cut to whole seconds, and everything above happened within the last one.
    // wall-clock: the drain stamps what it receives with the machine's clock, and Grafana's time macros read it
    nowMs: Date.now() + 1000,
    drain,
    async close() {
      await sim.close();
      await service.close();
    },
  };
}
