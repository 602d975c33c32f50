// Authentication before work (CONTRIBUTING.md rule 17): a body whose signature does not match is refused before
// any of it is decompressed, parsed, staged or spooled. Its own file: the default 32 MiB body limit.
import { readdirSync, watch } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post, postSigned, sign, line, startDrainService, type DrainService } from './helpers.js';

/** Sends `body` and measures from the moment its last byte is handed to the socket to the answer's arrival. */
function answerAfterLastByteMs(url: string, body: Buffer, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    let sentAt = 0;
    const req = request(url, { method: 'POST', headers: { ...headers, 'content-type': 'application/x-ndjson', 'content-length': String(body.length) } });
    req.on('response', (res) => {
      const at = performance.now();
      res.resume();
      res.on('end', () => resolve(at - sentAt));
    });
    req.on('error', reject);
    req.end(body, () => {
      sentAt = performance.now();
    });
  });
}

let d: DrainService;
beforeAll(async () => {
  d = await startDrainService();
});
afterAll(async () => {
  await d?.close();
});

describe('authentication before work', () => {
  it('refuses a wrongly signed 30 MB body (gzip claimed) without staging, parsing or spooling any of it', async () => {
    const created: string[] = [];
    const watcher = watch(d.spool.stagingDir, (_event, name) => created.push(String(name)));
    const body = Buffer.alloc(30 * 1024 * 1024, 0x61);
    const started = performance.now();
    const res = await post(d.drainUrl, body, { 'x-svc-signature': sign('something else'), 'content-encoding': 'gzip' });
    const elapsedMs = performance.now() - started;
    watcher.close();
    expect(res.status).toBe(401);
    expect(res.body.detail).toMatch(/does not match the body/);
    expect(created).toEqual([]);
    expect(readdirSync(d.spool.stagingDir)).toEqual([]);
    expect([d.spool.appendedRecords, d.spool.bytes]).toEqual([0, 0]);
    // Measured, not asserted (CONTRIBUTING.md, "Tests"); the figures go in the PR note. The HMAC is computed as
    // the chunks arrive, so the answer follows the last byte at once: that gap is the figure that matters.
    const gapMs = await answerAfterLastByteMs(d.drainUrl, body, { 'x-svc-signature': sign('something else'), 'content-encoding': 'gzip' });
    console.log(`wrongly signed 30 MB body refused in ${elapsedMs.toFixed(0)} ms with sending, ${gapMs.toFixed(1)} ms after its last byte`);

    // The same endpoint still takes a correctly signed body.
    const ok = await postSigned(d.drainUrl, `${line({ message: 'after' })}\n`);
    expect([ok.status, ok.body.accepted]).toEqual([200, 1]);
  });
});
