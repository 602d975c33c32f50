// `npm run bench -- sim [--apps 500] [--days 365] [--requests 10000000] [--concurrency 2] [--seed 1]`
//
// Starts a standalone simulator (`tallyhouse sim`, its own process, so its memory is its own) and pages a
// requests backfill through it the way the requests collector does: day chunks, 50 app ids a call, two groups
// at a time, 100 a page, expand=billing. Prints one JSON line: records served per second (the simulator must
// not be the bottleneck of later benchmarks: target 50,000 records/s) and the simulator's memory from its
// /metrics at the start, at each tenth of the days and at the end, plus the highest RSS sampled every second
// (goal: under 300 MB throughout, flat across deciles).
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { buildWorld } from '../src/sim/world.js';
import { expectedOwnedRequestsPerHour } from '../src/sim/runners.js';
import { DEFAULT_NOW } from '../src/sim/index.js';

const { values } = parseArgs({
  options: {
    apps: { type: 'string', default: '500' },
    days: { type: 'string', default: '365' },
    requests: { type: 'string', default: '10000000' },
    concurrency: { type: 'string', default: '2' },
    seed: { type: 'string', default: '1' },
  },
});
const apps = Number(values.apps);
const days = Number(values.days);
const concurrency = Number(values.concurrency);
const seed = Number(values.seed);
const DAY_MS = 86_400_000;
const MB = 1024 * 1024;

// The rate that puts `--requests` into `--days` of the caller's apps (the world scales linearly with it).
const unitWorld = buildWorld({ seed, nowMs: Date.parse(DEFAULT_NOW), days: days + 1, apps, requestsPerHour: 1 });
const requestsPerHour = Number(values.requests) / (expectedOwnedRequestsPerHour(unitWorld) * 24 * days);

const child = spawn(process.execPath, [
  'bin/tallyhouse.js', 'sim', '--port', '0', '--seed', String(seed), '--apps', String(apps), '--days', String(days + 1),
  '--requests-per-hour', String(requestsPerHour),
], { stdio: ['ignore', 'pipe', 'inherit'] });
const announced: Record<string, string> = {};
for await (const line of createInterface({ input: child.stdout! })) {
  const m = /^\s+(SVC_BASE_URL|SVC_API_KEY)=(\S+)/.exec(line);
  if (m) announced[m[1]] = m[2];
  if (announced.SVC_BASE_URL && announced.SVC_API_KEY) break;
}
const url = announced.SVC_BASE_URL;
const auth = { authorization: `Key ${announced.SVC_API_KEY}` };
const pool = new Pool(url, { connections: concurrency + 1, pipelining: 1 });

// RSS of the simulator process every second, from /proc (Linux): the "throughout" of the goal.
const rssNow = (): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${child.pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
let maxRssBytes = rssNow();
const sampler = setInterval(() => (maxRssBytes = Math.max(maxRssBytes, rssNow())), 1000);

/** The simulator's own figures from its /metrics (a standalone simulator adds them). */
async function simMemory(): Promise<{ rss_mb: number; heap_used_mb: number; caches: Record<string, number> }> {
  const res = await pool.request({ method: 'GET', path: '/metrics', headers: auth });
  const text = await res.body.text();
  const value = (name: string): number => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  const caches: Record<string, number> = {};
  for (const m of text.matchAll(/^sim_cache_size\{cache="([^"]+)"\} (\S+)$/gm)) caches[m[1]] = Number(m[2]);
  return {
    rss_mb: Math.round(value('sim_process_resident_memory_bytes') / MB),
    heap_used_mb: Math.round(value('sim_process_heap_used_bytes') / MB),
    caches,
  };
}

const nowMs = Date.parse(DEFAULT_NOW);
const firstDayMs = Math.floor(nowMs / DAY_MS) * DAY_MS - days * DAY_MS;
const ids = unitWorld.apps.filter((a) => a.ownedByCaller).map((a) => a.endpointId).sort();
const groups: string[][] = [];
for (let i = 0; i < ids.length; i += 50) groups.push(ids.slice(i, i + 50));

let records = 0;
let pages = 0;
async function pageWindow(endpointIds: string[], from: Date, to: Date): Promise<void> {
  let cursor: string | null = null;
  do {
    const qs = new URLSearchParams({ start: from.toISOString(), end: to.toISOString(), expand: 'billing', sort_by: 'ended_at', limit: '100' });
    for (const id of endpointIds) qs.append('endpoint_id', id);
    if (cursor) qs.set('cursor', cursor);
    const res = await pool.request({ method: 'GET', path: `/v1/serverless/requests/by-endpoint?${qs}`, headers: auth });
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${await res.body.text()}`);
    const page = (await res.body.json()) as { items: unknown[]; next_cursor: string | null; has_more: boolean };
    records += page.items.length;
    pages++;
    cursor = page.has_more ? page.next_cursor : null;
  } while (cursor);
}

const atStart = await simMemory();
const deciles: Array<{ decile: number; days: number; records: number; rss_mb: number; heap_used_mb: number }> = [];
// Timed from the first page: generating the requests on first touch is part of what is measured.
const t0 = process.hrtime.bigint();
const totalDays = days + 1; // through the partial day that ends at "now"
for (let d = 0; d < totalDays; d++) {
  const from = new Date(firstDayMs + d * DAY_MS);
  const to = new Date(Math.min(firstDayMs + (d + 1) * DAY_MS, nowMs));
  const queue = [...groups];
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (let g = queue.shift(); g; g = queue.shift()) await pageWindow(g, from, to);
  }));
  const decile = Math.floor(((d + 1) * 10) / totalDays);
  if (decile > deciles.length) {
    const m = await simMemory();
    deciles.push({ decile, days: d + 1, records, rss_mb: m.rss_mb, heap_used_mb: m.heap_used_mb });
    process.stderr.write(`sim bench: ${decile * 10}% (${d + 1} days, ${records} records): rss ${m.rss_mb} MB, heap ${m.heap_used_mb} MB\n`);
  }
}
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
const atEnd = await simMemory();
clearInterval(sampler);
await pool.close();
child.kill('SIGTERM');
await once(child, 'exit');
const rssByDecile = deciles.map((x) => x.rss_mb);
console.log(JSON.stringify({
  bench: 'sim',
  apps,
  days,
  requests_per_hour: Math.round(requestsPerHour * 1000) / 1000,
  records,
  pages,
  seconds: Math.round(seconds * 1000) / 1000,
  records_per_second: Math.round(records / seconds),
  rss_start_mb: atStart.rss_mb,
  rss_end_mb: atEnd.rss_mb,
  rss_max_mb: Math.round(maxRssBytes / MB),
  rss_decile_spread_mb: Math.max(...rssByDecile) - Math.min(...rssByDecile),
  heap_used_start_mb: atStart.heap_used_mb,
  heap_used_end_mb: atEnd.heap_used_mb,
  deciles,
  caches_end: atEnd.caches,
  goals: { rss_max_mb: 300, records_per_second: 50_000 },
}));
