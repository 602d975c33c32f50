// SessionRequestIds, pure: the cap per session, what the store already holds, eviction, a store that does not answer.
import { describe, expect, it } from 'vitest';
import { SessionRequestIds } from '../../src/ingest/faro/session-request-ids.js';
import type { FaroItemRow } from '../../src/store/tables/faro-items.js';

const row = (session_id: string, request_id: string) => ({ session_id, request_id }) as FaroItemRow;
const ids = (rows: FaroItemRow[]) => rows.map((r) => r.request_id);

describe('request ids per session', () => {
  it('caps each session on its own; a known id is kept past the cap; no session, no cap', async () => {
    const cap = new SessionRequestIds({ maxPerSession: 2, stored: async () => [] });
    const rows = [row('a', 'r1'), row('a', 'r2'), row('b', 'r3'), row('a', 'r3'), row('a', 'r1'), row('', 'r4'), row('', 'r5'), row('', 'r6')];
    expect(await cap.cap(rows)).toBe(1);
    expect(ids(rows)).toEqual(['r1', 'r2', 'r3', '', 'r1', 'r4', 'r5', 'r6']);
  });

  it('a session it does not remember starts from what the store holds for it (asked once, for at most the cap)', async () => {
    const asked: Array<[string, number]> = [];
    const cap = new SessionRequestIds({ maxPerSession: 3, stored: async (s, limit) => (asked.push([s, limit]), ['r1', 'r2']) });
    // Two payloads of the session at once: one question to the store, one set; r1 is known, r3 and r4 compete
    // for the one place left.
    const first = [row('a', 'r1'), row('a', 'r3')];
    const second = [row('a', 'r4')];
    const over = await Promise.all([cap.cap(first), cap.cap(second)]);
    expect(over[0] + over[1]).toBe(1);
    expect([...ids(first), ...ids(second)].filter(Boolean).sort()).toHaveLength(2);
    expect(ids(first)[0]).toBe('r1');
    expect(asked).toEqual([['a', 3]]);
  });

  it('forgets the least recently used sessions past its bound, then asks the store again', async () => {
    const asked: string[] = [];
    const cap = new SessionRequestIds({ maxPerSession: 5, maxTrackedIds: 4, stored: async (s) => (asked.push(s), []) });
    await cap.cap([row('a', 'r1'), row('a', 'r2')]);
    await cap.cap([row('b', 'r3'), row('b', 'r4')]);
    await cap.cap([row('a', 'r5')]); // 5 ids tracked: b, the least recently used, is forgotten
    await cap.cap([row('a', 'r6'), row('b', 'r7')]);
    expect(asked).toEqual(['a', 'b', 'b']);
  });

  it('a store that fails or does not answer in time counts as knowing none', async () => {
    const errors: string[] = [];
    const down = new SessionRequestIds({ maxPerSession: 1, stored: () => Promise.reject(new Error('store down')), onStoredError: (e) => errors.push(e.message) });
    const hung = new SessionRequestIds({ maxPerSession: 1, storedTimeoutMs: 1, stored: () => new Promise(() => undefined), onStoredError: (e) => errors.push(e.message) });
    expect(await down.cap([row('a', 'r1'), row('a', 'r2')])).toBe(1);
    expect(await hung.cap([row('a', 'r1'), row('a', 'r2')])).toBe(1);
    expect(errors).toEqual(['store down', 'the store did not answer in time']);
  });
});
