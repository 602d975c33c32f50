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
});
