import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type JobDefinition } from '../../src/collectors/job.js';
import { commaList, parseJobArgs, UsageError } from '../../src/jobs/options.js';

const job = defineJob({
  name: 'probe',
  description: 'a job with one option of each kind',
  defaultCron: '* * * * *',
  scope: 'api',
  label: 'the probe',
  range: 'times',
  options: z.object({
    'recollect-hours': z.coerce.number().min(0).default(2).describe('hours'),
    kinds: commaList(z.enum(['serverless', 'models'])).default(['serverless', 'models']).describe('kinds'),
  }),
  async run() {},
});
const datesOnly = defineJob({ name: 'daily', description: 'whole days', defaultCron: '* * * * *', scope: 'admin', label: 'the daily probe', range: 'dates', async run() {} });

function usageError(raw: Record<string, string>, j: JobDefinition = job): string {
  try {
    parseJobArgs(j, raw);
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError);
    return (err as Error).message;
  }
  throw new Error(`accepted ${JSON.stringify(raw)}`);
}

describe('parseJobArgs', () => {
  it('fills the defaults of a scheduled run (no options) and types the values', () => {
    expect(parseJobArgs(job, {})).toEqual({ range: undefined, timezone: undefined, options: { 'recollect-hours': 2, kinds: ['serverless', 'models'] } });
    const parsed = parseJobArgs(job, { 'recollect-hours': '0.5', kinds: 'models', timezone: 'Asia/Tokyo' });
    expect(parsed.options).toEqual({ 'recollect-hours': 0.5, kinds: ['models'] });
    expect(parsed.timezone).toBe('Asia/Tokyo');
  });

  it('keeps --from/--to as typed, read in the zone the job asks for', () => {
    const { range } = parseJobArgs(job, { from: '2026-11-01', to: '2026-11-01T12:00:00Z' });
    expect([range?.from, range?.to]).toEqual(['2026-11-01', '2026-11-01T12:00:00Z']);
    expect(range?.instants('Europe/Berlin')).toEqual({ fromMs: Date.parse('2026-10-31T23:00:00Z'), toMs: Date.parse('2026-11-01T12:00:00Z') });
  });

  it('names the option in a one-line message', () => {
    expect(usageError({ bogus: '1' })).toBe('unknown option --bogus for the probe job');
    expect(usageError({ 'recollect-hours': '-1' })).toMatch(/^--recollect-hours: .*>=\s?0.* \(got "-1"\)$/);
    expect(usageError({ 'recollect-hours': 'soon' })).toMatch(/^--recollect-hours: .* \(got "soon"\)$/);
    expect(usageError({ kinds: 'serverless,metrics' })).toMatch(/^--kinds: .*"serverless"\|"models".* \(got "serverless,metrics"\)$/);
    expect(usageError({ timezone: 'Mars/Olympus' })).toBe('--timezone: expected an IANA time zone (e.g. Europe/Berlin) (got "Mars/Olympus")');
    expect(usageError({ from: '11/01/2026', to: '2026-11-02' })).toBe(
      '--from: expected a date YYYY-MM-DD or an ISO 8601 datetime (got "11/01/2026")',
    );
    for (const m of Object.values({ a: usageError({ bogus: '1' }), b: usageError({ kinds: '' }) })) expect(m).not.toContain('\n');
  });

  it('wants both --from and --to, --to after --from (in --timezone, else UTC)', () => {
    expect(usageError({ from: '2026-11-01' })).toBe('a backfill needs both --from and --to (--to is exclusive)');
    expect(usageError({ to: '2026-11-01' })).toBe('a backfill needs both --from and --to (--to is exclusive)');
    expect(usageError({ from: '2026-11-02', to: '2026-11-01' })).toBe('--to: must be after --from (--to is exclusive) (got "2026-11-01")');
    expect(usageError({ from: '2026-11-01', to: '2026-11-01' })).toMatch(/^--to: must be after --from/);
    // 03:00Z is after the UTC midnight of 2026-11-01 but before New York's (04:00Z, EDT).
    expect(parseJobArgs(job, { from: '2026-11-01', to: '2026-11-01T03:00:00Z' }).range?.to).toBe('2026-11-01T03:00:00Z');
    expect(usageError({ from: '2026-11-01', to: '2026-11-01T03:00:00Z', timezone: 'America/New_York' })).toMatch(/^--to: must be after --from/);
  });

  it('a job whose window is whole days takes dates only', () => {
    expect(usageError({ from: '2026-11-01T00:00', to: '2026-11-02' }, datesOnly)).toBe('--from: expected a date YYYY-MM-DD (got "2026-11-01T00:00")');
    expect(parseJobArgs(datesOnly, { from: '2026-11-01', to: '2026-11-02' }).range?.from).toBe('2026-11-01');
    expect(usageError({ kinds: 'models' }, datesOnly)).toBe('unknown option --kinds for the daily job');
  });
});
