// Issue 43.2: one retry policy module (src/retry.ts). Seven loops computed their waits with hand-written formulas
// (the platform client, the migrations, the store's first connection, the notify webhook, the batch writer, the
// drain's replay, logs tail); each now states its policy and takes the wait from here. The waits below are worked
// out by hand from each policy.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { retryCeilingMs, retryDelayMs, STORE_STARTUP_RETRY, type RetryPolicy } from '../src/retry.js';

const exp = (baseMs: number, maxMs: number, jitter: RetryPolicy['jitter']): RetryPolicy => ({ baseMs, maxMs, growth: 'exponential', jitter });

describe('retry waits', () => {
  it('exponential: base, 2 x base, 4 x base, ... capped at max, whatever the retry count', () => {
    const p = exp(200, 10_000, 'none');
    expect([1, 2, 3, 4, 5, 6, 7, 8, 1_000].map((n) => retryDelayMs(p, n))).toEqual([200, 400, 800, 1600, 3200, 6400, 10_000, 10_000, 10_000]);
  });

  it('linear: base x n, capped (the store starting: 250 ms steps up to 2 s)', () => {
    expect([1, 2, 3, 8, 9, 50].map((n) => retryDelayMs(STORE_STARTUP_RETRY, n))).toEqual([250, 500, 750, 2000, 2000, 2000]);
  });

  it('full jitter: uniform in [0, wait), whole ms; equal jitter: in [wait/2, wait)', () => {
    expect(retryDelayMs(exp(100, 1_000, 'full'), 1, () => 0.5)).toBe(50);
    expect(retryDelayMs(exp(100, 1_000, 'full'), 3, () => 0.999)).toBe(399);
    expect(retryDelayMs(exp(100, 1_000, 'full'), 3, () => 0)).toBe(0);
    expect(retryDelayMs(exp(200, 5_000, 'equal'), 2, () => 0)).toBe(200);
    expect(retryDelayMs(exp(200, 5_000, 'equal'), 2, () => 0.5)).toBe(300);
    expect(retryCeilingMs(exp(200, 5_000, 'equal'), 2)).toBe(400);
  });
});

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

describe('every retry loop uses src/retry.ts', () => {
  it('no module outside it (the simulator aside) computes a backoff of its own', () => {
    // A doubling (`2 ** attempt`), a hand-made jitter (`0.5 + Math.random() / 2`) or a linear step on the attempt.
    const own = /\b2 \*\* \(?\s*(?:Math\.min\()?\s*attempt|Math\.random\(\) \/ 2|\d+ \* attempt\b/;
    const found = sources('src')
      .filter((f) => !f.startsWith(join('src', 'sim')) && f !== join('src', 'retry.ts'))
      .filter((f) => own.test(readFileSync(f, 'utf8')));
    expect(found).toEqual([]);
  });

  it('the seven loops import it', () => {
    const loops = ['src/platform/client.ts', 'src/service.ts', 'src/store/client.ts', 'src/collectors/notify-webhook.ts', 'src/store/writer.ts', 'src/ingest/drain/replay.ts', 'src/cli/logs-tail.ts'];
    for (const file of loops) expect(readFileSync(file, 'utf8'), file).toMatch(/from '(\.\.\/)*(\.\/)?retry\.js'/);
  });
});
