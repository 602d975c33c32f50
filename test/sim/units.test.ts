// Pure parts of the simulator: exact money, nearest-rank percentiles, buckets, ids and the world's shape.
import { describe, expect, it } from 'vitest';
import { formatNanos, formatMilli, rowCost } from '../../src/sim/money.js';
import { percentile } from '../../src/sim/analytics.js';
import { bucketize, parseTimeParam } from '../../src/sim/time.js';
import { buildWorld } from '../../src/sim/world.js';
import { SimModel } from '../../src/sim/model.js';
import { decodeRequestId } from '../../src/sim/requests.js';

describe('money', () => {
  it('formats integer nanos as exact decimals', () => {
    expect(formatNanos(575_000)).toBe('0.000575');
    expect(formatNanos(1)).toBe('0.000000001');
    expect(formatNanos(0)).toBe('0');
    expect(formatNanos(-5)).toBe('-0.000000005');
    expect(formatNanos(1_234_567_890_123n)).toBe('1234.567890123');
    expect(formatNanos(12_000_000_000)).toBe('12');
    expect(formatMilli(1500)).toBe('1.5');
    expect(formatMilli(7)).toBe('0.007');
  });

  it('rounds the discount half up from the row\'s own subtotal', () => {
    expect(rowCost(1, 5, 10_000)).toEqual({ subtotalNanos: 5n, discountNanos: 1n, totalNanos: 4n }); // 0.5 → 1
    expect(rowCost(1, 4, 10_000)).toEqual({ subtotalNanos: 4n, discountNanos: 0n, totalNanos: 4n }); // 0.4 → 0
    expect(rowCost(3, 575_000, 12_500)).toEqual({ subtotalNanos: 1_725_000n, discountNanos: 215_625n, totalNanos: 1_509_375n });
    expect(rowCost(10, 7, null).discountNanos).toBe(0n);
    // Large rows stay exact (subtotal × milli-percent is beyond 2^53).
    const big = rowCost(90_000_000, 1_100_000, 7_250);
    expect(big.subtotalNanos).toBe(99_000_000_000_000n);
    expect(big.discountNanos).toBe(7_177_500_000_000n);
  });
});

