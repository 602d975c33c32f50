// The Prometheus alert rules, checked and unit-tested with promtool (Debian's `prometheus` package; .ci/run
// installs it), and matched against the metrics Tallyhouse registers.
import { execFile } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { itNeeds } from '../support/tools.js';

/** promtool's tests: skipped where it is not installed (unless mandatory, as in CI): test/support/tools.ts. */
const itPromtool = itNeeds(['promtool']);

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = 'dashboards/prometheus/alerts.yml';

async function promtool(...args: string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)('promtool', args, { cwd: ROOT });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number | string; stdout?: string; stderr?: string };
    if (e.code === 'ENOENT') throw new Error("promtool is not installed: install Debian's `prometheus` package (apt-get install prometheus)");
    return { code: Number(e.code), output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('alert rules', () => {
  itPromtool('promtool check rules accepts them', async () => {
    const r = await promtool('check', 'rules', RULES);
    expect(r.output).toMatch(/SUCCESS: 17 rules found/);
    expect(r.code, r.output).toBe(0);
  });

  itPromtool('promtool test rules passes their unit tests', async () => {
    const r = await promtool('test', 'rules', 'dashboards/prometheus/alerts.test.yml');
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/SUCCESS/);
  });

  itPromtool('promtool check config accepts the compose Prometheus configuration with its rule file', async () => {
    // As mounted in the container: the config beside its rules, and the metrics token secret as a file.
    const dir = mkdtempSync(join(tmpdir(), 'th-promcfg-'));
    const secret = join(dir, 'metrics_token');
    writeFileSync(secret, 'a-token-for-the-check');
    const config = readFileSync(`${ROOT}dashboards/prometheus/prometheus.yml`, 'utf8');
    expect(config).toContain('credentials_file: /run/secrets/metrics_token');
    writeFileSync(join(dir, 'prometheus.yml'), config.replace('/run/secrets/metrics_token', secret));
    copyFileSync(`${ROOT}${RULES}`, join(dir, 'alerts.yml'));
    const r = await promtool('check', 'config', join(dir, 'prometheus.yml'));
    expect(r.code, r.output).toBe(0);
    expect(r.output).toMatch(/SUCCESS: 1 rule files found/);
  });

  it('every alert is unit-tested, and names only metrics Tallyhouse registers', () => {
    const rules = parse(readFileSync(`${ROOT}${RULES}`, 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string }> }> };
    const alerts = rules.groups.flatMap((g) => g.rules);
    const tests = readFileSync(`${ROOT}dashboards/prometheus/alerts.test.yml`, 'utf8');
    for (const a of alerts) expect(tests, `a unit test of ${a.alert}`).toContain(`alertname: ${a.alert}\n`);

    const source = sourceFiles(`${ROOT}src`).map((f) => readFileSync(f, 'utf8')).join('\n');
    const metrics = new Set(alerts.flatMap((a) => a.expr.match(/\btallyhouse_\w+/g) ?? []));
    expect(metrics.size).toBeGreaterThanOrEqual(9);
    for (const m of metrics) expect(source, `${m} is registered in src/`).toContain(`name: '${m}'`);
  });
});
