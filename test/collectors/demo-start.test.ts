import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';
import { closeRuntime, openTestRuntime, queryRows } from '../support/store.js';

// Its own file: this process opens the store the service child wrote, and chDB allows one data
// directory per process.
describe('npm start on a fresh data directory', () => {
  it('runs in demo mode on the built-in simulator and stores usage rows (waits bounded by 120 s each: a state, not a timing)', async () => {
    const freshDir = mkdtempSync(join(tmpdir(), 'th-demo-'));
    // The shutdown deadline is not under test (CI's loaded run once took past the default 10 s: exit 1).
    const serve = runCli(['serve'], { PORT: '0', DATA_DIR: freshDir, SVC_API_KEY: '', SVC_ADMIN_KEY: '', SHUTDOWN_TIMEOUT_MS: '120000' });
    let metrics = '';
    try {
      const [, url] = await serve.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/, 120_000);
      await serve.waitFor(/demo mode: no platform key configured/, 120_000);
      await serve.waitFor(/"job":"usage"[^\n]*"msg":"job finished"/, 120_000);
      await serve.waitFor(/"job":"tallyhouse"[^\n]*"msg":"scrape target scheduled"/, 120_000);
      // The simulator pushes its log lines and webhooks to the service as its clock runs (every few seconds):
      // wait until the service has replayed drain lines into the store and stored a webhook.
      const accepted = (text: string) =>
        /^tallyhouse_drain_replayed_lines_total [1-9]/m.test(text) && /^tallyhouse_webhooks_total\{outcome="accepted"\} [1-9]/m.test(text);
      while (!accepted(metrics)) {
        await new Promise((r) => setTimeout(r, 250));
        metrics = await (await fetch(`${url}/metrics`)).text();
      }
    } finally {
      serve.child.kill('SIGTERM');
    }
    // The signal too: a native crash at exit shows as { code: null, signal: 'SIGSEGV' }.
    expect(await serve.exited, serve.stdout().slice(-2000)).toEqual({ code: 0, signal: null });

    // Tallyhouse's own /metrics with demo data: business gauges present, and promtool finds nothing to lint.
    expect(metrics).toMatch(/^tallyhouse_usage_month_to_date_cost\{app="[^"]+",currency="USD",timezone="UTC"\} \d+(\.\d+)?$/m);
    expect(metrics).toMatch(/^tallyhouse_job_last_success_age_seconds\{job_name="usage"\} /m);
    const file = join(freshDir, 'metrics.txt');
    writeFileSync(file, metrics);
    const lint = execFileSync('sh', ['-c', `promtool check metrics < ${file} 2>&1; echo "rc=$?"`]).toString();
    expect(lint.trim()).toBe('rc=0');
    const rt = await openTestRuntime({ DATA_DIR: freshDir, CLICKHOUSE_DATABASE: 'tallyhouse' });
    try {
      const [row] = await queryRows<{ n: string; apps: string }>(
        rt,
        "SELECT count() AS n, uniqExact(app) AS apps FROM usage_buckets FINAL WHERE timezone = 'UTC'",
      );
      expect(Number(row.n)).toBeGreaterThan(0);
      expect(Number(row.apps)).toBeGreaterThanOrEqual(50);
      // The platform's exposition and Tallyhouse's own /metrics were scraped into the store.
      const scraped = await queryRows<{ job: string; up: number; samples: string }>(
        rt,
        'SELECT job, max(up) AS up, max(samples) AS samples FROM scrapes GROUP BY job ORDER BY job',
      );
      expect(scraped.map((s) => [s.job, s.up])).toEqual([
        ['platform', 1],
        ['tallyhouse', 1],
      ]);
      expect(scraped.every((s) => Number(s.samples) > 10)).toBe(true);
      // Drain lines (signed with the demo secret) and verified webhooks landed.
      const [pushed] = await queryRows<{ lines: string; webhooks: string }>(
        rt,
        'SELECT (SELECT count() FROM logs) AS lines, (SELECT count() FROM webhook_deliveries) AS webhooks',
      );
      expect(Number(pushed.lines)).toBeGreaterThan(0);
      expect(Number(pushed.webhooks)).toBeGreaterThan(0);
    } finally {
      await closeRuntime(rt);
    }
  });
});
