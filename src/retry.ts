// The one retry policy module: every retry loop states its policy (a RetryPolicy constant or its configured
// values) and takes its waits from here, instead of seven hand-written formulas. The loops keep what differs
// between them and is not a policy (what is retryable, a deadline, dead-lettering, a server's Retry-After).

export interface RetryPolicy {
  /** The wait before the first retry, in ms. */
  baseMs: number;
  /** No wait is longer than this (before jitter), in ms. */
  maxMs: number;
  /** exponential: base x 2^(n-1); linear: base x n, for the n-th retry. */
  growth: 'exponential' | 'linear';
  /**
   * none: the wait itself (a person reads it, or one process retries); full: uniform in [0, wait) (many clients
   * retrying the same server: AWS's "full jitter"); equal: uniform in [wait/2, wait) (spread, but never hurried).
   */
  jitter: 'none' | 'full' | 'equal';
}

/** The store coming up (the migrations, the first connection): linear and short, no jitter (one process retries). */
export const STORE_STARTUP_RETRY: RetryPolicy = { baseMs: 250, maxMs: 2_000, growth: 'linear', jitter: 'none' };

/** The n-th retry's wait before jitter (n from 1), in ms: capped at maxMs, whatever n is. */
export function retryCeilingMs(policy: RetryPolicy, retry: number): number {
  const n = Math.max(1, retry);
  // The exponent is bounded so a long outage's count never overflows to Infinity.
  const grown = policy.growth === 'exponential' ? policy.baseMs * 2 ** Math.min(n - 1, 30) : policy.baseMs * n;
  return Math.min(policy.maxMs, grown);
}

/** The n-th retry's wait (n from 1), in ms, with the policy's jitter drawn from `random` (in [0, 1)). */
export function retryDelayMs(policy: RetryPolicy, retry: number, random: () => number = Math.random): number {
  const ceilingMs = retryCeilingMs(policy, retry);
  switch (policy.jitter) {
    case 'none':
      return ceilingMs;
    case 'full':
      return Math.floor(random() * ceilingMs);
    case 'equal':
      return ceilingMs * (0.5 + random() / 2);
  }
}
