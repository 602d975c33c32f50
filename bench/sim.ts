// `npm run bench -- sim [--endpoints N] [--hours H] [--rph R] [--concurrency C]`: starts the simulator
// in-process and pages every request of N endpoints over a window with an undici Pool (limit=100), then prints
// one JSON line with the records served per second. The simulator must not be the bottleneck of later
// benchmarks (target: 50,000 records/s).
import { parseArgs } from 'node:util';
import { Pool } from 'undici';
import { startSim } from '../src/sim/index.js';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '8' },
    hours: { type: 'string', default: '48' },
    rph: { type: 'string', default: '200' },
    concurrency: { type: 'string', default: '4' },
    seed: { type: 'string', default: '1' },
  },
});
const endpointCount = Number(values.endpoints);
const hours = Number(values.hours);
const concurrency = Number(values.concurrency);

const sim = await startSim({ seed: Number(values.seed), requestsPerHour: Number(values.rph) });
const pool = new Pool(sim.url, { connections: concurrency, pipelining: 1 });
const now = sim.clock.now().getTime();
const start = new Date(now - hours * 3_600_000).toISOString();
const end = new Date(now).toISOString();
const endpoints = sim.world.endpoints.filter((e) => !e.isModel && sim.world.apps[e.appIndex].ownedByCaller).slice(0, endpointCount);

let records = 0;
let pages = 0;
async function pageAll(endpointId: string): Promise<void> {
  let cursor: string | null = null;
  do {
    const qs = new URLSearchParams({ endpoint_id: endpointId, start, end, limit: '100', expand: 'billing' });
    if (cursor) qs.set('cursor', cursor);
    const res = await pool.request({ method: 'GET', path: `/v1/serverless/requests/by-endpoint?${qs}`, headers: { authorization: `Key ${sim.keys.api}` } });
    if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}: ${await res.body.text()}`);
    const page = (await res.body.json()) as { items: unknown[]; next_cursor: string | null; has_more: boolean };
    records += page.items.length;
    pages++;
    cursor = page.has_more ? page.next_cursor : null;
  } while (cursor);
}

// Timed from the first page: generating the requests on first touch is part of what is measured.
const t0 = process.hrtime.bigint();
const queue = endpoints.map((e) => e.id);
await Promise.all(Array.from({ length: concurrency }, async () => {
  for (let id = queue.shift(); id; id = queue.shift()) await pageAll(id);
}));
const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
await pool.close();
await sim.close();
console.log(JSON.stringify({
  bench: 'sim',
  records,
  seconds: Math.round(seconds * 1000) / 1000,
  records_per_second: Math.round(records / seconds),
  pages,
  endpoints: endpoints.length,
  hours,
  requests_per_hour: Number(values.rph),
}));
