// Issue 30.8: configuration errors named all at once, and the bad time zone named (by position, with the zone it
// likely meant: a value is never echoed, it may be a secret). Run as a user starts the service.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

async function serve(env: Record<string, string | undefined>) {
  const p = runCli(['serve'], { TALLYHOUSE_PORT: '0', DATA_DIR: mkdtempSync(join(tmpdir(), 'th-config-')), API_TOKENS: undefined, METRICS_TOKEN: undefined, ...env });
  const { code } = await p.exited;
  return { code, err: p.stderr() };
}

describe('configuration errors', () => {
  it('HOST=0.0.0.0 without tokens names METRICS_TOKEN and API_TOKENS in one message (API_TOKENS came only on the next try)', async () => {
    const r = await serve({ TALLYHOUSE_HOST: '0.0.0.0' });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'tallyhouse: invalid configuration: METRICS_TOKEN: a token of at least 16 characters when HOST is not a loopback address: GET /metrics carries month-to-date cost per app; ' +
        'API_TOKENS: comma-separated tokens of at least 16 characters each when HOST is not a loopback address: the query API answers cost and logs\n',
    );
  }, 120_000);

  it('with METRICS_TOKEN set, API_TOKENS is still named before anything starts', async () => {
    const r = await serve({ TALLYHOUSE_HOST: '0.0.0.0', METRICS_TOKEN: 'm'.repeat(32) });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'tallyhouse: invalid configuration: API_TOKENS: comma-separated tokens of at least 16 characters each when HOST is not a loopback address: the query API answers cost and logs\n',
    );
  }, 120_000);

  it('TIMEZONES names which zone is not one and the zone it likely meant', async () => {
    const r = await serve({ TIMEZONES: 'UTC,America/New_Yrok' });
    expect(r.code).toBe(2);
    expect(r.err).toBe(
      'tallyhouse: invalid configuration: TIMEZONES: expected IANA time zone names (e.g. UTC,Europe/Berlin); the 2nd of 2 is not one (did you mean America/New_York?)\n',
    );
  }, 120_000);
});
