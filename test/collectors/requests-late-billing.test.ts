import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSim, type Sim } from '../../src/sim/index.js';
import type { Runtime } from '../../src/runtime.js';
import { decimalToScaled, toDateTime64 } from '../../src/values.js';
import { requestCostByEndpointDay } from '../../src/store/tables/requests.js';
import { requestsUnbilled, requestsUnbilledOldestAge } from '../../src/http/business-metrics.js';
import { PENDING_REFRESH_KEY, recheckAgesDays, recheckWindows } from '../../jobs/requests.js';
import { Checkpoints } from '../../src/store/tables/checkpoints.js';
import { openTestRuntime, closeRuntime, queryRows } from '../support/store.js';
import { runJob } from '../support/jobs.js';

// Issue 50.3: a request the platform bills days late (the simulator's late-billing fault: 5 % of requests billed
// 3 days after the usual 1-30 min) ends with its billed units in the store, counted once, and the unbilled gauges
// follow the simulator's truth. Clock: the simulator's, set here; two zones (UTC and Tokyo, 9 h ahead, so a request
// late on a UTC evening is on the next Tokyo day).

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const ZONES = ['UTC', 'Asia/Tokyo'];

let rt: Runtime;
let sim: Sim;
let endpoints: string[];
const t0 = new Date('2026-10-10T05:00:00Z');

beforeAll(async () => {
  rt = await openTestRuntime({ REQUESTS_RECOLLECT_HOURS: '6', TIMEZONES: ZONES.join(',') });
  sim = await startSim({ seed: 50, now: t0, days: 2, apps: 3, requestsPerHour: 10, faultRate: 0.2, slowMs: 200, lateBilling: { rate: 0.05, days: 3 } });
  endpoints = sim.truth.apps().filter((a) => a.owned_by_caller).flatMap((a) => a.endpoints).sort();
}, 60_000);
afterAll(async () => {
  await sim?.close();
  await closeRuntime(rt);
});

/** Each request once (a bare `owner/app` lists its routes' requests too). */
function truthRequests(from: Date, to: Date) {
  const all = endpoints.flatMap((endpointId) => sim.truth.requestList({ endpointId, from: from.toISOString(), to: to.toISOString() }));
  return [...new Map(all.map((r) => [r.request_id, r])).values()];
}

/** The gauges' oracle: requests that ended before now - 6 h within what was collected, not billed at now. */
function truthUnbilled(collectedFrom: Date) {
  const now = sim.clock.now().getTime();
  const list = truthRequests(collectedFrom, new Date(now - 6 * HOUR)).filter((r) => Date.parse(r.billed_at) > now);
  const oldest = Math.min(...list.map((r) => Date.parse(r.ended_at)));
  return { unbilled: list.length, oldestAgeSeconds: list.length ? (now - oldest) / 1000 : 0 };
}

async function gauges() {
  const service = { ...rt, now: () => sim.clock.now() };
  const [[count], [age]] = [await requestsUnbilled.read(service), await requestsUnbilledOldestAge.read(service)];
  return { unbilled: count.value, oldestAgeSeconds: age.value };
}

async function storedCopy(requestId: string): Promise<{ billable_units: string | null; copies: number }> {
  const [row] = await queryRows<{ billable_units: string | null; copies: number }>(
    rt,
    `SELECT toString(argMax(billable_units, version)) AS billable_units, toUInt32(count()) AS copies
     FROM (SELECT billable_units, version FROM requests FINAL WHERE request_id = {id:String})`,
    { id: requestId },
  );
  return row;
}

