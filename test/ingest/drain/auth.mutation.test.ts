// The drain's credential rules (src/ingest/drain/auth.ts) one by one, without a service or a store (issue 31: the
// mutants the HTTP tests left alive). Expected values are literals read off the README's drain section and the
// function's contract: which credential is configured decides which header is accepted, a bearer header is only
// one that begins with "Bearer ", a signature is exactly 64 hex digits.
import { createHmac } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { checkCredentials, DRAIN_OFF_MESSAGE, DRAIN_PATH, drainPath, redactDrainPath, resolveDrainAuth, urlTokenMatches } from '../../../src/ingest/drain/auth.js';
import { parseConfig } from '../../../src/config.js';
import { REDACT_PATHS } from '../../../src/log.js';

const SECRET = 'k'.repeat(40);
const TOKEN = 'drain-token-0123456789';
const DEMO = { DATA_DIR: '/nonexistent/m2-auth-test' };
const REAL = { ...DEMO, SVC_API_KEY: 'api-key-0123456789abcdef', SVC_ADMIN_KEY: 'admin-key-0123456789abcdef' };

/** A logger as the service's (same redaction), writing its JSON lines into an array. */
function capturingLogger() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) lines.push(JSON.parse(line));
      done();
    },
  });
  const logger = pino({ level: 'info', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, stream);
  return { logger, lines };
}

const hmac = (body: string) => createHmac('sha256', SECRET).update(body).digest('hex');

describe('resolveDrainAuth: which credentials the drain takes', () => {
  it('the drain path is /v1/drains/logs', () => {
    expect(DRAIN_PATH).toBe('/v1/drains/logs');
  });

  it('a secret alone (not demo mode): that secret, no token, nothing logged', () => {
    const { logger, lines } = capturingLogger();
    expect(resolveDrainAuth(parseConfig({ ...REAL, LOG_DRAIN_SECRET: SECRET }), logger)).toStrictEqual({ secret: SECRET, token: undefined });
    expect(lines).toEqual([]);
  });

  it('a token alone (not demo mode): that token, no secret', () => {
    const { logger, lines } = capturingLogger();
    expect(resolveDrainAuth(parseConfig({ ...REAL, LOG_DRAIN_TOKEN: TOKEN }), logger)).toStrictEqual({ secret: undefined, token: TOKEN });
    expect(lines).toEqual([]);
  });

  it('a configured secret wins over demo mode: no generated key', () => {
    const { logger, lines } = capturingLogger();
    expect(resolveDrainAuth(parseConfig({ ...DEMO, LOG_DRAIN_SECRET: SECRET }), logger, 'd'.repeat(64))).toStrictEqual({
      secret: SECRET,
      token: undefined,
    });
    expect(resolveDrainAuth(parseConfig({ ...DEMO, LOG_DRAIN_TOKEN: TOKEN }), logger, 'd'.repeat(64))).toStrictEqual({
      secret: undefined,
      token: TOKEN,
    });
    expect(lines).toEqual([]);
  });

  it('neither, not demo mode: off, and one warning naming both variables and the path', () => {
    const { logger, lines } = capturingLogger();
    expect(resolveDrainAuth(parseConfig(REAL), logger)).toBeUndefined();
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, path: '/v1/drains/logs' });
    expect(lines[0]!.msg).toBe(DRAIN_OFF_MESSAGE);
    expect(DRAIN_OFF_MESSAGE).toContain('LOG_DRAIN_SECRET');
    expect(DRAIN_OFF_MESSAGE).toContain('LOG_DRAIN_TOKEN');
  });

  it('neither, demo mode: the given demo secret, a warning with the path and the key redacted', () => {
    const { logger, lines } = capturingLogger();
    expect(resolveDrainAuth(parseConfig(DEMO), logger, 'd'.repeat(64))).toStrictEqual({ secret: 'd'.repeat(64) });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ level: 40, path: '/v1/drains/logs', demoDrainSigningKey: '[redacted]' });
    expect(String(lines[0]!.msg)).toMatch(/^demo mode: /);
    expect(JSON.stringify(lines)).not.toContain('d'.repeat(64));
  });

  it('neither, demo mode, no secret given: 64 random hex digits, another each run', () => {
    const { logger } = capturingLogger();
    const a = resolveDrainAuth(parseConfig(DEMO), logger)!.secret!;
    const b = resolveDrainAuth(parseConfig(DEMO), logger)!.secret!;
    expect(a).toMatch(/^[0-9a-f]{64}$/);
    expect(b).toMatch(/^[0-9a-f]{64}$/);
    expect(a).not.toBe(b);
  });
});

