// A drain body of many tiny bad lines must not make rejects many times its size (a signed 15 MB body of `{}`
// lines made ~1 GB of reject rows, 1.9 GB of memory, and a spool record SQLite refused: 500, the batch lost).
// Bounds worked by hand from the documented budget: 1 MiB of reject rows plus 4 characters per body byte.
import { describe, expect, it } from 'vitest';
import { BatchParser } from '../../../src/ingest/drain/parse-body.js';

const ctx = { receivedAt: '2026-11-21 10:00:00.000', batchId: '00000000-0000-4000-8000-000000000001' };

function parse(body: Buffer, chunkBytes = 64 * 1024) {
  const rejectChunks: Buffer[] = [];
  let rejectCount = 0;
  const parser = new BatchParser(
    { json: false, ctx, maxLineBytes: 1024 * 1024 },
    { onRows: () => undefined, onRejects: (buf, n) => { rejectChunks.push(buf); rejectCount += n; } },
  );
  for (let at = 0; at < body.length; at += chunkBytes) parser.push(body.subarray(at, at + chunkBytes));
  const summary = parser.end();
  const bytes = rejectChunks.reduce((n, b) => n + b.length, 0);
  return { summary, bytes, rejectCount, last: () => JSON.parse(Buffer.concat(rejectChunks).toString().trimEnd().split('\n').at(-1)!) };
}

describe('reject budget of a drain batch', () => {
  it('300,000 lines `x` (600 kB): every line counted rejected, reject rows at most 1 MiB + 4 x 600 kB plus one rejects_over_budget row naming the rest', () => {
    const lines = 300_000;
    const { summary, bytes, rejectCount, last } = parse(Buffer.from('x\n'.repeat(lines)));
    expect([summary.accepted, summary.rejected, summary.errors.length]).toEqual([0, lines, 100]);
    expect(bytes).toBeLessThanOrEqual(1024 * 1024 + 4 * 2 * lines + 2048);
    const row = last();
    const m = /^rejects_over_budget: (\d+) more rejected lines \(lines (\d+) to (\d+)\)/.exec(row.reason);
    expect(m).not.toBeNull();
    // The rows stored one by one and the lines the summary row counts are every line, once.
    expect(rejectCount - 1 + Number(m![1])).toBe(lines);
    expect([Number(m![2]), Number(m![3])]).toEqual([rejectCount, lines]);
    expect([row.raw, row.line]).toEqual(['x', rejectCount]);
  });

  it('bad lines longer than a reject row\'s overhead are each stored with their text (none only counted)', () => {
    const line = (i: number) => JSON.stringify({ level: 'INFO', message: `no timestamp ${i} ${'m'.repeat(200)}` });
    const { summary, rejectCount, last } = parse(Buffer.from(Array.from({ length: 20_000 }, (_, i) => line(i)).join('\n')));
    expect([summary.rejected, rejectCount]).toEqual([20_000, 20_000]);
    expect([last().line, last().raw]).toEqual([20_000, line(19_999)]);
  });
});