describe('the re-check schedule (pure)', () => {
  it('widens 1, 2, 4... days up to the maximum age', () => {
    expect(recheckAgesDays(35)).toEqual([1, 2, 4, 8, 16, 32, 35]);
    expect(recheckAgesDays(1)).toEqual([1]);
  });
  it('re-checks each request once per age crossed since the last re-check', () => {
    const now = Date.parse('2026-10-14T05:00:00Z');
    // The last re-check 1 h ago: the requests that turned 1, 2, 4... days old in that hour.
    expect(recheckWindows(now, now - HOUR, 4).map((w) => [w.from.toISOString(), w.to.toISOString()])).toEqual([
      ['2026-10-10T04:00:00.000Z', '2026-10-10T05:00:00.000Z'],
      ['2026-10-12T04:00:00.000Z', '2026-10-12T05:00:00.000Z'],
      ['2026-10-13T04:00:00.000Z', '2026-10-13T05:00:00.000Z'],
    ]);
    // Three days since the last: the windows overlap and merge into one.
    expect(recheckWindows(now, now - 3 * DAY, 4).map((w) => [w.from.toISOString(), w.to.toISOString()])).toEqual([
      ['2026-10-07T05:00:00.000Z', '2026-10-13T05:00:00.000Z'],
    ]);
    // No re-check yet: every request between 1 day and the maximum age, once.
    expect(recheckWindows(now, null, 35).map((w) => [w.from.toISOString(), w.to.toISOString()])).toEqual([
      ['2026-09-09T05:00:00.000Z', '2026-10-13T05:00:00.000Z'],
    ]);
  });
});

