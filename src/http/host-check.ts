// The Host check against DNS rebinding. A page on attacker.example whose name the attacker re-points at 127.0.0.1
// gets the browser to send it this service's answers: the socket is loopback, only the Host header is foreign.
// Every route of the one fastify instance (query API, /metrics, the drain, webhooks, Faro, the admin endpoint)
// refuses a Host that is not a name of this service with 421 Misdirected Request.
import type { FastifyInstance } from 'fastify';
import { isLoopbackHost, type Config } from '../config.js';
import { sendProblem } from './problem.js';

const LOOPBACK_NAMES = ['127.0.0.1', 'localhost', '[::1]'];
const WILDCARD = /^(0\.0\.0\.0|::|\[::\])$/;

/** `name[:port]` lower-cased, an IPv6 literal in brackets, a trailing dot dropped; null when malformed. */
export function splitHost(host: string): { name: string; port: string } | null {
  const m = /^(\[[0-9a-f:.]+\]|[^[\]:/@\s]+)(?::(\d{1,5}))?$/i.exec(host.trim());
  if (!m) return null;
  return { name: m[1].toLowerCase().replace(/\.$/, ''), port: m[2] ?? '' };
}

const bracketed = (host: string) => (host.includes(':') && !host.startsWith('[') ? `[${host}]` : host);

/**
 * Which Host headers the service answers, or null when it does not check them. The check is on when HOST is a
 * loopback address (the default, where the query API and /metrics answer without a token: what rebinding aims at)
 * and whenever ALLOWED_HOSTS is set. Listening elsewhere without ALLOWED_HOSTS (0.0.0.0 behind a load balancer,
 * whose Host is the public name), every route needs its token, which a rebinding page does not have: unchecked.
 * Allowed: the loopback names (127.0.0.1, localhost, [::1]) and HOST, with the port the service listens on, and
 * each ALLOWED_HOSTS entry (`name` with any port, or `name:port`).
 */
export function hostAllowList(config: Pick<Config, 'HOST' | 'ALLOWED_HOSTS'>, listeningPort: () => number): ((host: string | undefined) => boolean) | null {
  const configured = (config.ALLOWED_HOSTS ?? []).map(splitHost).filter((h): h is { name: string; port: string } => h !== null);
  if (!isLoopbackHost(config.HOST) && configured.length === 0) return null;
  const own = new Set([...LOOPBACK_NAMES, ...(WILDCARD.test(config.HOST) ? [] : [bracketed(config.HOST).toLowerCase()])]);
  return (header) => {
    const given = header === undefined ? null : splitHost(header);
    if (!given) return false;
    const port = given.port || '80';
    if (own.has(given.name) && port === String(listeningPort())) return true;
    return configured.some((c) => c.name === given.name && (c.port === '' || c.port === port));
  };
}

/** Installs the check as the first onRequest hook of the instance, before any route is registered. */
export function installHostCheck(app: FastifyInstance, config: Pick<Config, 'HOST' | 'ALLOWED_HOSTS'>): void {
  // The port once listening, kept after the server stops listening: while it stops, a client still sending on an
  // open connection is answered as before (a 421 for its own Host kept its connection busy, and the stop waited
  // for it until SHUTDOWN_TIMEOUT_MS: exit 1).
  let port = 0;
  const allowed = hostAllowList(config, () => {
    const address = app.server.address();
    if (typeof address === 'object' && address) port = address.port;
    return port;
  });
  if (!allowed) return;
  app.addHook('onRequest', async (request, reply) => {
    if (allowed(request.headers.host)) return;
    return sendProblem(reply, 421, 'the Host header is not a name of this service (ALLOWED_HOSTS lists the names it answers beyond loopback and HOST)', {
      code: 'misdirected_request',
    });
  });
}
