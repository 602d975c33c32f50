// Repeating a measured ratio until it is stable: the machines benches run on are shared and noisy, so one ratio
// says little. `repeatRatio` takes rounds until the interquartile range is a small share of the median (or a round
// limit is reached) and reports the median, the quartiles, the spread and whether a goal holds on the median.

export interface RatioStats {
  median: number;
  q1: number;
  q3: number;
  /** (q3 - q1) / median. */
  spread: number;
  rounds: number;
  /** The spread fell under the target before the round limit. */
  stable: boolean;
  /** Every round's ratio, in order. */
  ratios: number[];
}

export interface RepeatOptions {
  /** Rounds before the spread is judged (default 5). */
  minRounds?: number;
  /** Most rounds (default 25). */
  maxRounds?: number;
  /** Stop once (q3 - q1) / median is under this (default 0.1). */
  targetSpread?: number;
}

/** The quantile q (0..1) of sorted values, interpolated. */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - lo);
}

export function ratioStats(ratios: readonly number[]): Omit<RatioStats, 'stable' | 'rounds' | 'ratios'> {
  const sorted = [...ratios].sort((a, b) => a - b);
  const median = quantile(sorted, 0.5);
  const q1 = quantile(sorted, 0.25);
  const q3 = quantile(sorted, 0.75);
  return { median, q1, q3, spread: (q3 - q1) / median };
}

/** Runs `round` (one measurement of the ratio) until the ratios are stable; synchronous or async rounds. */
export async function repeatRatio(round: () => number | Promise<number>, opts: RepeatOptions = {}): Promise<RatioStats> {
  const min = opts.minRounds ?? 5;
  const max = Math.max(min, opts.maxRounds ?? 25);
  const target = opts.targetSpread ?? 0.1;
  const ratios: number[] = [];
  for (;;) {
    ratios.push(await round());
    if (ratios.length < min) continue;
    const stats = ratioStats(ratios);
    if (stats.spread < target || ratios.length >= max) {
      return { ...stats, rounds: ratios.length, stable: stats.spread < target, ratios };
    }
  }
}

/** The figures of a RatioStats for a bench's JSON line, rounded, with whether `goal` holds on the median. */
export function reportRatio(stats: RatioStats, goal: { atLeast?: number; atMost?: number }): Record<string, unknown> {
  const r = (x: number) => Math.round(x * 100) / 100;
  const met = (goal.atLeast === undefined || stats.median >= goal.atLeast) && (goal.atMost === undefined || stats.median <= goal.atMost);
  return {
    ratio_median: r(stats.median),
    ratio_q1: r(stats.q1),
    ratio_q3: r(stats.q3),
    ratio_iqr: r(stats.q3 - stats.q1),
    ratio_spread: r(stats.spread),
    ratio_rounds: stats.rounds,
    ratio_stable: stats.stable,
    goal: goal.atLeast !== undefined ? `median >= ${goal.atLeast}` : `median <= ${goal.atMost}`,
    goal_met: met,
  };
}
