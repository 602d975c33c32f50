import { expect } from 'vitest';

type Collection = readonly unknown[] | ReadonlyMap<unknown, unknown> | ReadonlySet<unknown>;

const sizeOf = (c: Collection): number => ('size' in c ? c.size : c.length);

/**
 * The truth a data-driven comparison compares with, asserted non-empty first (CONTRIBUTING.md, Tests: a
 * comparison of two empty sets passes and proves nothing). Returns the collection, so it wraps the truth where it
 * is built: `const truth = nonEmpty(sim.truth.usage(...), 'usage in October')`.
 */
export function nonEmpty<T extends Collection>(truth: T, what: string): T {
  expect(sizeOf(truth), `the truth is empty: ${what} (the comparison would prove nothing)`).toBeGreaterThan(0);
  return truth;
}

/**
 * Like nonEmpty, and also that some value is not zero: a truth of zeros compares equal with a store that summed
 * nothing. `value` reads the number of one entry (a Map's entries are [key, value] pairs).
 */
export function nonZero<T extends Collection>(truth: T, what: string, value: (entry: any) => number | bigint): T {
  nonEmpty(truth, what);
  const entries: unknown[] = 'size' in truth ? [...(truth as Iterable<unknown>)] : [...truth];
  expect(entries.some((e) => Number(value(e)) !== 0), `the truth is all zeros: ${what} (the comparison would prove nothing)`).toBe(true);
  return truth;
}
