// Who a request is for every per-client limit (log streams, MCP streams, the interactive share): one function
// (src/api/routes.ts clientKeyer), where three copies had drifted. Without API_TOKENS a bearer header must not make
// a new client (the interactive share's first copy let any made-up bearer value escape the share); behind a trusted
// proxy the client is what the proxy says (X-Forwarded-For), from anyone else the socket's peer.
import type { FastifyRequest } from 'fastify';
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { clientKeyer } from '../../src/api/routes.js';

function request(peer: string, headers: Record<string, string> = {}): FastifyRequest {
  return { headers, raw: { headers, socket: { remoteAddress: peer } } } as unknown as FastifyRequest;
}
const digest = (t: string) => `token:${createHash('sha256').update(t).digest('hex')}`;

describe('clientKeyer', () => {
  it('without API_TOKENS: the address, whatever bearer is sent', () => {
    const key = clientKeyer({ API_TOKENS: undefined, TRUSTED_PROXIES: [] });
    expect(key(request('127.0.0.5', { authorization: 'Bearer made-up-1' }))).toBe('address:127.0.0.5');
    expect(key(request('127.0.0.5', { authorization: 'Bearer made-up-2' }))).toBe('address:127.0.0.5');
  });

  it('with API_TOKENS: the token digest; without a bearer, the address', () => {
    const key = clientKeyer({ API_TOKENS: ['a-token-0123456789abcdef'], TRUSTED_PROXIES: [] });
    expect(key(request('127.0.0.5', { authorization: 'Bearer  a-token-0123456789abcdef ' }))).toBe(digest('a-token-0123456789abcdef'));
    expect(key(request('127.0.0.5'))).toBe('address:127.0.0.5');
  });

  it('X-Forwarded-For counts only from a trusted proxy', () => {
    const key = clientKeyer({ API_TOKENS: undefined, TRUSTED_PROXIES: ['10.0.0.0/8'] });
    expect(key(request('10.1.2.3', { 'x-forwarded-for': '203.0.113.9' }))).toBe('address:203.0.113.9');
    expect(key(request('192.0.2.7', { 'x-forwarded-for': '203.0.113.9' }))).toBe('address:192.0.2.7');
  });
});
