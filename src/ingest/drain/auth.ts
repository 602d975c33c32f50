// Who may send to the drain: a bearer token (LOG_DRAIN_TOKEN) or an HMAC-SHA256 signature of the raw body
// (LOG_DRAIN_SECRET). Neither configured: the drain is off, except in demo mode (a generated secret).
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { isDemoMode, type Config } from '../../config.js';
import type { Logger } from '../../log.js';

export const DRAIN_PATH = '/v1/drains/logs';

/** The drain URL's path: with LOG_DRAIN_URL_TOKEN its secret segment follows DRAIN_PATH. */
export function drainPath(urlToken: string | undefined): string {
  return urlToken === undefined ? DRAIN_PATH : `${DRAIN_PATH}/${urlToken}`;
}

/** A request path (or URL) with the drain's URL token replaced, for logs: /v1/drains/logs/[redacted]. */
export function redactDrainPath(url: string): string {
  return url.replace(/(\/v1\/drains\/logs\/)[^/?#\s]+/g, '$1[redacted]');
}

function sha256(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** How the drain authenticates senders; undefined = the endpoint is off. */
export interface DrainAuth {
  /** HMAC-SHA256 key of X-Svc-Signature. */
  secret?: string;
  /** Authorization: Bearer token. */
  token?: string;
  /** LOG_DRAIN_URL_TOKEN: the secret path segment every request must carry (checked before anything else). */
  urlToken?: string;
}

export const DRAIN_OFF_MESSAGE =
  'the log drain is off: set LOG_DRAIN_SECRET (X-Svc-Signature, HMAC-SHA256 of the body) or LOG_DRAIN_TOKEN (Authorization: Bearer) to enable it';

const urlTokenOf = (config: Config): Pick<DrainAuth, 'urlToken'> => (config.LOG_DRAIN_URL_TOKEN === undefined ? {} : { urlToken: config.LOG_DRAIN_URL_TOKEN });

/**
 * The drain's credentials from the configuration. With neither variable set the drain is off, except in
 * demo mode, where a random secret is generated for this run and logged so a demo sender can sign with it.
 */
export function resolveDrainAuth(config: Config, logger: Logger, demoSecret?: string): DrainAuth | undefined {
  if (config.LOG_DRAIN_SECRET !== undefined || config.LOG_DRAIN_TOKEN !== undefined) {
    return { secret: config.LOG_DRAIN_SECRET, token: config.LOG_DRAIN_TOKEN, ...urlTokenOf(config) };
  }
  if (isDemoMode(config)) {
    const secret = demoSecret ?? randomBytes(32).toString('hex');
    // Logged on purpose (issue 7): a throwaway secret of this demo run, not a configured credential.
    logger.warn(
      { path: DRAIN_PATH, demoDrainSigningKey: secret },
      'demo mode: the log drain accepts bodies signed (X-Svc-Signature) with this generated key; set LOG_DRAIN_SECRET or LOG_DRAIN_TOKEN for real use',
    );
    return { secret, ...urlTokenOf(config) };
  }
  logger.warn({ path: DRAIN_PATH }, DRAIN_OFF_MESSAGE);
  return undefined;
}

/**
 * Whether the request's URL token (the path segment after DRAIN_PATH; undefined for DRAIN_PATH itself) is the one
 * configured: with LOG_DRAIN_URL_TOKEN unset only DRAIN_PATH is the drain. Compared in constant time.
 */
export function urlTokenMatches(given: string | undefined, auth: DrainAuth): boolean {
  if (auth.urlToken === undefined) return given === undefined;
  if (given === undefined) return false;
  return timingSafeEqual(sha256(given), sha256(auth.urlToken));
}

/** Checks the headers: a refusal (401), or the signature to check on the raw body (undefined: authenticated by token). */
export function checkCredentials(headers: IncomingHttpHeaders, auth: DrainAuth): { refused: string } | { signature: Buffer | undefined } {
  const authorization = headers.authorization;
  const signature = headers['x-svc-signature'];
  if (typeof authorization === 'string' && /^bearer\s/i.test(authorization)) {
    if (auth.token === undefined) {
      return { refused: 'Authorization: Bearer is not accepted here: LOG_DRAIN_TOKEN is not configured (sign the body with X-Svc-Signature)' };
    }
    const given = authorization.replace(/^bearer\s+/i, '').trim();
    if (!timingSafeEqual(sha256(given), sha256(auth.token))) return { refused: 'invalid bearer token' };
    return { signature: undefined };
  }
  if (typeof signature === 'string') {
    if (auth.secret === undefined) {
      return { refused: 'X-Svc-Signature is not accepted here: LOG_DRAIN_SECRET is not configured (use Authorization: Bearer)' };
    }
    const hex = signature.trim();
    if (!/^[0-9a-fA-F]{64}$/.test(hex)) {
      return { refused: 'X-Svc-Signature must be the hex HMAC-SHA256 of the raw body (64 hex digits)' };
    }
    return { signature: Buffer.from(hex, 'hex') };
  }
  return { refused: 'missing authentication: send X-Svc-Signature (hex HMAC-SHA256 of the raw body) or Authorization: Bearer <token>' };
}

