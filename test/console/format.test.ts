// The console shows money from the API's exact decimal text, rounded to cents by string arithmetic (never a float):
// hand-worked cases, including values a float would round the wrong way, and the exact ordering used for "top".
import { describe, expect, it } from 'vitest';

interface Format {
  formatDecimal(text: string, places?: number): string;
  formatMoney(text: string, currency: string): string;
  formatDelta(text: string, currency: string): string;
  compareDecimal(a: string, b: string): number;
  previousMonthStart(day: string): string;
  addDays(day: string, n: number): string;
}
const f = (await import('../../console/format.js' as string)) as Format;

describe('console money formatting', () => {
  it.each([
    ['0', '0.00'],
    ['2793.191692614', '2,793.19'],
    ['1234567.005', '1,234,567.01'],
    // 1.005 as a float is 1.00499999999999989...: toFixed(2) gives 1.00; the decimal text rounds half up to 1.01.
    ['1.005', '1.01'],
    ['8.675', '8.68'],
    ['-281.743459375', '-281.74'],
    ['-0.004', '0.00'],
    ['-0.005', '-0.01'],
    ['999.995', '1,000.00'],
    ['12', '12.00'],
    ['0.1', '0.10'],
    ['123456789012345678.129', '123,456,789,012,345,678.13'],
  ])('%s is shown as %s', (text, shown) => {
    expect(f.formatDecimal(text)).toBe(shown);
  });

  it('names the currency, and signs a difference', () => {
    expect(f.formatMoney('5.22', 'EUR')).toBe('EUR 5.22');
    expect(f.formatDelta('-2251.5', 'USD')).toBe('-USD 2,251.50');
    expect(f.formatDelta('9.876', 'USD')).toBe('+USD 9.88');
  });

  it('orders decimal text exactly, beyond a float’s precision', () => {
    expect(f.compareDecimal('0.30000000000000001', '0.3')).toBe(1);
    expect(f.compareDecimal('9007199254740993', '9007199254740992')).toBe(1);
    expect(f.compareDecimal('-1.5', '-1.25')).toBe(-1);
    expect(f.compareDecimal('2.50', '2.5')).toBe(0);
    expect(['10', '9.99', '100.1', '-3'].sort((a, b) => f.compareDecimal(b, a))).toEqual(['100.1', '10', '9.99', '-3']);
  });

  it('date arithmetic for the default periods', () => {
    expect(f.previousMonthStart('2026-01-01')).toBe('2025-12-01');
    expect(f.previousMonthStart('2026-11-01')).toBe('2026-10-01');
    expect(f.addDays('2026-02-28', 1)).toBe('2026-03-01');
  });
});
