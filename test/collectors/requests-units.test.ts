import { describe, expect, it } from 'vitest';
import {
  coveringEndpointIds,
  dayChunks,
  toRequestLine,
  toRequestRow,
} from '../../src/collectors/requests.js';
import { parsePrices, PricesFileError } from '../../src/collectors/prices.js';
import { parseTimeArg } from '../../src/collectors/time-args.js';
import { isoToDateTime64 } from '../../src/values.js';
import { BILLED_VERSION_BIT, RequestRow, requestVersion, requests } from '../../src/store/tables/requests.js';

// Pure pieces of the requests collector and the prices file: no store, no simulator.

const collected = { collectedAtMs: 1_790_000_000_000, collectedAt: '2026-09-21 14:13:20.000' };
const item = {
  request_id: 'r-1',
  gateway_request_id: 'g-1',
  endpoint_id: 'acme/app/generate',
  started_at: '2026-11-21T10:00:00.100Z',
  sent_at: '2026-11-21T10:00:00.2Z',
  ended_at: '2026-11-21T10:00:03Z',
  status_code: 200,
  duration: 2.8,
  runner_id: 'run-1',
  billable_units: 2.8,
};

describe('requestVersion', () => {
  it('ranks any billed copy above any unbilled one, then the later collection', () => {
    const late = 4_000_000_000_000;
    expect(requestVersion(true, 1)).toBeGreaterThan(requestVersion(false, late));
    expect(requestVersion(true, 2)).toBeGreaterThan(requestVersion(true, 1));
    expect(requestVersion(false, 2)).toBeGreaterThan(requestVersion(false, 1));
    expect(Number.isSafeInteger(requestVersion(true, late))).toBe(true);
    expect(() => requestVersion(true, BILLED_VERSION_BIT)).toThrow(RangeError);
  });
});