describe('percentile', () => {
  it('is nearest rank on the sorted values', () => {
    const v = Array.from({ length: 20 }, (_, i) => i + 1);
    expect(percentile(v, 95)).toBe(19);
    expect(percentile(v, 99)).toBe(20);
    expect(percentile(v, 25)).toBe(5);
    expect(percentile([1, 2, 3, 4], 50)).toBe(2);
    expect(percentile([7], 99)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });
});

describe('time', () => {
  it('parses dates as local midnight and keeps explicit offsets', () => {
    expect(new Date(parseTimeParam('2026-03-08', 'America/New_York')!).toISOString()).toBe('2026-03-08T05:00:00.000Z');
    expect(new Date(parseTimeParam('2026-03-08T12:00:00+01:00', 'America/New_York')!).toISOString()).toBe('2026-03-08T11:00:00.000Z');
    expect(parseTimeParam('2026-02-30', 'UTC')).toBeNull();
    expect(parseTimeParam('March 8', 'UTC')).toBeNull();
  });

  it('bucketizes DST days as 23 and 25 hours and clips at now', () => {
    const tz = 'America/New_York';
    const b = bucketize(parseTimeParam('2026-03-07', tz)!, parseTimeParam('2026-03-10', tz)!, 'day', tz, true, Number.POSITIVE_INFINITY)!;
    expect(b.labels).toEqual(['2026-03-07T00:00:00-05:00', '2026-03-08T00:00:00-05:00', '2026-03-09T00:00:00-04:00']);
    expect(b.edges.slice(1).map((e, i) => (e - b.edges[i]) / 3_600_000)).toEqual([24, 23, 24]);
    const fall = bucketize(parseTimeParam('2026-11-01', tz)!, parseTimeParam('2026-11-02', tz)!, 'hour', tz, true, Number.POSITIVE_INFINITY)!;
    expect(fall.labels).toHaveLength(25);
    const clipped = bucketize(Date.parse('2026-11-20T00:00:00Z'), Date.parse('2026-11-22T00:00:00Z'), 'day', 'UTC', true, Date.parse('2026-11-21T12:00:00Z'))!;
    expect(clipped.labels).toEqual(['2026-11-20T00:00:00+00:00', '2026-11-21T00:00:00+00:00']);
    expect(clipped.edges[2]).toBe(Date.parse('2026-11-21T12:00:00Z'));
  });
});

describe('world', () => {
  const world = buildWorld({ seed: 1, nowMs: Date.parse('2026-11-21T12:00:00Z'), days: 35, apps: 60, requestsPerHour: 20 });

  it('has more than 50 owned apps with unique names, routes, owners and a foreign owner', () => {
    const owned = world.apps.filter((a) => a.ownedByCaller);
    expect(owned).toHaveLength(60);
    expect(new Set(world.apps.map((a) => a.name)).size).toBe(world.apps.length);
    expect(new Set(owned.map((a) => a.owner))).toEqual(new Set(['acme', 'acme-team']));
    expect(world.apps.filter((a) => !a.ownedByCaller).map((a) => a.owner)).toEqual(['other-co', 'other-co', 'other-co']);
    for (const a of world.apps) {
      expect(a.endpoints[0].id).toBe(`${a.owner}/${a.name}`);
      for (const e of a.endpoints.slice(1)) expect(e.id).toMatch(new RegExp(`^${a.owner}/${a.name}/[a-z-]+$`));
      expect(['main', 'staging']).toContain(a.environment);
    }
    expect(world.apps.some((a) => a.endpoints.length === 3)).toBe(true);
    expect(world.apps.some((a) => a.machineTypes.length === 2)).toBe(true);
    expect(world.models.map((m) => m.endpointId)).toContain('svc-ai/flux-dev');
  });

  it('prices are integer nanos, surge is 1.5x, discounts are per owner and machine type', () => {
    const h100 = world.price('acme', 'GPU-H100');
    expect(h100).toMatchObject({ unitPriceNanos: 575_000, surgePriceNanos: 862_500, percentDiscount: 12.5 });
    expect(world.price('acme-team', 'GPU-H100')).toMatchObject({ unitPriceNanos: 540_000, surgePriceNanos: 810_000, percentDiscount: null });
    for (const o of world.owners) for (const m of world.machineTypes) {
      const p = world.price(o.name, m.name);
      expect(Number.isInteger(p.unitPriceNanos) && Number.isInteger(p.surgePriceNanos)).toBe(true);
      expect(p.surgePriceNanos * 2).toBe(p.unitPriceNanos * 3);
    }
  });

  it('request ids are unique, carry their coordinates, and are found again by id', () => {
    const model = new SimModel({ seed: 1, nowMs: Date.parse('2026-11-21T12:00:00Z'), days: 35, apps: 60, requestsPerHour: 20 });
    const ep = model.world.apps.find((a) => a.dormancy === 0)!.endpoints[0];
    const hour = Math.floor(Date.parse('2026-11-21T10:00:00Z') / 3_600_000);
    const ids = new Set<string>();
    for (let h = hour - 24; h < hour; h++) for (const r of model.requests.hour(ep, h)) {
      ids.add(r.id);
      expect(decodeRequestId(r.id)).toEqual({ endpointIndex: ep.index, hour: h, index: r.index });
      expect(Math.floor(r.endedMs / 3_600_000)).toBe(h);
    }
    expect(ids.size).toBeGreaterThan(50);
    const some = [...ids][17];
    expect(model.requests.byId(some)!.id).toBe(some);
    expect(model.requests.byId(some.replace(/^./, some[0] === 'a' ? 'b' : 'a'))).toBeNull();
  });
});