describe('checkCredentials', () => {
  const both = { secret: SECRET, token: TOKEN };
  const sig = hmac('{"a":1}\n');

  it('the right bearer token: authenticated, no signature to check', () => {
    expect(checkCredentials({ authorization: `Bearer ${TOKEN}` }, both)).toStrictEqual({ signature: undefined });
    // The scheme is case-insensitive and any run of blanks may follow it.
    expect(checkCredentials({ authorization: `bearer \t ${TOKEN}  ` }, both)).toStrictEqual({ signature: undefined });
  });

  it('a wrong bearer token, or the token with the scheme left in it: refused', () => {
    expect(checkCredentials({ authorization: `Bearer ${TOKEN}x` }, both)).toEqual({ refused: 'invalid bearer token' });
    expect(checkCredentials({ authorization: `Bearer Bearer ${TOKEN}` }, both)).toEqual({ refused: 'invalid bearer token' });
  });

  it('a bearer header when only a secret is configured: refused, pointing at the signature', () => {
    const r = checkCredentials({ authorization: `Bearer ${TOKEN}` }, { secret: SECRET });
    expect(r).toEqual({
      refused: 'Authorization: Bearer is not accepted here: LOG_DRAIN_TOKEN is not configured (sign the body with X-Svc-Signature)',
    });
  });

  it('an Authorization header of another scheme is not a bearer: the signature beside it decides', () => {
    for (const authorization of ['Basic dXNlcjpwYXNz', 'NotBearer x', 'Token bearer x']) {
      const r = checkCredentials({ authorization, 'x-svc-signature': sig }, both);
      expect(r).toStrictEqual({ signature: Buffer.from(sig, 'hex') });
    }
    // ... and alone it is no credential at all.
    expect(checkCredentials({ authorization: 'Basic dXNlcjpwYXNz' }, both)).toEqual({
      refused: 'missing authentication: send X-Svc-Signature (hex HMAC-SHA256 of the raw body) or Authorization: Bearer <token>',
    });
  });

  it('an Authorization value that is not one string (a list) is no bearer header', () => {
    const headers = { authorization: [`Bearer ${TOKEN}`] } as unknown as IncomingHttpHeaders;
    expect(checkCredentials(headers, both)).toEqual({
      refused: 'missing authentication: send X-Svc-Signature (hex HMAC-SHA256 of the raw body) or Authorization: Bearer <token>',
    });
  });

  it('a signature: its 32 bytes, upper-case hex and surrounding blanks too', () => {
    const r = checkCredentials({ 'x-svc-signature': ` ${sig.toUpperCase()} ` }, both);
    expect(r).toStrictEqual({ signature: Buffer.from(sig, 'hex') });
    expect((r as { signature: Buffer }).signature).toHaveLength(32);
  });

  it('a signature when only a token is configured: refused, pointing at the bearer token', () => {
    expect(checkCredentials({ 'x-svc-signature': sig }, { token: TOKEN })).toEqual({
      refused: 'X-Svc-Signature is not accepted here: LOG_DRAIN_SECRET is not configured (use Authorization: Bearer)',
    });
  });

  it('a signature that is not exactly 64 hex digits: refused', () => {
    const malformed = { refused: 'X-Svc-Signature must be the hex HMAC-SHA256 of the raw body (64 hex digits)' };
    for (const s of [`zz${sig}`, `${sig}zz`, sig.slice(2), `${sig}00`, `sha256=${sig}`, `${sig.slice(0, 63)}g`]) {
      expect(checkCredentials({ 'x-svc-signature': s }, both)).toEqual(malformed);
    }
  });

  it('no credential: refused, naming both ways', () => {
    expect(checkCredentials({}, both)).toEqual({
      refused: 'missing authentication: send X-Svc-Signature (hex HMAC-SHA256 of the raw body) or Authorization: Bearer <token>',
    });
  });
});

describe('the drain URL token (LOG_DRAIN_URL_TOKEN)', () => {
  const URL_TOKEN = 'url-token-0123456789abcdef';

  it('configured: only that path segment matches; unset: only the bare path', () => {
    const auth = resolveDrainAuth(parseConfig({ ...REAL, LOG_DRAIN_SECRET: SECRET, LOG_DRAIN_URL_TOKEN: URL_TOKEN }), capturingLogger().logger)!;
    expect(auth).toStrictEqual({ secret: SECRET, token: undefined, urlToken: URL_TOKEN });
    expect([urlTokenMatches(URL_TOKEN, auth), urlTokenMatches(undefined, auth), urlTokenMatches(`${URL_TOKEN}x`, auth), urlTokenMatches(URL_TOKEN.slice(1), auth)]).toEqual([true, false, false, false]);
    const plain = { secret: SECRET };
    expect([urlTokenMatches(undefined, plain), urlTokenMatches(URL_TOKEN, plain)]).toEqual([true, false]);
    expect(drainPath(URL_TOKEN)).toBe(`/v1/drains/logs/${URL_TOKEN}`);
    expect(drainPath(undefined)).toBe('/v1/drains/logs');
  });

  it('is redacted wherever a path or URL with it is printed', () => {
    expect(redactDrainPath(`/v1/drains/logs/${URL_TOKEN}`)).toBe('/v1/drains/logs/[redacted]');
    expect(redactDrainPath(`POST http://127.0.0.1:8080/v1/drains/logs/${URL_TOKEN}?x=1`)).toBe('POST http://127.0.0.1:8080/v1/drains/logs/[redacted]?x=1');
    expect(redactDrainPath('/v1/drains/logs')).toBe('/v1/drains/logs');
  });

  it('must be a URL path segment of at least 16 characters', () => {
    expect(() => parseConfig({ LOG_DRAIN_URL_TOKEN: 'short' })).toThrow('LOG_DRAIN_URL_TOKEN');
    expect(() => parseConfig({ LOG_DRAIN_URL_TOKEN: 'has/a/slash-0123456789' })).toThrow('LOG_DRAIN_URL_TOKEN');
  });
});
