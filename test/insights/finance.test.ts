// src/insights/finance.ts and src/insights/focus.ts on hand-worked money edges, without a store (issue 43.1: the
// report's figures are pure). Edges the route tests do not reach: a discount larger than the subtotal (a negative
// line), a difference one unit of the 12th decimal past the 0.01 tolerance, the month-end instant in a timezone
// that changed to summer time during the month, and a FOCUS unit price derived at exactly half of the last place.
import { describe, expect, it } from 'vitest';
import { financeMonth, serverlessLines, serverlessSummary, shapeFinanceReport } from '../../src/insights/finance.js';
import { derivedUnitPrice } from '../../src/insights/focus.js';

describe('the finance report from rows (no store)', () => {
  // USD, March 2026. acme/a: subtotal 1, discount 1.5 (more than the subtotal): total -0.5; the platform says -0.49,
  // difference -0.01 (at the tolerance: not flagged). acme/b: total 2, the platform says 1.989999999999, difference
  // 0.010000000001 (one unit of the 12th place past it: flagged). Subtotal: 15.5 s, 1 s surge, 1 + 2 = 3,
  // 1.5 + 0 = 1.5, -0.5 + 2 = 1.5; summary -0.49 + 1.989999999999 = 1.499999999999; difference 0.000000000001.
  const lines = serverlessLines([
    { app: 'acme/a', machine_type: 'CPU', currency: 'USD', machine_seconds: '10', surge_machine_seconds: '0', subtotal: '1', discount: '1.5', total: '-0.5' },
    { app: 'acme/b', machine_type: 'CPU', currency: 'USD', machine_seconds: '5.5', surge_machine_seconds: '1', subtotal: '2', discount: '0', total: '2' },
  ]);
  const summary = serverlessSummary([
    { app: 'acme/a', machine_type: 'CPU', currency: 'USD', total: '-0.49' },
    { app: 'acme/b', machine_type: 'CPU', currency: 'USD', total: '1.989999999999' },
  ]);
  const report = shapeFinanceReport({
    month: '2026-03',
    timezone: 'UTC',
    from: '2026-03-01',
    to: '2026-04-01',
    monthComplete: true,
    products: [
      { product: 'serverless', lines, comparable: lines, summaryEnd: '2026-04-01', summary },
      { product: 'model_api', lines: [], comparable: [], summaryEnd: null, summary: new Map() },
    ],
    finality: { serverless: { final: true, provisional_days: [] }, model_api: { final: false, provisional_days: ['2026-03-31'] } },
  });

  it('a discount larger than the subtotal is a negative line, reconciled by its exact difference', () => {
    expect(report.rows.map((r) => [r.app, r.subtotal, r.discount, r.total, r.platform_summary_total, r.difference, r.flagged, r.final])).toEqual([
      ['acme/a', '1', '1.5', '-0.5', '-0.49', '-0.01', false, true],
      ['acme/b', '2', '0', '2', '1.989999999999', '0.010000000001', true, true],
    ]);
    expect(report.reconciliation.flagged).toBe(1);
  });

  it('the subtotal and total add the negative line exactly; the total is not final while model APIs are not', () => {
    const figures = (r: (typeof report.totals)[number]) =>
      [r.row_type, r.product, r.machine_seconds, r.surge_machine_seconds, r.subtotal, r.discount, r.total, r.platform_summary_total, r.difference, r.flagged, r.unit, r.quantity, r.final];
    expect([...report.product_totals, ...report.totals].map(figures)).toEqual([
      ['subtotal', 'serverless', '15.5', '1', '3', '1.5', '1.5', '1.499999999999', '0.000000000001', false, 'second', '15.5', true],
      ['total', '', '15.5', '1', '3', '1.5', '1.5', '1.499999999999', '0.000000000001', false, 'second', '15.5', false],
    ]);
    expect([report.month_final, report.provisional_days, report.reconciliation.complete_month]).toEqual([false, ['2026-03-31'], true]);
  });

  it('a month is complete from the first instant of the next in its timezone (Paris: summer time since 29 March)', () => {
    // 2026-04-01T00:00 in Paris (UTC+2) is 2026-03-31T22:00Z.
    expect(financeMonth('2026-03', 'Europe/Paris', new Date('2026-03-31T21:59:59.999Z'))).toEqual({ from: '2026-03-01', to: '2026-04-01', monthComplete: false });
    expect(financeMonth('2026-03', 'Europe/Paris', new Date('2026-03-31T22:00:00.000Z')).monthComplete).toBe(true);
  });
});

describe('the FOCUS unit price derived from a cost (no store)', () => {
  it('rounds exactly half of the 12th place up, and below half down', () => {
    // 0.000000000001 / 2 = 0.0000000000005: half up to 0.000000000001. / 3 = 0.000000000000333...: 0.
    expect(derivedUnitPrice('0.000000000001', '2')).toBe('0.000000000001');
    expect(derivedUnitPrice('0.000000000001', '3')).toBe('0');
    // 0.000000000005 / 0.000000002 = 0.0025 exactly (quantities have 9 places).
    expect(derivedUnitPrice('0.000000000005', '0.000000002')).toBe('0.0025');
    expect(derivedUnitPrice('1', '0')).toBe('0');
  });

  it('rounds a credit (negative cost) as its charge, half away from zero', () => {
    // 2 / 3 = 0.666666666666|67 -> 0.666666666667; the credit is its mirror image (it was cut to -0.666666666666).
    expect(derivedUnitPrice('2', '3')).toBe('0.666666666667');
    expect(derivedUnitPrice('-2', '3')).toBe('-0.666666666667');
    // -0.000000000008 / 5 = -0.0000000000016 -> -0.000000000002 (was -0.000000000001).
    expect(derivedUnitPrice('-0.000000000008', '5')).toBe('-0.000000000002');
    expect(derivedUnitPrice('-0.000000000001', '2')).toBe('-0.000000000001');
    // Below half of the last place a credit is 0, never "-0".
    expect(derivedUnitPrice('-0.000000000001', '3')).toBe('0');
  });
});
