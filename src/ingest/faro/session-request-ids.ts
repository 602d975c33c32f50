// How many platform request ids one front-end session may name (FARO_SESSION_MAX_REQUEST_IDS). The Faro key ships
// in every front-end bundle, so anyone can post as the app: one 710 KB payload planted a session naming 5,000
// request ids, each of which opening the session then looked up and priced. Past the cap an item is still stored,
// without its request id (its raw JSON and attributes keep the text), and the answer counts it.
//
// The ids a session named are remembered per process (most recently used sessions, a bounded number of ids in all);
// a session not in memory (new, evicted, or after a restart) starts from what the store holds for it. Bound: the cap
// per session, plus what concurrent instances (or items still in a spool) add before they see each other's.
import { LRUCache } from 'lru-cache';
import type { FaroItemRow } from '../../store/tables/faro-items.js';

export interface SessionRequestIdsOptions {
  maxPerSession: number;
  /** The distinct request ids already stored for a session (at most `limit`). */
  stored: (sessionId: string, limit: number) => Promise<string[]>;
  /** A store that does not answer within this is taken as knowing none (the spool keeps Faro up through outages). */
  storedTimeoutMs?: number;
  /** Ids remembered over all sessions (about 100 bytes each); the least recently used sessions go first. */
  maxTrackedIds?: number;
  maxTrackedSessions?: number;
  onStoredError?: (err: Error) => void;
}

export class SessionRequestIds {
  /** Sized by the ids each session holds (an empty one counts 1): lru-cache, as every cache here. */
  private readonly sessions: LRUCache<string, Set<string>>;
  private readonly loading = new Map<string, Promise<Set<string>>>();

  constructor(private readonly opts: SessionRequestIdsOptions) {
    this.sessions = new LRUCache<string, Set<string>>({
      max: opts.maxTrackedSessions ?? 10_000,
      maxSize: opts.maxTrackedIds ?? 100_000,
      sizeCalculation: (ids) => Math.max(1, ids.size),
    });
  }

  /** Rows whose session already names `maxPerSession` other ids lose their request id. Returns how many did. */
  async cap(rows: FaroItemRow[]): Promise<number> {
    let over = 0;
    for (const row of rows) {
      // No session, no session page to open: nothing to bound.
      if (!row.request_id || !row.session_id) continue;
      const ids = await this.idsOf(row.session_id);
      if (ids.has(row.request_id)) continue;
      if (ids.size >= this.opts.maxPerSession) {
        row.request_id = '';
        over++;
        continue;
      }
      ids.add(row.request_id);
      // Set again to be measured (lru-cache sizes an entry when set, and keeps the size when set to the same
      // object): the least recently used sessions go once the ids are over the bound.
      this.sessions.delete(row.session_id);
      this.sessions.set(row.session_id, ids);
    }
    return over;
  }

  private async idsOf(sessionId: string): Promise<Set<string>> {
    // get() makes it the most recently used.
    const known = this.sessions.get(sessionId);
    if (known) return known;
    // One load per session, however many payloads of it arrive meanwhile (they then share one set).
    let pending = this.loading.get(sessionId);
    if (!pending) {
      pending = this.load(sessionId).finally(() => this.loading.delete(sessionId));
      this.loading.set(sessionId, pending);
    }
    return pending;
  }

  private async load(sessionId: string): Promise<Set<string>> {
    let ids: string[] = [];
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => reject(new Error('the store did not answer in time')), this.opts.storedTimeoutMs ?? 1_000);
      });
      ids = await Promise.race([this.opts.stored(sessionId, this.opts.maxPerSession), timeout]);
    } catch (err) {
      this.opts.onStoredError?.(err as Error);
    } finally {
      clearTimeout(timer);
    }
    const set = new Set(ids);
    this.sessions.set(sessionId, set);
    return set;
  }
}
