// One error class for every way a Platform API call can fail, carrying whether to retry.
// Classification uses the status, the headers and the machine-readable error type only;
// message text is for people and is never inspected (CONTRIBUTING.md rule 5).

export type KeyScope = 'api' | 'admin';

/** One element of a model-level error body (`{detail: [...]}`); `input` is dropped on purpose. */
export interface PlatformErrorDetail {
  loc: unknown[];
  msg: string | null;
  type: string | null;
  url: string | null;
  ctx: Record<string, unknown> | null;
}

export interface PlatformErrorInit {
  message: string;
  status: number | null;
  type: string;
  errorType?: string | null;
  retryable: boolean;
  requestId?: string | null;
  scope: KeyScope;
  keyUsed?: KeyScope | null;
  method: string;
  path: string;
  retryAfterMs?: number | null;
  attempts?: number;
  serverMessage?: string | null;
  docsUrl?: string | null;
  details?: PlatformErrorDetail[];
  cause?: unknown;
}

export class PlatformError extends Error {
  override name = 'PlatformError';
  /** HTTP status; null when no response head arrived (network error, connect/headers timeout, missing key). */
  status: number | null;
  /**
   * Category: the platform's `error.type` (authorization_error, validation_error, not_found, rate_limited,
   * server_error, not_implemented), a model-level `detail[0].type`, or one the client assigns:
   * network_error, timeout, truncated_body, invalid_response, redirect, client_error, missing_key,
   * invalid_request, aborted.
   */
  type: string;
  /** Request-level `error_type` (body or `X-Svc-Error-Type` header), e.g. runner_disconnected. */
  errorType: string | null;
  retryable: boolean;
  requestId: string | null;
  /** The key scope the call asked for. */
  scope: KeyScope;
  /** The key actually sent: an API-scope call falls back to the admin key when no API key is set. */
  keyUsed: KeyScope | null;
  method: string;
  /** Request path without the query string (never the key). */
  path: string;
  /** The wait the server asked for (Retry-After / x-ratelimit-reset), if any. */
  retryAfterMs: number | null;
  /** Attempts made before giving up (0 when nothing was sent). */
  attempts: number;
  /** The server's own human-readable text (for logs only; never parsed). */
  serverMessage: string | null;
  docsUrl: string | null;
  details: PlatformErrorDetail[];

  constructor(init: PlatformErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.status = init.status;
    this.type = init.type;
    this.errorType = init.errorType ?? null;
    this.retryable = init.retryable;
    this.requestId = init.requestId ?? null;
    this.scope = init.scope;
    this.keyUsed = init.keyUsed ?? null;
    this.method = init.method;
    this.path = init.path;
    this.retryAfterMs = init.retryAfterMs ?? null;
    this.attempts = init.attempts ?? 0;
    this.serverMessage = init.serverMessage ?? null;
    this.docsUrl = init.docsUrl ?? null;
    this.details = init.details ?? [];
  }

  /** 401, 403 or no key configured: retrying cannot help, the job must stop and say which key it needs. */
  get isAuthFailure(): boolean {
    return this.status === 401 || this.status === 403 || this.type === 'missing_key';
  }
}

export function isPlatformError(value: unknown): value is PlatformError {
  return value instanceof PlatformError;
}

export const KEY_ENV_VARS: Record<KeyScope, string> = { api: 'SVC_API_KEY', admin: 'SVC_ADMIN_KEY' };

function scopeLabel(scope: KeyScope): string {
  return scope === 'admin' ? 'ADMIN' : 'API';
}

/** Why an auth failure happened, in words an operator can act on. */
function authHint(status: number | null, scope: KeyScope, keyUsed: KeyScope | null): string {
  const needed = `an ${scopeLabel(scope)}-scope key`;
  if (keyUsed === null) return `needs ${needed}; ${KEY_ENV_VARS[scope]} is not set`;
  const source = KEY_ENV_VARS[keyUsed];
  if (status === 403) return `needs ${needed}; the key in ${source} lacks that scope`;
  return `needs ${needed}; the key in ${source} was refused (wrong, revoked or malformed)`;
}

/**
 * The one line a job logs before it stops on an auth failure, e.g.
 * "the usage collector needs an ADMIN-scope key; the key in SVC_API_KEY lacks that scope (GET /v1/serverless/usage answered 403)".
 * For any other error it returns "<who>: <message>".
 */
export function authFailureMessage(error: PlatformError, who: string): string {
  if (!error.isAuthFailure) return `${who}: ${error.message}`;
  const answered = error.status === null ? 'was not sent' : `answered ${error.status}`;
  return `${who} ${authHint(error.status, error.scope, error.keyUsed)} (${error.method} ${error.path} ${answered})`;
}

// ---------------------------------------------------------------------------------------------
// Classifying a response

export type HeaderBag = Record<string, string | string[] | undefined>;

export function headerValue(headers: HeaderBag, name: string): string | null {
  const value = headers[name];
  const first = Array.isArray(value) ? value[0] : value;
  return first === undefined ? null : first.trim();
}

