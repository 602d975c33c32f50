import { describe, expect, it } from 'vitest';
import { schedulingHints } from '../../src/insights/scheduling.js';

// Hand-worked: the threshold is failures x 100 >= percent x requests, and at least 3 failures.
const apps = [
  { owner: 'acme', name: 'flux', endpoint_id: 'acme/flux', max_concurrency: 2 },
  { owner: 'acme', name: 'sdxl', endpoint_id: 'acme/sdxl', max_concurrency: null },
];
const window = { from: '2026-10-22', to: '2026-11-21' };

describe('schedulingHints', () => {
  it('advises raising max_concurrency at or above the share, with the evidence, highest share first', () => {
    const hints = schedulingHints({
      rows: [
        // 3 of 300 = 1 %: exactly at the threshold.
        { app: 'acme/flux', requests: 300, scheduling_failures: 3, last_seen: '2026-11-20 10:00:00.500' },
        // 10 of 400 = 2.5 %; not in the listing's settings (null): said so.
        { app: 'acme/sdxl', requests: 400, scheduling_failures: 10, last_seen: '2026-11-21T01:02:03Z' },
        // 3 of 301 < 1 %.
        { app: 'acme/llm', requests: 301, scheduling_failures: 3, last_seen: '2026-11-20 10:00:00.000' },
        // 2 of 10 = 20 %, but only 2: not frequent.
        { app: 'acme/tiny', requests: 10, scheduling_failures: 2, last_seen: '2026-11-20 10:00:00.000' },
      ],
      apps,
      minSharePercent: 1,
      window,
    });
    expect(hints.map((h) => [h.app, h.share_of_requests, h.scheduling_failures, h.requests, h.last_seen, h.max_concurrency])).toEqual([
      ['sdxl', 0.025, 10, 400, '2026-11-21T01:02:03.000Z', null],
      ['flux', 0.01, 3, 300, '2026-11-20T10:00:00.500Z', 2],
    ]);
    expect(hints[1].evidence).toBe(
      '3 of 300 requests (1.00 %) with a known outcome (a stored webhook delivery) from 2026-10-22 to 2026-11-21 (exclusive) failed with ' +
        'runner_scheduling_failure (no runner could be allocated), the latest at 2026-11-20T10:00:00.500Z; max_concurrency is 2: the platform advises raising it',
    );
    expect(hints[0].evidence).toContain('max_concurrency is unknown (not in the collected app listing)');
  });

  it('gives nothing without failures, and names an app missing from the listing by its key', () => {
    expect(schedulingHints({ rows: [{ app: 'acme/flux', requests: 50, scheduling_failures: 0, last_seen: null }], apps, minSharePercent: 0, window })).toEqual([]);
    const [gone] = schedulingHints({ rows: [{ app: 'old/app', requests: 5, scheduling_failures: 5, last_seen: '2026-11-01 00:00:00.000' }], apps, minSharePercent: 1, window });
    expect([gone.app, gone.endpoint_id, gone.max_concurrency]).toEqual(['app', 'old/app', null]);
  });
});
