// Issue 31: SessionRequestIds (src/ingest/faro/session-request-ids.ts) at its bounds, for mutation testing. Oracle:
// its documented rules (the cap per session; sessions remembered most recently used last, the least recently used
// forgotten first once more than maxTrackedIds ids (default 100,000) or maxTrackedSessions sessions (default 10,000)
// are remembered; a session not remembered starts from the store, which has 1 s to answer by default) and
// hand-counted sequences of store questions.
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SessionRequestIds } from '../../src/ingest/faro/session-request-ids.js';
import type { FaroItemRow } from '../../src/store/tables/faro-items.js';

const row = (session_id: string, request_id: string) => ({ session_id, request_id }) as FaroItemRow;
afterEach(() => {
  vi.useRealTimers();
});

describe('request ids per session: what is remembered', () => {
  it('a session used again becomes the most recently used: the one left alone is forgotten first', async () => {
    const asked: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 5, maxTrackedSessions: 2, stored: async (s) => (asked.push(s), []) });
    await cap.cap([row('a', 'r1')]);
    await cap.cap([row('b', 'r2')]);
    await cap.cap([row('a', 'r3')]); // a used again: b is now the least recently used
    await cap.cap([row('c', 'r4')]); // three sessions: b goes
    await cap.cap([row('a', 'r5')]);
    await cap.cap([row('b', 'r6')]);
    expect(asked).toEqual(['a', 'b', 'c', 'b']);
  });

  it('exactly maxTrackedIds ids, or maxTrackedSessions sessions, are kept; one more forgets the oldest', async () => {
    const asked: string[] = [];
    const ids = new SessionRequestIds({ maxPerSession: 10, maxTrackedIds: 3, stored: async (s) => (asked.push(s), []) });
    await ids.cap([row('a', 'r1'), row('a', 'r2')]);
    await ids.cap([row('b', 'r3')]); // 3 ids: all kept
    await ids.cap([row('a', 'r1')]);
    expect(asked).toEqual(['a', 'b']);
    await ids.cap([row('b', 'r4')]); // 4 ids: a (least recently used) goes
    await ids.cap([row('a', 'r1')]);
    expect(asked).toEqual(['a', 'b', 'a']);

    const seen: string[] = [];
    const sessions = new SessionRequestIds({ maxPerSession: 10, maxTrackedSessions: 2, stored: async (s) => (seen.push(s), []) });
    await sessions.cap([row('a', 'r1'), row('b', 'r2')]);
    await sessions.cap([row('a', 'r3'), row('b', 'r4')]);
    expect(seen).toEqual(['a', 'b']);
  });

  it('the ids the store answered count toward maxTrackedIds', async () => {
    const asked: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 10, maxTrackedIds: 3, stored: async (s) => (asked.push(s), s === 'a' ? ['x1', 'x2', 'x3'] : []) });
    await cap.cap([row('a', 'x1')]); // 3 ids known for a, none new
    await cap.cap([row('a', 'x2')]);
    expect(asked).toEqual(['a']);
    await cap.cap([row('b', 'r1')]); // 4 in all: a goes
    await cap.cap([row('a', 'x1')]);
    expect(asked).toEqual(['a', 'b', 'a']);
  });

  it('forgetting a session frees its ids: the next sessions fit again', async () => {
    const asked: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 10, maxTrackedIds: 2, stored: async (s) => (asked.push(s), []) });
    await cap.cap([row('a', 'r1'), row('a', 'r2')]);
    await cap.cap([row('b', 'r3')]); // 3: a goes, 1 left
    await cap.cap([row('c', 'r4')]); // 2: b and c kept
    await cap.cap([row('b', 'r3'), row('c', 'r4')]);
    expect(asked).toEqual(['a', 'b', 'c']);
  });

  it('by default 10,000 sessions are remembered; the 10,001st forgets the first', async () => {
    const asked = new Map<string, number>();
    const cap = new SessionRequestIds({ maxPerSession: 5, stored: async (s) => (asked.set(s, (asked.get(s) ?? 0) + 1), []) });
    for (let i = 0; i < 10_000; i++) await cap.cap([row(`s${i}`, 'r')]);
    await cap.cap([row('s0', 'r')]); // remembered: s0 is now the most recent, s1 the oldest
    expect(asked.get('s0')).toBe(1);
    await cap.cap([row('s10000', 'r')]);
    await cap.cap([row('s0', 'r'), row('s1', 'r')]);
    expect([asked.get('s0'), asked.get('s1')]).toEqual([1, 2]);
  });

  it('by default 100,000 ids are remembered; one more forgets the oldest session', async () => {
    let asks = 0;
    const cap = new SessionRequestIds({ maxPerSession: 50_000, stored: async () => (asks++, []) });
    const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => row(prefix, `${prefix}-${i}`));
    await cap.cap(ids('a', 50_000));
    await cap.cap(ids('b', 50_000));
    await cap.cap([row('a', 'a-0')]);
    expect(asks).toBe(2);
    await cap.cap([row('c', 'c-0')]); // 100,001 ids: b, the least recently used, goes
    await cap.cap([row('b', 'b-0')]);
    expect(asks).toBe(4);
  });
});

describe('request ids per session: rows left alone', () => {
  it('a row without a request id or without a session asks nothing and counts nothing', async () => {
    const asked: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 1, stored: async (s) => (asked.push(s), ['held']) });
    const rows = [row('a', ''), row('', 'r1'), row('', 'r2')];
    expect(await cap.cap(rows)).toBe(0);
    expect(rows.map((r) => r.request_id)).toEqual(['', 'r1', 'r2']);
    expect(asked).toEqual([]);
  });

  it('at the cap exactly, a new id is dropped; under it, kept', async () => {
    const cap = new SessionRequestIds({ maxPerSession: 2, stored: async () => ['held'] });
    const rows = [row('a', 'r1'), row('a', 'r2'), row('a', 'held')];
    expect(await cap.cap(rows)).toBe(1);
    expect(rows.map((r) => r.request_id)).toEqual(['r1', '', 'held']);
  });

  it('a store failing without onStoredError still counts as none', async () => {
    const cap = new SessionRequestIds({ maxPerSession: 1, stored: () => Promise.reject(new Error('down')) });
    const rows = [row('a', 'r1'), row('a', 'r2')];
    expect(await cap.cap(rows)).toBe(1);
    expect(rows.map((r) => r.request_id)).toEqual(['r1', '']);
  });
});

describe('request ids per session: the store has 1 s by default', () => {
  it('a store that has not answered after 999 ms is still waited for; at 1000 ms it counts as none', async () => {
    vi.useFakeTimers();
    const errors: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 1, stored: () => new Promise(() => undefined), onStoredError: (e) => errors.push(e.message) });
    let over: number | undefined;
    const done = cap.cap([row('a', 'r1'), row('a', 'r2')]).then((n) => (over = n));
    await vi.advanceTimersByTimeAsync(999);
    expect(over).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    await done;
    expect(over).toBe(1);
    expect(errors).toEqual(['the store did not answer in time']);
  });

  it('a store that answers clears its timer (nothing left pending)', async () => {
    vi.useFakeTimers();
    const cap = new SessionRequestIds({ maxPerSession: 3, stored: async () => ['r0'] });
    expect(await cap.cap([row('a', 'r1')])).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });
});