// 400, 401, 403 and 404 mean the request itself is wrong: the same request fails the same way.
const NEVER_RETRY_STATUSES = new Set([400, 401, 403, 404]);

// Error types that name a permanent condition even when a 5xx carries them.
const NON_RETRYABLE_TYPES = new Set([
  'not_implemented',
  'bad_request',
  'client_disconnected',
  'client_cancelled',
  'validation_error',
  'authorization_error',
  'not_found',
]);

/** Generic category for a status when the body names none. */
export function typeForStatus(status: number): string {
  if (status === 401 || status === 403) return 'authorization_error';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status === 501) return 'not_implemented';
  if (status === 400 || status === 422) return 'validation_error';
  if (status >= 500) return 'server_error';
  if (status >= 300 && status < 400) return 'redirect';
  return 'client_error';
}

/**
 * The retry rule for an HTTP answer:
 * 429 always; 3xx, 400, 401, 403, 404 never; a permanent error type never; `X-Svc-Retryable: false` never;
 * other 5xx and 408 yes; any other 4xx only when the server says `X-Svc-Retryable: true`.
 */
export function isRetryableStatus(
  status: number,
  type: string | null,
  errorType: string | null,
  retryableHeader: string | null,
): boolean {
  if (status === 429) return true;
  if (NEVER_RETRY_STATUSES.has(status) || (status >= 300 && status < 400)) return false;
  const header = retryableHeader?.toLowerCase() ?? null;
  if (header === 'false') return false;
  if ((type !== null && NON_RETRYABLE_TYPES.has(type)) || (errorType !== null && NON_RETRYABLE_TYPES.has(errorType))) {
    return false;
  }
  if (status >= 500 || status === 408) return true;
  return header === 'true';
}

// A value this large is an epoch timestamp, not a count of seconds (some gateways send that).
const EPOCH_SECONDS_THRESHOLD = 1_000_000_000;

