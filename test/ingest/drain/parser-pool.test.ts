// The parser pool when its worker module cannot load (seen with a bundled service: the worker file was not
// there). A thread comes 'online' before its module fails, so counting 'online' as a start reset the failure
// count every time and the pool replaced the worker forever, until the process ran out of memory.
import { afterEach, describe, expect, it } from 'vitest';
import { ParserPool } from '../../../src/ingest/drain/parser-pool.js';
import type { ParseSink } from '../../../src/ingest/drain/parse-body.js';

let pool: ParserPool | undefined;
afterEach(async () => {
  await pool?.close();
});

describe('parser pool', () => {
  it('gives up on a worker that never loads after three starts, and parses on the request thread', async () => {
    const errors: string[] = [];
    const logger = { error: (_: unknown, msg: string) => errors.push(msg) } as never;
    pool = new ParserPool(1, logger, new URL('./fixtures/unloadable-worker.mjs', import.meta.url));
    await expect.poll(() => pool!.size, { timeout: 60_000 }).toBe(0);
    expect(pool.started).toBe(3);
    expect(errors.at(-1)).toBe('drain parser workers do not start; parsing on the request thread from now on');

    // Bodies are still parsed: inline.
    const rows: number[] = [];
    const sink: ParseSink = { onRows: (_buf, count) => rows.push(count), onRejects: () => undefined };
    const session = pool.open({ json: true, ctx: {} as never, maxLineBytes: 1 << 20 }, sink);
    await session.push(Buffer.from('{"timestamp":"2026-11-21T10:00:00Z","level":"INFO","message":"a"}\n'));
    const summary = await session.end();
    expect(summary).toMatchObject({ accepted: 1 });
  });
  it('a body chunk that owns its memory is moved to the parser thread, not copied; a view into shared memory is copied', async () => {
    pool = new ParserPool(1);
    const rows: string[] = [];
    const sink: ParseSink = { onRows: (buf) => rows.push(buf.toString()), onRejects: () => undefined };
    const session = pool.open({ json: false, ctx: { receivedAt: '2026-11-26 00:00:00.000', batchId: '6f0c1a52-9d44-4a8e-9d3b-4b2f4c1d2e3f' }, maxLineBytes: 1 << 20 }, sink);
    const first = '{"timestamp":"2026-11-21T10:00:00Z","level":"INFO","message":"moved"}\n';
    const second = '{"timestamp":"2026-11-21T10:00:01.5Z","level":"ERROR","message":"copied"}\n';
    // As an HTTP body chunk: memory of its own (Node copies each out of the socket's read).
    const owned = Buffer.alloc(Buffer.byteLength(first));
    owned.write(first);
    // A slice of Node's shared small-buffer pool, as gunzip's output slices its buffer.
    const view = Buffer.from(second);
    expect(view.buffer.byteLength).toBeGreaterThan(view.byteLength);
    await session.push(owned);
    await session.push(view);
    // Moved: this side's view of it is empty now. The copied one is still the caller's to read.
    expect(owned.byteLength).toBe(0);
    expect(view.toString()).toBe(second);
    expect(await session.end()).toMatchObject({ accepted: 2, rejected: 0 });
    const fields = rows.join('').split('\n').filter(Boolean).map((r) => r.split('\t').slice(0, 2));
    expect(fields).toEqual([
      ['2026-11-21 10:00:00.000', 'INFO'],
      ['2026-11-21 10:00:01.500', 'ERROR'],
    ]);
  });
});
