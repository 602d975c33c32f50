// Issue 49.7: with API_TOKENS set and METRICS_TOKEN unset, /metrics (cost per app, budgets) answers any local
// process; start-up says so (a warn line naming METRICS_TOKEN), and says nothing once METRICS_TOKEN is set too.
import { describe, expect, it } from 'vitest';
import { startService } from '../src/service.js';
import { createRegistry } from '../src/metrics.js';
import { captureLog } from './support/log-capture.js';
import { testConfig } from './support/store.js';

const TOKEN = 'api-token-0123456789abcdef';

async function warningsAtStart(env: Record<string, string>): Promise<Record<string, unknown>[]> {
  const log = captureLog('warn');
  const service = await startService(testConfig({ PORT: '0', JOBS_ENABLED: 'false', SVC_API_KEY: 'api-key-0123456789', ...env }), {
    logger: log.logger,
    registry: createRegistry({ defaultMetrics: false }),
  });
  // The claim itself: /metrics answers without a token.
  const status = (await fetch(`${service.url}/metrics`)).status;
  await service.close();
  return log.lines.filter((l) => l.variable === 'METRICS_TOKEN').map((l) => ({ level: l.level, status }));
}

describe('start-up warning for /metrics without a token', () => {
  it('API_TOKENS set, METRICS_TOKEN unset: one warn line naming METRICS_TOKEN, and /metrics indeed answers 200 without a token', async () => {
    expect(await warningsAtStart({ API_TOKENS: TOKEN })).toEqual([{ level: 40, status: 200 }]);
  }, 60_000);

  it('both set, or neither: no such line', async () => {
    expect(await warningsAtStart({ API_TOKENS: TOKEN, METRICS_TOKEN: 'metrics-token-0123456789' })).toEqual([]);
    expect(await warningsAtStart({})).toEqual([]);
  }, 60_000);
});