/** The wait a response asks for: `Retry-After` (seconds or HTTP date), else `x-ratelimit-reset` (seconds). */
export function retryHintMs(headers: HeaderBag, nowMs: number = Date.now()): number | null {
  const retryAfter = headerValue(headers, 'retry-after');
  if (retryAfter) {
    const seconds = Number(retryAfter);
    if (Number.isFinite(seconds) && seconds >= 0) return Math.round(seconds * 1000);
    const dateMs = Date.parse(retryAfter);
    if (!Number.isNaN(dateMs)) return Math.max(0, dateMs - nowMs);
  }
  const reset = headerValue(headers, 'x-ratelimit-reset');
  if (reset) {
    const seconds = Number(reset);
    if (Number.isFinite(seconds) && seconds >= 0) {
      return seconds > EPOCH_SECONDS_THRESHOLD ? Math.max(0, seconds * 1000 - nowMs) : Math.round(seconds * 1000);
    }
  }
  return null;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function stringOrNull(value: unknown): string | null {
  return typeof value === 'string' && value !== '' ? value : null;
}

const MAX_SERVER_MESSAGE_CHARS = 300;

function clip(text: string | null): string | null {
  if (text === null) return null;
  return text.length > MAX_SERVER_MESSAGE_CHARS ? `${text.slice(0, MAX_SERVER_MESSAGE_CHARS)}…` : text;
}

interface ParsedErrorBody {
  type: string | null;
  errorType: string | null;
  serverMessage: string | null;
  requestId: string | null;
  docsUrl: string | null;
  details: PlatformErrorDetail[];
  /** Said about the body when it carries nothing usable (never the body itself). */
  bodyNote: string | null;
}

/** Reads any of the three error formats; anything else becomes a note on the body's size. */
export function parseErrorBody(bodyText: string): ParsedErrorBody {
  const parsed: ParsedErrorBody = {
    type: null,
    errorType: null,
    serverMessage: null,
    requestId: null,
    docsUrl: null,
    details: [],
    bodyNote: null,
  };
  if (bodyText.trim() === '') {
    parsed.bodyNote = 'empty body';
    return parsed;
  }
  let json: unknown;
  try {
    json = JSON.parse(bodyText);
  } catch {
    parsed.bodyNote = `non-JSON body of ${Buffer.byteLength(bodyText)} bytes`;
    return parsed;
  }
  if (!isObject(json)) {
    parsed.bodyNote = 'JSON body that is not an object';
    return parsed;
  }
  if (isObject(json.error)) {
    // Platform API format: {"error": {"type", "message", "docs_url"?, "request_id"?}}
    parsed.type = stringOrNull(json.error.type);
    parsed.serverMessage = stringOrNull(json.error.message);
    parsed.docsUrl = stringOrNull(json.error.docs_url);
    parsed.requestId = stringOrNull(json.error.request_id);
    parsed.errorType = stringOrNull(json.error.error_type);
  } else if (typeof json.detail === 'string') {
    // Request-level format: {"detail": "...", "error_type": "..."}
    parsed.serverMessage = stringOrNull(json.detail);
    parsed.errorType = stringOrNull(json.error_type);
  } else if (Array.isArray(json.detail)) {
    // Model-level format: {"detail": [{loc, msg, type, url, ctx?, input?}]}
    parsed.details = json.detail.filter(isObject).map((item) => ({
      loc: Array.isArray(item.loc) ? item.loc : [],
      msg: stringOrNull(item.msg),
      type: stringOrNull(item.type),
      url: stringOrNull(item.url),
      ctx: isObject(item.ctx) ? item.ctx : null,
    }));
    const first = parsed.details[0];
    if (first) {
      parsed.type = first.type;
      const where = first.loc.length > 0 ? `${first.loc.join('.')}: ` : '';
      parsed.serverMessage = first.msg === null ? null : `${where}${first.msg}`;
    }
    parsed.errorType = stringOrNull(json.error_type);
  } else {
    parsed.serverMessage = stringOrNull(json.message) ?? stringOrNull(json.error);
    parsed.errorType = stringOrNull(json.error_type);
    if (parsed.serverMessage === null && parsed.errorType === null) parsed.bodyNote = 'JSON body in no known error format';
  }
  parsed.requestId ??= stringOrNull(json.request_id);
  return parsed;
}

export interface CallDescription {
  method: string;
  path: string;
  scope: KeyScope;
  keyUsed: KeyScope | null;
}

/** Builds the PlatformError for a non-2xx answer. */
export function errorFromResponse(
  call: CallDescription,
  status: number,
  headers: HeaderBag,
  bodyText: string,
  nowMs: number = Date.now(),
): PlatformError {
  const body = parseErrorBody(bodyText);
  const errorType = body.errorType ?? headerValue(headers, 'x-svc-error-type');
  const type = body.type ?? typeForStatus(status);
  const requestId = body.requestId ?? headerValue(headers, 'x-svc-request-id') ?? headerValue(headers, 'x-request-id');
  const retryable = isRetryableStatus(status, type, errorType, headerValue(headers, 'x-svc-retryable'));
  const serverMessage = clip(body.serverMessage);

  let message = `${call.method} ${call.path} answered ${status} ${type}`;
  if (errorType !== null) message += ` (${errorType})`;
  if (serverMessage !== null) message += `: ${serverMessage}`;
  else if (body.bodyNote !== null) message += ` with ${body.bodyNote}`;
  if (status === 401 || status === 403) message += ` — this call ${authHint(status, call.scope, call.keyUsed)}`;
  if (status >= 300 && status < 400) message += ' — redirects are not followed';
  if (requestId !== null) message += ` [request id ${requestId}]`;

  return new PlatformError({
    message,
    status,
    type,
    errorType,
    retryable,
    requestId,
    scope: call.scope,
    keyUsed: call.keyUsed,
    method: call.method,
    path: call.path,
    retryAfterMs: retryHintMs(headers, nowMs),
    serverMessage,
    docsUrl: body.docsUrl,
    details: body.details,
  });
}

const TIMEOUT_CODES: Record<string, string> = {
  UND_ERR_CONNECT_TIMEOUT: 'connect',
  UND_ERR_HEADERS_TIMEOUT: 'headers',
  UND_ERR_BODY_TIMEOUT: 'body',
  ETIMEDOUT: 'socket',
};

// Errors that mean the client itself is unusable or was misused: the same call fails again.
const CLIENT_FAULT_CODES = new Set([
  'UND_ERR_INVALID_ARG',
  'UND_ERR_INVALID_RETURN_VALUE',
  'UND_ERR_NOT_SUPPORTED',
  'UND_ERR_DESTROYED',
  'UND_ERR_CLOSED',
  'ERR_INVALID_URL',
  'ERR_INVALID_ARG_TYPE',
]);

function errorCode(error: unknown): string | null {
  if (isObject(error) || error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string') return code;
  }
  return null;
}

/**
 * Builds the PlatformError for an exception thrown while talking to the server.
 * `status` is the response status when the head had arrived (the failure happened in the body).
 */
export function errorFromException(call: CallDescription, error: unknown, status: number | null): PlatformError {
  const code = errorCode(error);
  const detail = error instanceof Error ? error.message : String(error);
  const base = { status, scope: call.scope, keyUsed: call.keyUsed, method: call.method, path: call.path, cause: error };
  const timeoutPhase = code === null ? undefined : TIMEOUT_CODES[code];
  if (timeoutPhase !== undefined) {
    return new PlatformError({
      ...base,
      type: 'timeout',
      retryable: true,
      message: `${call.method} ${call.path}: ${timeoutPhase} timeout (${code})`,
    });
  }
  if (code !== null && CLIENT_FAULT_CODES.has(code)) {
    return new PlatformError({
      ...base,
      type: 'client_error',
      retryable: false,
      message: `${call.method} ${call.path}: client error ${code}: ${detail}`,
    });
  }
  // A connection that dies after the head arrived leaves a truncated body; before that it is a network error.
  const type = status === null ? 'network_error' : 'truncated_body';
  return new PlatformError({
    ...base,
    type,
    retryable: true,
    message: `${call.method} ${call.path}: ${type === 'network_error' ? 'network error' : 'connection lost mid-body'} (${code ?? (error instanceof Error ? error.name : 'unknown')}): ${detail}`,
  });
}