describe('toRequestRow', () => {
  it('maps an item to columns with the platform names, units as exact decimal text', () => {
    expect(toRequestRow(item, collected)).toEqual({
      request_id: 'r-1',
      gateway_request_id: 'g-1',
      endpoint_id: 'acme/app/generate',
      started_at: '2026-11-21 10:00:00.100',
      sent_at: '2026-11-21 10:00:00.200',
      ended_at: '2026-11-21 10:00:03.000',
      status_code: 200,
      duration: 2.8,
      runner_id: 'run-1',
      billable_units: '2.8',
      raw: '',
      version: BILLED_VERSION_BIT + collected.collectedAtMs,
      collected_at: collected.collectedAt,
    });
  });

  it('keeps unknown fields in raw, stores absent ones as NULL and a null unit as unbilled', () => {
    const { gateway_request_id: _g, runner_id: _r, started_at: _s, ...rest } = item;
    const row = toRequestRow({ ...rest, billable_units: null, region: 'eu', payload: { a: 1 } }, collected);
    expect(row).toMatchObject({
      gateway_request_id: null,
      runner_id: null,
      started_at: null,
      billable_units: null,
      raw: '{"region":"eu","payload":{"a":1}}',
      version: collected.collectedAtMs,
    });
  });

  it('takes billable_units as a number, null or absent (absent: not billed yet)', () => {
    const { billable_units: _u, ...unbilled } = item;
    expect(toRequestRow({ ...item, billable_units: 4 }, collected)).toMatchObject({ billable_units: '4' });
    expect(toRequestRow({ ...item, billable_units: null }, collected)).toMatchObject({ billable_units: null });
    expect(toRequestRow(unbilled, collected)).toMatchObject({ billable_units: null, version: collected.collectedAtMs });
  });

  it('converts offsets to UTC and tiny numbers without exponents', () => {
    const row = toRequestRow({ ...item, ended_at: '2026-11-21T11:00:03.5+01:00', billable_units: 1e-7 }, collected);
    expect(row).toMatchObject({ ended_at: '2026-11-21 10:00:03.500', billable_units: '0.0000001' });
  });

  it('rounds billable units to the 9 decimals the column keeps (ClickHouse would truncate them)', () => {
    const units = (v: number) => (toRequestRow({ ...item, billable_units: v }, collected) as { billable_units: string }).billable_units;
    expect(units(5e-10)).toBe('0.000000001');
    expect(units(4e-10)).toBe('0');
    expect(units(1.0000000015)).toBe('1.000000002');
    expect(units(2.5)).toBe('2.5');
  });

  it('writes a line with exactly the table columns, which the row schema accepts, escaping what needs it', () => {
    const r = toRequestLine({ ...item, request_id: 'a"b\\c\n', runner_id: null, odd: 'é"' }, collected);
    if ('reason' in r) throw new Error(r.reason);
    const parsed = JSON.parse(r.line) as Record<string, unknown>;
    expect(Object.keys(parsed)).toEqual(requests.columns);
    expect(RequestRow.parse(parsed)).toMatchObject({ request_id: 'a"b\\c\n', runner_id: null, raw: '{"odd":"é\\""}' });
    expect(r.billed).toBe(true);
  });

  it('escapes ids made only of characters JSON escapes, and lone surrogates; plain ids are copied as they are', () => {
    const cases = ['"', '\\', '\n\t', '"\u0001"', '\ud83d', 'x\ude00', '😀', 'acme/img', ''];
    for (const id of cases) {
      const r = toRequestLine({ ...item, request_id: id, endpoint_id: id, runner_id: id, gateway_request_id: id }, collected);
      if ('reason' in r) throw new Error(r.reason);
      const quoted = JSON.stringify(id);
      expect(r.line, id).toContain(`{"request_id":${quoted},"gateway_request_id":${quoted},"endpoint_id":${quoted},`);
      expect(r.line, id).toContain(`"runner_id":${quoted},`);
      expect(JSON.parse(r.line), id).toMatchObject({ request_id: id, gateway_request_id: id, endpoint_id: id, runner_id: id });
    }
  });

  it('gives the reason for an item that cannot be stored', () => {
    expect(toRequestRow({ ...item, ended_at: undefined }, collected)).toBe('ended_at: expected string, received undefined');
    expect(toRequestRow({ ...item, ended_at: 'yesterday' }, collected)).toBe('ended_at: not an ISO 8601 timestamp: "yesterday"');
    expect(toRequestRow({ ...item, sent_at: 5 }, collected)).toBe('sent_at: expected string, received number');
    expect(toRequestRow({ ...item, started_at: 'soon' }, collected)).toBe('started_at: not an ISO 8601 timestamp: "soon"');
    expect(toRequestRow({ ...item, status_code: '200' }, collected)).toBe('status_code: expected an integer, received string');
    expect(toRequestRow({ ...item, status_code: 70000 }, collected)).toBe('status_code: out of range: 70000');
    expect(toRequestRow({ ...item, duration: null }, collected)).toBe('duration: expected a number, received null');
    expect(toRequestRow({ ...item, runner_id: 7 }, collected)).toBe('runner_id: expected string, received number');
    expect(toRequestRow({ ...item, billable_units: 'many' }, collected)).toBe('billable_units: expected a number, received string');
    expect(toRequestRow({ ...item, request_id: undefined }, collected)).toBe('request_id: expected string, received undefined');
    expect(toRequestRow('not an object', collected)).toBe('(item): expected object, received string');
    expect(toRequestRow([item], collected)).toBe('(item): expected object, received array');
  });
});

describe('isoToDateTime64', () => {
  it('reads the platform form, offsets, and a time without zone as UTC', () => {
    expect(isoToDateTime64('2026-11-21T10:00:00Z')).toBe('2026-11-21 10:00:00.000');
    expect(isoToDateTime64('2026-11-21T10:00:00.12Z')).toBe('2026-11-21 10:00:00.120');
    expect(isoToDateTime64('2026-11-21T05:00:00-05:00')).toBe('2026-11-21 10:00:00.000');
    expect(isoToDateTime64('2026-11-21T10:00:00')).toBe('2026-11-21 10:00:00.000');
    expect(isoToDateTime64('garbage')).toBeNull();
  });
});

describe('coveringEndpointIds', () => {
  it('drops routes of an app whose bare id is listed (it already returns them) and sorts', () => {
    expect(
      coveringEndpointIds(['acme/b/x', 'acme/a', 'acme/a/gen', 'acme/b/y', 'acme/a', ' acme/c ', '']),
    ).toEqual(['acme/a', 'acme/b/x', 'acme/b/y', 'acme/c']);
  });
});