describe('a request billed 3 days late (simulator, 20 % faults)', () => {
  it('is re-checked until billed: its units in the store, counted once, in every zone; the gauges follow', async () => {
    const collectedFrom = new Date(t0.getTime() - DAY);
    expect((await runJob(rt, sim, 'requests')).status).toBe('ok');
    // The late ones the first run saw unbilled, past the re-collection window (6 h): nothing re-collects them.
    const late = truthRequests(collectedFrom, new Date(t0.getTime() - 6 * HOUR)).filter((r) => Date.parse(r.billed_at) > t0.getTime() + 2 * DAY);
    expect(late.length).toBeGreaterThan(0);
    for (const r of late) expect((await storedCopy(r.request_id)).billable_units).toBeNull();
    const before = await gauges();
    expect(before).toEqual(truthUnbilled(collectedFrom));
    expect(before.unbilled).toBeGreaterThanOrEqual(late.length);

    // A day later: re-checked at 1 day of age, still unbilled.
    sim.clock.set(new Date(t0.getTime() + DAY));
    expect((await runJob(rt, sim, 'requests')).status).toBe('ok');
    for (const r of late) expect((await storedCopy(r.request_id)).billable_units).toBeNull();

    // Four days on: billed 3 days after they ended; the re-check at 2 and 4 days fetches them billed.
    sim.clock.set(new Date(t0.getTime() + 4 * DAY));
    expect((await runJob(rt, sim, 'requests')).status).toBe('ok');
    for (const r of late) {
      const stored = await storedCopy(r.request_id);
      expect(stored.copies).toBe(1);
      expect(decimalToScaled(stored.billable_units ?? 'null', 3)).toBe(BigInt(Math.round(r.billable_units * 1000)));
    }
    // Every endpoint-day, in both zones, equals the truth at the new now: requests once, units billed.
    const to = sim.clock.now();
    for (const timezone of ZONES) {
      const truth = sim.truth.requests({ from: collectedFrom.toISOString(), to: to.toISOString(), timezone, endpointIds: endpoints });
      const stored = await requestCostByEndpointDay(rt.store, { from: toDateTime64(collectedFrom), to: toDateTime64(to), endpoint_ids: endpoints, timezone });
      const key = (e: string, d: string) => `${e}|${d}`;
      expect(new Map(stored.map((r) => [key(r.endpoint_id, r.day), [r.request_count, r.unbilled_requests, decimalToScaled(r.billable_units, 3)]])))
        .toEqual(new Map(truth.map((r) => [key(r.endpoint_id, r.day), [r.request_count, r.unbilled_count, BigInt(r.billable_units_billed_milli)]])));
      // The rollup the query API reads (requests_daily) holds the late units too.
      const [rolled] = await queryRows<{ billed: number; units: string }>(
        rt,
        `SELECT toUInt64(sum(billed_requests)) AS billed, toString(sum(billable_units)) AS units FROM requests_daily FINAL
         WHERE timezone = {tz:String} AND day >= toDate({from:DateTime64(3, 'UTC')}, {tz:String}) AND has({eps:Array(String)}, endpoint_id)`,
        { tz: timezone, from: toDateTime64(collectedFrom), eps: endpoints },
      );
      expect(Number(rolled.billed)).toBe(truth.reduce((n, r) => n + r.billed_count, 0));
      expect(decimalToScaled(rolled.units, 3)).toBe(truth.reduce((n, r) => n + BigInt(r.billable_units_billed_milli), 0n));
    }
    const after = await gauges();
    expect(after).toEqual(truthUnbilled(collectedFrom));
    // The late ones left the gauges: the oldest unbilled request now ended after them.
    const oldestLateAge = (to.getTime() - Math.min(...late.map((r) => Date.parse(r.ended_at)))) / 1000;
    expect(after.oldestAgeSeconds).toBeLessThan(oldestLateAge);
  }, 240_000);

  it('a re-check that died after storing billed copies, before refreshing their days: the next run refreshes them first', async () => {
    // Runs on the store the test above left (every late request billed). The state such a death leaves: the raw requests billed, the rollup of one UTC day (and the Tokyo days it
    // touches) still as computed before, everything unbilled; and the span in the pending checkpoint.
    const day = new Date(t0.getTime() - DAY);
    const dayStart = new Date(Date.UTC(day.getUTCFullYear(), day.getUTCMonth(), day.getUTCDate()));
    const dayEnd = new Date(dayStart.getTime() + DAY);
    for (const timezone of ZONES) {
      await rt.store.client.command({
        query: `INSERT INTO requests_daily
                SELECT timezone, endpoint_id, day, request_count, 0, request_count, toDecimal128(0, 9), unpriced_requests, NULL, NULL,
                       version + 1, computed_at
                FROM requests_daily FINAL
                WHERE timezone = {tz:String}
                  AND day >= toDate({from:DateTime64(3, 'UTC')}, {tz:String}) AND day <= toDate({to:DateTime64(3, 'UTC')}, {tz:String})`,
        query_params: { tz: timezone, from: toDateTime64(dayStart), to: toDateTime64(new Date(dayEnd.getTime() - 1)) },
      });
    }
    await new Checkpoints(rt.store, rt.writer).save('requests', PENDING_REFRESH_KEY, JSON.stringify([{ from: dayStart.toISOString(), to: dayEnd.toISOString() }]));
    const billedOn = async (timezone: string) => {
      const [row] = await queryRows<{ billed: string }>(
        rt,
        `SELECT toString(sum(billed_requests)) AS billed FROM requests_daily FINAL
         WHERE timezone = {tz:String} AND day >= toDate({from:DateTime64(3, 'UTC')}, {tz:String}) AND has({eps:Array(String)}, endpoint_id)`,
        { tz: timezone, from: toDateTime64(new Date(t0.getTime() - DAY)), eps: endpoints },
      );
      return Number(row.billed);
    };
    const to = sim.clock.now();
    const truthBilled = (timezone: string) =>
      sim.truth.requests({ from: new Date(t0.getTime() - DAY).toISOString(), to: to.toISOString(), timezone, endpointIds: endpoints }).reduce((n, r) => n + r.billed_count, 0);
    for (const timezone of ZONES) expect(await billedOn(timezone)).toBeLessThan(truthBilled(timezone));

    expect((await runJob(rt, sim, 'requests')).status).toBe('ok');
    for (const timezone of ZONES) expect(await billedOn(timezone)).toBe(truthBilled(timezone));
    expect(await new Checkpoints(rt.store, rt.writer).get('requests', PENDING_REFRESH_KEY)).toBe('[]');
  }, 240_000);
});
