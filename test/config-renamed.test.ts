// Issue 43.2: an exported HOST (shells set it to the machine's name) turned `serve` into a configuration error.
// The service reads TALLYHOUSE_HOST and TALLYHOUSE_PORT; the old names are read for a release, with one deprecation
// line each, and the new names win when both are set.
import { describe, expect, it } from 'vitest';
import { deprecatedVariables, parseConfig } from '../src/config.js';
import { runCli } from './support/process.js';

describe('TALLYHOUSE_HOST and TALLYHOUSE_PORT', () => {
  it('the new names are read, and win over a shell HOST or PORT', () => {
    const c = parseConfig({ TALLYHOUSE_HOST: '127.0.0.2', TALLYHOUSE_PORT: '9090', HOST: 'build-box-7', PORT: 'x' });
    expect([c.HOST, c.PORT]).toEqual(['127.0.0.2', 9090]);
    expect(deprecatedVariables({ TALLYHOUSE_HOST: '127.0.0.2', HOST: 'build-box-7' })).toEqual([]);
  });

  it('the old names still work for a release, each with one deprecation line', () => {
    const c = parseConfig({ HOST: '127.0.0.3', PORT: '9091' });
    expect([c.HOST, c.PORT]).toEqual(['127.0.0.3', 9091]);
    expect(deprecatedVariables({ HOST: '127.0.0.3', PORT: '9091' })).toEqual([
      'tallyhouse: HOST is deprecated (shells set it for themselves): set TALLYHOUSE_HOST instead; HOST is read until the next release',
      'tallyhouse: PORT is deprecated (shells set it for themselves): set TALLYHOUSE_PORT instead; PORT is read until the next release',
    ]);
    expect(parseConfig({}).HOST).toBe('127.0.0.1');
  });

  it('serve with a shell HOST exported and TALLYHOUSE_HOST set listens on TALLYHOUSE_HOST', async () => {
    const p = runCli(['serve'], { HOST: 'build-box-7', TALLYHOUSE_HOST: '127.0.0.1', TALLYHOUSE_PORT: '0', PORT: undefined, DATA_DIR: `${process.env.TMPDIR ?? '/tmp'}/th-renamed-${process.pid}`, JOBS_ENABLED: 'false' });
    const [, url] = await p.waitFor(/"url":"(http:\/\/127\.0\.0\.1:\d+)"/);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect(p.stderr()).not.toContain('deprecated');
    p.child.kill('SIGTERM');
    expect((await p.exited).code).toBe(0);
  });
});
