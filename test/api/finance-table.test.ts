// Issue 30.14: the finance CSV as a reader opens it: `product` second (it was the 14th column), machine-seconds
// empty on model API rows (they read as 0 seconds). Hand-built rows; the CSV is parsed back by csv-parse.
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import { financeTable } from '../../src/api/finance.js';
import type { FinanceReport } from '../../src/insights/finance.js';
import { toCsv } from '../../src/api/http.js';

const common = { platform_summary_total: null, difference: null, flagged: false, month_complete: true, subtotal: '2', discount: '0', total: '2', currency: 'USD' };
const report = {
  rows: [
    { ...common, row_type: 'item', product: 'serverless', app: 'acme/a', machine_type: 'GPU-H100', endpoint_id: '', unit: 'machine-second', quantity: '10', api_key: '', machine_seconds: '10', surge_machine_seconds: '1' },
    { ...common, row_type: 'item', product: 'model_api', app: '', machine_type: '', endpoint_id: 'svc-ai/flux', unit: 'image', quantity: '4', api_key: 'k1', machine_seconds: '0', surge_machine_seconds: '0' },
  ],
  product_totals: [],
  totals: [],
} as unknown as FinanceReport;

describe('the finance CSV', () => {
  it('has product second and leaves machine-seconds empty on model API rows', () => {
    const [header, serverless, model] = parse(toCsv(financeTable(report))) as string[][];
    expect(header.slice(0, 3)).toEqual(['row_type', 'product', 'app']);
    const at = (row: string[], column: string) => row[header.indexOf(column)];
    expect([at(serverless, 'product'), at(serverless, 'machine_seconds'), at(serverless, 'surge_machine_seconds')]).toEqual(['serverless', '10', '1']);
    expect([at(model, 'product'), at(model, 'machine_seconds'), at(model, 'surge_machine_seconds'), at(model, 'quantity')]).toEqual(['model_api', '', '', '4']);
    // JSON keeps the report as it is.
    expect(report.rows[1].machine_seconds).toBe('0');
  });
});
