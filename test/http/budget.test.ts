// README: APP_BUDGETS / BUDGET_CURRENCY are exported as tallyhouse_app_budget for the budget alert, beside the
// month-to-date cost gauge. Oracle: the configured literals.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Registry } from 'prom-client';
import type { Runtime } from '../../src/runtime.js';
import { openTestRuntime, closeRuntime } from '../support/store.js';
import { appBudgets, registerBusinessMetrics } from '../../src/http/business-metrics.js';

let rt: Runtime;
beforeAll(async () => {
  rt = await openTestRuntime({ APP_BUDGETS: '{"flux-dev": 1200, "whisper": 85.5}', BUDGET_CURRENCY: 'EUR' });
});
afterAll(async () => {
  await closeRuntime(rt);
});

describe('tallyhouse_app_budget', () => {
  it('one series per configured app, in BUDGET_CURRENCY', async () => {
    const registry = new Registry();
    registerBusinessMetrics({ ...rt, registry }, [appBudgets]);
    const text = await registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('tallyhouse_app_budget{')).sort();
    expect(lines).toEqual(['tallyhouse_app_budget{app="flux-dev",currency="EUR"} 1200', 'tallyhouse_app_budget{app="whisper",currency="EUR"} 85.5']);
  });
});
