import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../src/config.js';
import { scrapeTargets } from '../src/collectors/scrape.js';
import { startService } from '../src/service.js';
import { createLogger } from '../src/log.js';
import { createRegistry } from '../src/metrics.js';
import { testConfig } from './support/store.js';

function problems(env: Record<string, string>): ConfigError {
  try {
    parseConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('expected a ConfigError');
}

describe('configuration hardening', () => {
  it('every token has the same documented minimum (16 characters), API_TOKENS included', () => {
    for (const variable of ['API_TOKENS', 'METRICS_TOKEN', 'LOG_DRAIN_TOKEN']) {
      const err = problems({ [variable]: 'a' });
      expect(err.problems).toEqual([{ variable, expected: expect.stringContaining('at least 16 characters') }]);
    }
    // One short token among good ones is refused too.
    expect(problems({ API_TOKENS: '0123456789abcdef,short' }).problems[0].variable).toBe('API_TOKENS');
    expect(parseConfig({ API_TOKENS: '0123456789abcdef, 0123456789abcdeg ' }).API_TOKENS).toEqual(['0123456789abcdef', '0123456789abcdeg']);
    expect(problems({ LOG_DRAIN_SECRET: 'x'.repeat(31) }).problems[0].expected).toContain('at least 32 characters');
  });

  it('never echoes a value in a configuration error', () => {
    const secret = 'tok-SECRET-value';
    const err = problems({ METRICS_TOKEN: 'SECRET', TIMEZONES: `UTC,${secret}`, SVC_METRICS_PATH: `//${secret}/metrics` });
    expect(err.problems.map((p) => p.variable).sort()).toEqual(['METRICS_TOKEN', 'SVC_METRICS_PATH', 'TIMEZONES']);
    expect(err.message).not.toContain('SECRET');
  });

  it('SVC_METRICS_PATH must be a path on the platform host, never a URL that sends the key elsewhere', () => {
    for (const bad of ['//other.host/metrics', 'metrics', '/\\\\other.host/x', 'http://other.host/metrics', '/metrics?x=1']) {
      expect(problems({ SVC_METRICS_PATH: bad }).problems[0].variable).toBe('SVC_METRICS_PATH');
    }
    const config = parseConfig({ SVC_METRICS_PATH: '/v1/serverless/metrics' });
    const [target] = scrapeTargets(config, { baseUrl: 'https://api.example.test', apiKey: 'k' });
    expect(new URL(target.url).host).toBe('api.example.test');
  });

  it('a malformed SCRAPE_TARGETS names the variable and the field, never the header secret', () => {
    const secret = 'Bearer hdr-SECRET-123';
    for (const raw of [`[{"url":"http://x","headers":{"authorization":"${secret}"}`, `[{"url":"${secret}","headers":{"authorization":"${secret}"}}]`]) {
      let err: unknown;
      try {
        scrapeTargets(parseConfig({ SCRAPE_TARGETS: raw }), { baseUrl: 'http://a' });
      } catch (e) {
        err = e;
      }
      expect(err).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toContain('SCRAPE_TARGETS');
      expect((err as Error).message).not.toContain('SECRET');
    }
  });

  it('refuses to serve /metrics on a non-loopback HOST without METRICS_TOKEN, before opening the store', async () => {
    const config = testConfig({ HOST: '0.0.0.0', PORT: '0', DATA_DIR: '/nonexistent/never-created' });
    const err = await startService(config, { logger: createLogger('silent'), registry: createRegistry({ defaultMetrics: false }) }).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems[0].variable).toBe('METRICS_TOKEN');
  });
});
