import { describe, expect, it } from 'vitest';
import { nextVersionMs } from '../../src/store/values.js';

describe('nextVersionMs', () => {
  it('never goes below the clock and strictly increases, even many times within one millisecond', () => {
    const before = Date.now();
    const versions = Array.from({ length: 1000 }, () => nextVersionMs());
    expect(versions[0]).toBeGreaterThanOrEqual(before);
    for (let i = 1; i < versions.length; i++) expect(versions[i]).toBeGreaterThan(versions[i - 1]);
    expect(new Set(versions).size).toBe(versions.length);
  });
});
