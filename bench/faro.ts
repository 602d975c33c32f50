// `npm run bench -- faro [--payloads 2000] [--items 100] [--senders 4]`: the Faro receiver end to end, beside the
// log drain in the same run. One service (embedded store, both receivers) in this process; S concurrent senders post
// P payloads of I items (logs, events, measurements, an exception; a third name a request id) and the time until
// every item is visible in faro_items gives items/s. Then the same number of drain lines (P signed bodies of I
// lines) until visible in `logs` gives the drain's lines/s. Prints one JSON line with both rates and their ratio.
import { createHmac } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { parseConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { startService } from '../src/service.js';
import { faroExtension, FARO_PATH } from '../src/ingest/faro/extension.js';
import { logDrainExtension } from '../src/ingest/drain/extension.js';

const { values } = parseArgs({
  options: {
    payloads: { type: 'string', default: '2000' },
    items: { type: 'string', default: '100' },
    senders: { type: 'string', default: '4' },
  },
});
const PAYLOADS = Number(values.payloads);
const ITEMS = Number(values.items);
const SENDERS = Number(values.senders);
const KEY = 'bench-faro-key-0123456789';
const SECRET = 'b'.repeat(64);

function faroPayload(n: number): string {
  const ts = new Date(Date.UTC(2026, 10, 21, 12, 0, 0) + n * 1000).toISOString();
  const uuid = (i: number) => `00000000-0000-4000-8000-${(n * ITEMS + i).toString(16).padStart(12, '0')}`;
  const logs = [];
  const events = [];
  const measurements = [];
  for (let i = 0; i < ITEMS - 1; i++) {
    if (i % 3 === 0) events.push({ name: 'queue_submit', domain: 'platform', attributes: { request_id: uuid(i), button: 'generate' }, timestamp: ts });
    else if (i % 3 === 1) logs.push({ message: `rendered view ${i} of session ${n}`, level: 'info', context: { route: '/studio' }, timestamp: ts });
    else measurements.push({ type: 'web-vitals', values: { lcp: 1234.5 + i, cls: 0.01 }, timestamp: ts });
  }
  return JSON.stringify({
    meta: { app: { name: 'bench-web', version: '1.0.0', environment: 'bench' }, session: { id: `s-${n % 500}` }, user: { id: `u-${n % 97}` }, page: { url: 'https://bench.example/studio' } },
    logs,
    events,
    measurements,
    exceptions: [{ type: 'TypeError', value: `x is undefined (${n})`, timestamp: ts }],
  });
}

function drainBody(n: number): string {
  const ts = new Date(Date.UTC(2026, 10, 21, 12, 0, 0) + n * 1000).toISOString();
  const lines = [];
  for (let i = 0; i < ITEMS; i++) lines.push(JSON.stringify({ timestamp: ts, level: 'INFO', message: `line ${i} of body ${n}`, svc_app_name: 'bench-app', svc_request_id: `r-${n}-${i}` }));
  return lines.join('\n');
}

async function count(service: Awaited<ReturnType<typeof startService>>, table: string): Promise<number> {
  const rs = await service.store.client.query({ query: `SELECT count() AS n FROM ${table}`, format: 'JSONEachRow' });
  return Number(((await rs.json()) as Array<{ n: string }>)[0].n);
}

async function run(service: Awaited<ReturnType<typeof startService>>, table: string, post: (pool: Pool, n: number) => Promise<number>): Promise<{ seconds: number; failed: number }> {
  const before = await count(service, table);
  const pool = new Pool(service.url, { connections: SENDERS });
  let next = 0;
  let failed = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: SENDERS }, async () => {
      while (next < PAYLOADS) {
        const status = await post(pool, next++);
        if (status >= 300) failed++;
      }
    }),
  );
  const want = before + PAYLOADS * ITEMS;
  while ((await count(service, table)) < want) await new Promise((r) => setTimeout(r, 20));
  const seconds = (performance.now() - t0) / 1000;
  await pool.close();
  return { seconds, failed };
}

const dataDir = mkdtempSync(join(tmpdir(), 'tallyhouse-bench-faro-'));
const config = parseConfig({ ...process.env, NODE_ENV: 'production', PORT: '0', DATA_DIR: dataDir, SVC_API_KEY: 'bench-not-used-0000', JOBS_ENABLED: 'false', LOG_LEVEL: 'warn', FARO_APP_KEYS: `bench-web=${KEY}`, FARO_RATE_LIMIT_PER_SECOND: '1000000', LOG_DRAIN_SECRET: SECRET });
const service = await startService(config, { logger: createLogger('warn'), registry: createRegistry({ defaultMetrics: false }), extensions: [faroExtension(), logDrainExtension()] });
try {
  const faro = await run(service, 'faro_items', async (pool, n) => {
    const res = await pool.request({ method: 'POST', path: FARO_PATH, headers: { 'content-type': 'application/json', 'x-api-key': KEY }, body: faroPayload(n) });
    await res.body.dump();
    return res.statusCode;
  });
  const drain = await run(service, 'logs', async (pool, n) => {
    const body = drainBody(n);
    const res = await pool.request({ method: 'POST', path: '/v1/drains/logs', headers: { 'content-type': 'application/x-ndjson', 'x-svc-signature': createHmac('sha256', SECRET).update(body).digest('hex') }, body });
    await res.body.dump();
    return res.statusCode;
  });
  const items = PAYLOADS * ITEMS;
  const itemsPerSecond = Math.round(items / faro.seconds);
  const linesPerSecond = Math.round(items / drain.seconds);
  console.log(JSON.stringify({
    bench: 'faro',
    payloads: PAYLOADS,
    items_per_payload: ITEMS,
    senders: SENDERS,
    failed_requests: faro.failed + drain.failed,
    faro_seconds: Number(faro.seconds.toFixed(2)),
    items_per_second: itemsPerSecond,
    drain_seconds: Number(drain.seconds.toFixed(2)),
    drain_lines_per_second: linesPerSecond,
    ratio: Number((itemsPerSecond / linesPerSecond).toFixed(2)),
  }));
} finally {
  await service.close();
  rmSync(dataDir, { recursive: true, force: true });
}