describe('dayChunks and --from/--to', () => {
  it('cuts at midnight of the zone, including a 25-hour DST day', () => {
    const from = new Date(parseTimeArg('2026-10-31', 'America/New_York', '--from'));
    const to = new Date(parseTimeArg('2026-11-03T12:00:00Z', 'America/New_York', '--to'));
    const chunks = dayChunks(from, to, 'America/New_York').map((c) => [c.from.toISOString(), c.to.toISOString()]);
    expect(chunks).toEqual([
      ['2026-10-31T04:00:00.000Z', '2026-11-01T04:00:00.000Z'],
      ['2026-11-01T04:00:00.000Z', '2026-11-02T05:00:00.000Z'],
      ['2026-11-02T05:00:00.000Z', '2026-11-03T05:00:00.000Z'],
      ['2026-11-03T05:00:00.000Z', '2026-11-03T12:00:00.000Z'],
    ]);
    expect(() => parseTimeArg('11/03/2026', 'UTC', '--to')).toThrow('--to must be a date YYYY-MM-DD or an ISO 8601 datetime');
  });
});

describe('parsePrices', () => {
  const ok = { endpoint_id: 'acme/app-1', unit_price: '0.0004', currency: 'USD', effective_from: '2026-11-10T00:00:00Z' };
  const parse = (entries: unknown) => parsePrices(JSON.stringify(entries), 'prices.json');
  const error = (entries: unknown) => {
    try {
      parse(entries);
    } catch (err) {
      expect(err).toBeInstanceOf(PricesFileError);
      return (err as Error).message;
    }
    throw new Error('no error');
  };

  it('accepts decimal strings and numbers, offsets and dates, and normalises them', () => {
    expect(
      parse([
        ok,
        { endpoint_id: 'acme/app-1/gen', unit_price: 0.25, currency: 'EUR', effective_from: '2026-11-10' },
        { endpoint_id: 'acme/app-2', unit_price: '1.500000000000', currency: 'USD', effective_from: '2026-11-10T01:00:00+01:00' },
      ]),
    ).toEqual([
      { ...ok, effective_from: '2026-11-10 00:00:00.000' },
      { endpoint_id: 'acme/app-1/gen', unit_price: '0.25', currency: 'EUR', effective_from: '2026-11-10 00:00:00.000' },
      { endpoint_id: 'acme/app-2', unit_price: '1.5', currency: 'USD', effective_from: '2026-11-10 00:00:00.000' },
    ]);
  });

  it('names the entry and the field of a bad value', () => {
    expect(error([ok, { ...ok, unit_price: '0,4' }])).toBe(
      'PRICES_FILE prices.json: entry 2 (acme/app-1), field unit_price: expected a decimal number >= 0 with at most 12 decimals, such as "0.0004"; got "0,4"',
    );
    expect(error([{ ...ok, unit_price: '-1' }])).toMatch(/entry 1 \(acme\/app-1\), field unit_price: /);
    expect(error([{ ...ok, unit_price: '0.0000000000001' }])).toMatch(/field unit_price: .*at most 12 decimals/);
    expect(error([{ ...ok, currency: 'usd' }])).toMatch(/entry 1 \(acme\/app-1\), field currency: expected an ISO 4217/);
    expect(error([{ ...ok, effective_from: '2026-11-10T00:00:00' }])).toMatch(/field effective_from: expected an ISO 8601 datetime with Z or an offset/);
    expect(error([{ ...ok, endpoint_id: 'app-1' }])).toMatch(/entry 1 \(app-1\), field endpoint_id: expected an endpoint id/);
    expect(error([ok, { unit_price: '1', currency: 'USD', effective_from: '2026-11-10' }])).toMatch(/^PRICES_FILE prices.json: entry 2, field endpoint_id: /);
    expect(error([{ ...ok, unit_prize: '1' }])).toMatch(/entry 1 \(acme\/app-1\), the entry: unknown field\(s\) unit_prize/);
  });

  it('refuses a file that is not a JSON array, a repeated entry, and two currencies for one endpoint', () => {
    expect(() => parsePrices('{', 'p.json')).toThrow(/^PRICES_FILE p.json: not valid JSON/);
    expect(error({ prices: [] })).toBe('PRICES_FILE prices.json: expected a JSON array of price entries');
    expect(error([ok, { ...ok, unit_price: '1', effective_from: '2026-11-10T01:00:00+01:00' }])).toMatch(
      /entry 2 \(acme\/app-1\), field effective_from: entry 1 already prices acme\/app-1 from 2026-11-10 00:00:00.000 UTC/,
    );
    expect(error([ok, { ...ok, currency: 'EUR', effective_from: '2026-12-01' }])).toMatch(
      /entry 2 \(acme\/app-1\), field currency: EUR, but entry 1 prices acme\/app-1 in USD/,
    );
  });
});
