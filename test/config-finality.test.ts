// Issue 44.4: USAGE_RECOLLECT_DAYS below 3 (with the 48-hour late-billing window) or LATE_BILLING_WINDOW_HOURS of
// 72 or more (with 3 days) kept a month's last days provisional for ever, and nothing checked the two together: a
// month's last day is re-collected until USAGE_RECOLLECT_DAYS days after it, and final only after a collection
// made once its late-billing window has passed.
import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';

function problem(env: Record<string, string>): string | undefined {
  try {
    parseConfig(env);
    return undefined;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return err.message;
  }
}

describe('the finality settings, checked together at start', () => {
  it.each([
    [{ USAGE_RECOLLECT_DAYS: '2' }, 'LATE_BILLING_WINDOW_HOURS 48 < 24 × USAGE_RECOLLECT_DAYS 2', 'raise USAGE_RECOLLECT_DAYS to 3 or lower LATE_BILLING_WINDOW_HOURS below 48'],
    [{ LATE_BILLING_WINDOW_HOURS: '72' }, 'LATE_BILLING_WINDOW_HOURS 72 < 24 × USAGE_RECOLLECT_DAYS 3', 'raise USAGE_RECOLLECT_DAYS to 4 or lower LATE_BILLING_WINDOW_HOURS below 72'],
    [{ USAGE_RECOLLECT_DAYS: '0', LATE_BILLING_WINDOW_HOURS: '0' }, 'LATE_BILLING_WINDOW_HOURS 0 < 24 × USAGE_RECOLLECT_DAYS 0', 'raise USAGE_RECOLLECT_DAYS to 1 or lower LATE_BILLING_WINDOW_HOURS below 0'],
  ])('%j is a configuration error naming both', (env, wanted, fix) => {
    expect(problem(env)).toBe(
      `invalid configuration: USAGE_RECOLLECT_DAYS / LATE_BILLING_WINDOW_HOURS: a re-collection window longer than the late-billing window (${wanted}), else a month's last days are never collected after their late-billing window and stay provisional for ever: ${fix}`,
    );
  });

  it.each([[{}], [{ LATE_BILLING_WINDOW_HOURS: '71' }], [{ USAGE_RECOLLECT_DAYS: '5', LATE_BILLING_WINDOW_HOURS: '119' }], [{ USAGE_RECOLLECT_DAYS: '1', LATE_BILLING_WINDOW_HOURS: '0' }]])(
    '%j is accepted (the defaults included)',
    (env) => {
      expect(problem(env)).toBeUndefined();
    },
  );
});
