import { describe, expect, it } from 'vitest';
import {
  authFailureMessage,
  errorFromException,
  errorFromResponse,
  isRetryableStatus,
  parseErrorBody,
  PlatformError,
  retryHintMs,
  type CallDescription,
} from '../../src/platform/errors.js';

const call: CallDescription = { method: 'GET', path: '/v1/serverless/usage', scope: 'admin', keyUsed: 'admin' };

describe('isRetryableStatus', () => {
  it.each([
    [429, null, null, null, true],
    [429, null, null, 'false', true],
    [500, null, null, null, true],
    [502, null, null, null, true],
    [503, null, 'runner_disconnected', null, true],
    [503, null, null, 'false', false],
    [500, 'internal_server_error', null, 'False', false],
    [500, null, 'bad_request', null, false],
    [501, 'not_implemented', null, null, false],
    [408, null, null, null, true],
    [400, null, null, 'true', false],
    [401, null, null, 'true', false],
    [403, null, null, null, false],
    [404, null, null, null, false],
    [301, null, null, 'true', false],
    [307, null, null, null, false],
    [409, null, null, null, false],
    [409, null, null, 'true', true],
    [422, 'greater_than', null, 'false', false],
    [499, null, 'client_disconnected', null, false],
  ])('%i type=%s error_type=%s X-Svc-Retryable=%s -> %s', (status, type, errorType, header, expected) => {
    expect(isRetryableStatus(status, type, errorType, header)).toBe(expected);
  });
});

describe('retryHintMs', () => {
  const now = Date.parse('2026-03-01T12:00:00Z');
  it('reads Retry-After as seconds or as an HTTP date', () => {
    expect(retryHintMs({ 'retry-after': '3' }, now)).toBe(3000);
    expect(retryHintMs({ 'retry-after': 'Sun, 01 Mar 2026 12:00:07 GMT' }, now)).toBe(7000);
    expect(retryHintMs({ 'retry-after': 'Sun, 01 Mar 2026 11:00:00 GMT' }, now)).toBe(0);
  });
  it('falls back to x-ratelimit-reset (seconds until reset; an epoch value is converted)', () => {
    expect(retryHintMs({ 'x-ratelimit-reset': '2' }, now)).toBe(2000);
    expect(retryHintMs({ 'x-ratelimit-reset': String(now / 1000 + 5) }, now)).toBe(5000);
    expect(retryHintMs({ 'retry-after': '1', 'x-ratelimit-reset': '9' }, now)).toBe(1000);
  });
  it('ignores absent or unreadable values', () => {
    expect(retryHintMs({}, now)).toBeNull();
    expect(retryHintMs({ 'retry-after': 'soon', 'x-ratelimit-reset': '-1' }, now)).toBeNull();
  });
});

describe('parseErrorBody', () => {
  it('reads the Platform API format', () => {
    const parsed = parseErrorBody(
      JSON.stringify({ error: { type: 'not_found', message: 'No such app', docs_url: 'https://d/errors', request_id: 'r-9' } }),
    );
    expect(parsed).toMatchObject({ type: 'not_found', serverMessage: 'No such app', docsUrl: 'https://d/errors', requestId: 'r-9' });
  });
  it('reads the request-level format', () => {
    expect(parseErrorBody('{"detail":"Runner went away","error_type":"runner_disconnected"}')).toMatchObject({
      type: null,
      errorType: 'runner_disconnected',
      serverMessage: 'Runner went away',
    });
  });
  it('reads the model-level format and drops the offending input', () => {
    const parsed = parseErrorBody(
      JSON.stringify({
        detail: [
          { loc: ['body', 'num_images'], msg: 'Input should be greater than 0', type: 'greater_than', url: 'https://d/errors/#greater_than', ctx: { gt: 0 }, input: -1 },
          { loc: ['body'], msg: 'second', type: 'one_of', url: 'u' },
        ],
      }),
    );
    expect(parsed.type).toBe('greater_than');
    expect(parsed.serverMessage).toBe('body.num_images: Input should be greater than 0');
    expect(parsed.details).toEqual([
      { loc: ['body', 'num_images'], msg: 'Input should be greater than 0', type: 'greater_than', url: 'https://d/errors/#greater_than', ctx: { gt: 0 } },
      { loc: ['body'], msg: 'second', type: 'one_of', url: 'u', ctx: null },
    ]);
  });
  it('describes an empty or non-JSON body without quoting it', () => {
    expect(parseErrorBody('').bodyNote).toBe('empty body');
    expect(parseErrorBody('<html>secret page</html>').bodyNote).toBe('non-JSON body of 24 bytes');
  });
});

describe('errorFromResponse', () => {
  it('takes the request id from a header when the body has none, and error_type from X-Svc-Error-Type', () => {
    const error = errorFromResponse(call, 504, { 'x-svc-error-type': 'request_timeout', 'x-request-id': 'hdr-1' }, '');
    expect(error).toMatchObject({
      status: 504,
      type: 'server_error',
      errorType: 'request_timeout',
      retryable: true,
      requestId: 'hdr-1',
      scope: 'admin',
      path: '/v1/serverless/usage',
    });
    expect(error.message).toBe('GET /v1/serverless/usage answered 504 server_error (request_timeout) with empty body [request id hdr-1]');
  });
});

describe('errorFromException', () => {
  it('sorts undici failures into timeout, network error, truncated body and client error', () => {
    const withCode = (code: string) => Object.assign(new Error('x'), { code });
    expect(errorFromException(call, withCode('UND_ERR_HEADERS_TIMEOUT'), null)).toMatchObject({ type: 'timeout', retryable: true, status: null });
    expect(errorFromException(call, withCode('UND_ERR_BODY_TIMEOUT'), 200)).toMatchObject({ type: 'timeout', retryable: true, status: 200 });
    expect(errorFromException(call, withCode('ECONNREFUSED'), null)).toMatchObject({ type: 'network_error', retryable: true });
    expect(errorFromException(call, withCode('UND_ERR_SOCKET'), 200)).toMatchObject({ type: 'truncated_body', retryable: true });
    expect(errorFromException(call, withCode('UND_ERR_DESTROYED'), null)).toMatchObject({ type: 'client_error', retryable: false });
  });
});

describe('authFailureMessage', () => {
  const base = { retryable: false, method: 'GET', path: '/v1/serverless/usage', scope: 'admin' as const, type: 'authorization_error', message: 'm' };
  it('names the scope the job needs', () => {
    expect(authFailureMessage(new PlatformError({ ...base, status: 403, keyUsed: 'api' }), 'the usage collector')).toBe(
      'the usage collector needs an ADMIN-scope key; the key in SVC_API_KEY lacks that scope (GET /v1/serverless/usage answered 403)',
    );
    expect(authFailureMessage(new PlatformError({ ...base, status: 401, keyUsed: 'admin' }), 'the usage collector')).toBe(
      'the usage collector needs an ADMIN-scope key; the key in SVC_ADMIN_KEY was refused (wrong, revoked or malformed) (GET /v1/serverless/usage answered 401)',
    );
    expect(authFailureMessage(new PlatformError({ ...base, status: null, type: 'missing_key', keyUsed: null }), 'the usage collector')).toBe(
      'the usage collector needs an ADMIN-scope key; SVC_ADMIN_KEY is not set (GET /v1/serverless/usage was not sent)',
    );
  });
  it('passes other errors through', () => {
    const error = new PlatformError({ ...base, status: 500, type: 'server_error', message: 'boom' });
    expect(authFailureMessage(error, 'the usage collector')).toBe('the usage collector: boom');
  });
});
