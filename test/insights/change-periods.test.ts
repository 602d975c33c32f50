// One default baseline for the API and the CLI (src/insights/cost-changes.ts changePeriods), worked by hand.
import { describe, expect, it } from 'vitest';
import { changePeriods } from '../../src/insights/cost-changes.js';

describe('changePeriods', () => {
  it('a whole month ended: the calendar month before (31 days against 30)', () => {
    expect(changePeriods({ from: '2026-11-01', to: '2026-12-01', today: '2026-12-15' })).toEqual({ from: '2026-11-01', to: '2026-12-01', baselineFrom: '2026-10-01', baselineTo: '2026-11-01', toDate: false });
  });

  it('a month 2 days old: Dec 1-2 against Nov 1-2, not the whole of November', () => {
    expect(changePeriods({ from: '2026-12-01', to: '2027-01-01', today: '2026-12-02' })).toEqual({ from: '2026-12-01', to: '2026-12-03', baselineFrom: '2026-11-01', baselineTo: '2026-11-03', toDate: true });
  });

  it('a named baseline month of a month to date: its same first days', () => {
    expect(changePeriods({ from: '2026-12-01', to: '2027-01-01', baselineFrom: '2026-09-01', today: '2026-12-10' })).toMatchObject({ to: '2026-12-11', baselineFrom: '2026-09-01', baselineTo: '2026-09-11' });
  });

  it('a range of days: the same number of days just before; both bounds given: as given', () => {
    expect(changePeriods({ from: '2026-11-10', to: '2026-11-17', today: '2026-12-01' })).toMatchObject({ baselineFrom: '2026-11-03', baselineTo: '2026-11-10' });
    expect(changePeriods({ from: '2026-11-10', to: '2026-11-17', baselineTo: '2026-11-05', today: '2026-12-01' })).toMatchObject({ baselineFrom: '2026-10-29', baselineTo: '2026-11-05' });
    expect(changePeriods({ from: '2026-11-10', to: '2026-11-17', baselineFrom: '2026-01-01', baselineTo: '2026-02-01', today: '2026-12-01' })).toMatchObject({ baselineFrom: '2026-01-01', baselineTo: '2026-02-01' });
  });

  it('a quarter: the quarter before', () => {
    expect(changePeriods({ from: '2026-07-01', to: '2026-10-01', today: '2026-12-01' })).toMatchObject({ baselineFrom: '2026-04-01', baselineTo: '2026-07-01' });
  });
});
