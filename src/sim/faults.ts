// Fault injection. Whether a request is faulted is a pure function of (seed, method, path + canonical query,
// how many times this exact request was seen before), and a request is never faulted more than 3 times in a
// row, so a client that retries 4+ times always gets through and a rerun sees the same faults.
import { createHash } from 'node:crypto';
import type { LRUCache } from 'lru-cache';
import { hashString, mix, unit } from './prng.js';
import type { SimCaches } from './caches.js';

export type FaultKind =
  | 'rate_limit' | 'server_error' | 'platform_error' | 'slow' | 'reset' | 'truncated'
  | 'server_error_final' | 'model_error';

/** Kinds a client is expected to retry; --fault-rate draws from these unless faultKinds says otherwise. */
export const RETRYABLE_FAULTS: FaultKind[] = ['rate_limit', 'server_error', 'platform_error', 'slow', 'reset', 'truncated'];
export const ALL_FAULTS: FaultKind[] = [...RETRYABLE_FAULTS, 'server_error_final', 'model_error'];

export interface FaultDecision {
  kind: FaultKind | null;
  /** Stable per (request, occurrence): used for error request ids and fault details. */
  token: number;
  occurrence: number;
}

export class FaultPlan {
  /**
   * Recent requests by a digest of their key (keys are whole URLs, often a kilobyte): a bounded LRU, so
   * a request not seen for a long while counts from zero again. Retries come soon after, so the rules hold.
   */
  private readonly seen: LRUCache<string, { count: number; streak: number }>;
  constructor(private readonly seed: number, private rate: number, private kinds: FaultKind[], caches: SimCaches) {
    this.seen = caches.create('faultKeys');
  }

  configure(rate: number, kinds?: FaultKind[]): void {
    this.rate = rate;
    if (kinds) this.kinds = kinds;
  }

  decide(requestKey: string): FaultDecision {
    const digest = createHash('sha1').update(requestKey).digest('base64url');
    let entry = this.seen.get(digest);
    if (!entry) this.seen.set(digest, (entry = { count: 0, streak: 0 }));
    const occurrence = entry.count++;
    const token = mix(hashString(requestKey, this.seed ^ 0x811c9dc5), occurrence);
    let kind: FaultKind | null = null;
    if (this.rate > 0 && this.kinds.length > 0 && entry.streak < 3 && unit(token) < this.rate) {
      kind = this.kinds[mix(token, 0xfa17) % this.kinds.length];
    }
    entry.streak = kind ? entry.streak + 1 : 0;
    return { kind, token, occurrence };
  }
}
