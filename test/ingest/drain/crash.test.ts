// Acceptance 4: killing the service (SIGKILL) between acknowledgements loses no acknowledged line, and the
// restart stores nothing twice. The service runs as a child process on a spool directory of its own, its
// store is the test ClickHouse HTTP endpoint in this process (which outlives the kills).
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { startClickHouseHttp, type ClickHouseHttp } from '../../support/clickhouse-http.js';
import { processDataDir, tempDataDir } from '../../support/store.js';
import { line, sign, SECRET } from './helpers.js';

const ENTRY = fileURLToPath(new URL('./fixtures/drain-service.ts', import.meta.url));
let ch: ClickHouseHttp;
const children: ChildProcess[] = [];

beforeAll(async () => {
  ch = await startClickHouseHttp({ dataDir: processDataDir() });
});
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await ch?.close();
});

async function startChild(dataDir: string): Promise<{ child: ChildProcess; url: string; exited: Promise<unknown> }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ENTRY], {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      PORT: '0',
      DATA_DIR: dataDir,
      CLICKHOUSE_URL: ch.url,
      CLICKHOUSE_CONNECT_TIMEOUT_MS: '10000',
      LOG_DRAIN_SECRET: SECRET,
      SVC_API_KEY: 'not-used-by-the-drain-0123',
      WRITER_FLUSH_INTERVAL_MS: '20',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  const exited = new Promise((resolve) => child.once('exit', resolve));
  let out = '';
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`service did not start:\n${out}\n${err}`)), 30_000);
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /"url":"(http:\/\/127\.0\.0\.1:\d+)"/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    void exited.then(() => reject(new Error(`service exited:\n${out}\n${err}`)));
  });
  return { child, url, exited };
}

async function query<T>(sql: string): Promise<T[]> {
  const res = await request(`${ch.url}/?database=tallyhouse&default_format=JSONEachRow`, { method: 'POST', body: sql });
  const text = await res.body.text();
  if (res.statusCode !== 200) throw new Error(text);
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l) as T);
}

async function spoolBytes(url: string): Promise<number> {
  const res = await request(`${url}/metrics`);
  return Number(/^tallyhouse_drain_spool_bytes (\d+)$/m.exec(await res.body.text())?.[1]);
}

const LINES_PER_BATCH = 200;

describe('SIGKILL', () => {
  it('loses no acknowledged line and stores none twice', async () => {
    const dataDir = tempDataDir();
    const acknowledged = new Set<string>();
    const attempted = new Set<string>();
    let seq = 0;
    const send = async (url: string, stopAt: { stop: boolean }) => {
      while (!stopAt.stop) {
        const tag = `crash-${seq++}`;
        const body = Array.from({ length: LINES_PER_BATCH }, (_, i) => line({ message: `${tag} ${i}`, svc_request_id: tag })).join('\n');
        attempted.add(tag);
        try {
          const res = await request(`${url}/v1/drains/logs`, {
            method: 'POST',
            headers: { 'content-type': 'application/x-ndjson', 'x-svc-signature': sign(body) },
            body,
          });
          await res.body.dump();
          if (res.statusCode === 200) acknowledged.add(tag);
        } catch {
          return; // the service was killed under this request: its outcome is unknown to the sender
        }
      }
    };

    for (let round = 0; round < 3; round++) {
      const { child, url, exited } = await startChild(dataDir);
      const stop = { stop: false };
      const senders = Array.from({ length: 4 }, () => send(url, stop));
      // Kill once some batches were acknowledged, while requests and replay inserts are in flight.
      const target = acknowledged.size + 40 + round * 20;
      while (acknowledged.size < target) await new Promise((r) => setTimeout(r, 10));
      child.kill('SIGKILL');
      stop.stop = true;
      await Promise.all(senders);
      await exited;
    }

    // A last start replays what the spool still holds.
    const { child, url, exited } = await startChild(dataDir);
    for (let i = 0; i < 300 && (await spoolBytes(url)) > 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(await spoolBytes(url)).toBe(0);
    child.kill('SIGTERM');
    await exited;

    const rows = await query<{ tag: string; lines: string; distinct: string }>(
      "SELECT request_id AS tag, count() AS lines, uniqExact(message) AS distinct FROM logs WHERE startsWith(request_id, 'crash-') GROUP BY tag",
    );
    const stored = new Map(rows.map((r) => [r.tag, r]));
    expect(acknowledged.size).toBeGreaterThanOrEqual(40 + 60 + 80);
    const missing = [...acknowledged].filter((t) => Number(stored.get(t)?.lines ?? 0) !== LINES_PER_BATCH);
    expect(missing).toEqual([]);
    // Nothing doubled: every stored batch has each of its lines once (acknowledged or cut short by a kill).
    for (const r of rows) {
      expect(attempted.has(r.tag)).toBe(true);
      expect([Number(r.lines), Number(r.distinct)], r.tag).toEqual([LINES_PER_BATCH, LINES_PER_BATCH]);
    }
  });
});
