// Issue 28.8: serverless usage the platform reports without an app (`app` null, stored as '') is related to no
// resource: in the FOCUS 1.2 file its ResourceId, ResourceName and ResourceType are null (resourcetype.md: "MUST
// be null when ResourceId is null") and its ChargeDescription does not end in "of app ". Oracles: the spec-derived
// checker (test/support/focus/check.ts) and hand-worked literals for the seeded rows.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse as parseCsv } from 'csv-parse/sync';
import { focusReport, focusTable } from '../../src/api/focus.js';
import { toCsv } from '../../src/api/http.js';
import type { Runtime } from '../../src/runtime.js';
import { usageBuckets } from '../../src/store/tables/usage-buckets.js';
import { closeRuntime, openTestRuntime } from '../support/store.js';
import { usageDayRow } from '../support/rows.js';
import { checkFocusCsv } from '../support/focus/check.js';

const OPTS = { billingAccountId: 'acct-1', billingAccountName: 'Acme', providerName: 'Svc', now: new Date('2026-12-02T06:00:00Z') };
let rt: Runtime;

beforeAll(async () => {
  rt = await openTestRuntime();
  const rows = [
    // An app's CPU time: 3600 s at 0.0005 list, 10 % off: 1.62 billed.
    usageDayRow('2026-03-02', { app: 'acme/web', quantity: '3600', unit_price: '0.0005', percent_discount: '10', cost_subtotal: '1.8', cost_discount: '0.18', cost_total: '1.62' }),
    // GPU time the platform reports with no app: 120 s at 0.001, no discount: 0.12 billed.
    usageDayRow('2026-03-02', { app: '', machine_type: 'GPU-A100', quantity: '120', unit_price: '0.001', cost_subtotal: '0.12', cost_discount: '0', cost_total: '0.12' }),
  ];
  const written = rt.writer.insert(usageBuckets, rows);
  await rt.writer.flush(usageBuckets);
  await written;
});
afterAll(async () => {
  if (rt) await closeRuntime(rt);
});

describe('FOCUS export of app-less serverless usage', () => {
  it('a row with no app has null ResourceId, ResourceName and ResourceType and a description that says so; the file passes the FOCUS 1.2 check', async () => {
    const text = toCsv(focusTable(await focusReport(rt.store, '2026-03', OPTS)));
    expect(checkFocusCsv(text)).toEqual([]);
    const rows = parseCsv(text, { columns: true }) as Array<Record<string, string>>;
    expect(rows).toHaveLength(2);
    const pick = (r: Record<string, string>) => ({
      ResourceId: r.ResourceId,
      ResourceName: r.ResourceName,
      ResourceType: r.ResourceType,
      ChargeDescription: r.ChargeDescription,
      BilledCost: r.BilledCost,
    });
    const appless = rows.find((r) => r.x_MachineType === 'GPU-A100')!;
    const app = rows.find((r) => r.x_MachineType === 'CPU')!;
    expect(pick(appless)).toEqual({ ResourceId: '', ResourceName: '', ResourceType: '', ChargeDescription: 'GPU-A100 machine time not attributed to an app', BilledCost: '0.12' });
    expect(pick(app)).toEqual({ ResourceId: 'acme/web', ResourceName: 'acme/web', ResourceType: 'Serverless App', ChargeDescription: 'CPU machine time of app acme/web', BilledCost: '1.62' });
  });
});
