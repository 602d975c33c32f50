// One error shape for every HTTP answer of the service (issue 43): RFC 9457 `application/problem+json`, with the
// `error` object the query API has always answered (`{error: {type, message, parameter?}}`) kept beside the
// standard members, so a client that reads `error.type` or `error.message` reads them still.
import { STATUS_CODES } from 'node:http';
import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { queryLimitHit } from '../store/errors.js';
import { ReadCancelledError } from '../store/read-lanes.js';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
/** A problem's `type` is this prefix and its code (`urn:tallyhouse:problem:validation_error`); README "Errors" lists them. */
export const PROBLEM_TYPE_PREFIX = 'urn:tallyhouse:problem:';

export interface Problem {
  /** A URI naming the kind of problem: PROBLEM_TYPE_PREFIX + the code (`error.type`). */
  type: string;
  /** The same for every occurrence of a type. */
  title: string;
  status: number;
  /** What went wrong this time, and what to do: the same text as `error.message`. */
  detail: string;
  /** The path that was asked (without its query string). */
  instance: string;
  /** The query API's error object, kept for the clients that read it. */
  error: { type: string; message: string; parameter?: string; request_id?: string };
  [extension: string]: unknown;
}

export interface ProblemOptions {
  /** The problem's code (`error.type`); by default the status's reason phrase in snake case (`too_many_requests`). */
  code?: string;
  /** The query parameter at fault (a 400 of the query API). */
  parameter?: string;
  /** The request's id, on a 500, to find it in the service log. */
  requestId?: string;
  /** Extension members: facts a client may act on (`reason` of /readyz, `line` of the drain). */
  extensions?: Record<string, unknown>;
}

/** Titles of the codes the service answers with; any other code takes its status's reason phrase. */
const TITLES: Record<string, string> = {
  validation_error: 'Invalid parameter',
  authorization_error: 'Authorization required',
  no_data: 'Nothing collected',
  query_limit: 'Query over its limit',
  internal_error: 'Internal error',
  misdirected_request: 'Misdirected request',
  too_many_streams: 'Too many streams',
};

/** `Too Many Requests` → `too_many_requests`: the default code of a status. */
export function statusCode(status: number): string {
  return (STATUS_CODES[status] ?? 'error').toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '');
}

export function problem(request: Pick<FastifyRequest, 'url'>, status: number, detail: string, opts: ProblemOptions = {}): Problem {
  const code = opts.code ?? statusCode(status);
  return {
    type: `${PROBLEM_TYPE_PREFIX}${code}`,
    title: TITLES[code] ?? STATUS_CODES[status] ?? 'Error',
    status,
    detail,
    instance: request.url.split('?')[0],
    ...opts.extensions,
    ...(opts.requestId ? { request_id: opts.requestId } : {}),
    error: {
      type: code,
      message: detail,
      ...(opts.parameter ? { parameter: opts.parameter } : {}),
      ...(opts.requestId ? { request_id: opts.requestId } : {}),
    },
  };
}

/** Answers a problem: the status, `application/problem+json`, the body. The one way a route answers an error. */
export function sendProblem(reply: FastifyReply, status: number, detail: string, opts: ProblemOptions = {}): FastifyReply {
  return reply.code(status).type(`${PROBLEM_CONTENT_TYPE}; charset=utf-8`).send(problem(reply.request, status, detail, opts));
}

/** The problem document's JSON Schema, for the OpenAPI document and the push endpoints' response schemas. */
export const PROBLEM_SCHEMA = {
  type: 'object',
  description: 'RFC 9457 problem details; `error` repeats the code and message in the shape the query API answered before',
  properties: {
    type: { type: 'string', format: 'uri', description: `${PROBLEM_TYPE_PREFIX}<code>` },
    title: { type: 'string' },
    status: { type: 'integer' },
    detail: { type: 'string' },
    instance: { type: 'string', format: 'uri-reference' },
    request_id: { type: 'string' },
    error: {
      type: 'object',
      properties: { type: { type: 'string' }, message: { type: 'string' }, parameter: { type: 'string' }, request_id: { type: 'string' } },
      required: ['type', 'message'],
    },
  },
  required: ['type', 'title', 'status', 'detail', 'instance', 'error'],
  additionalProperties: true,
} as const;

/** An error a route throws to answer a client: its status, code and message (and the parameter at fault). */
export class HttpProblem extends Error {
  constructor(
    readonly statusCode: number,
    readonly type: string,
    message: string,
    readonly parameter?: string,
  ) {
    super(message);
  }
}

/**
 * The one place that turns errors into answers, for the whole service (the root instance) and, with its own
 * not-found text, the query API: client errors say what is wrong; nothing else leaks SQL or stacks.
 */
export function installProblemHandlers(app: FastifyInstance, opts: { notFound?: (request: FastifyRequest) => string; failed?: string } = {}): void {
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, 404, opts.notFound?.(request) ?? `no route ${request.method} ${request.url.split('?')[0]}`, { code: 'not_found' }),
  );
  app.setErrorHandler((err, request, reply) => {
    if (err instanceof HttpProblem) return sendProblem(reply, err.statusCode, err.message, { code: err.type, parameter: err.parameter });
    // Reads dropped by the read gate (src/store/read-lanes.ts): the heavy queue full is a 503 to retry; a client
    // that left gets nothing (the socket is gone; 499 in the request log, as proxies count it).
    if (err instanceof ReadCancelledError) {
      if (err.reason === 'busy') {
        reply.header('retry-after', '5');
        return sendProblem(reply, 503, err.message, { code: 'busy' });
      }
      request.log.debug('client gone: its reads not yet started were dropped');
      return sendProblem(reply, 499, err.message, { code: 'client_gone' });
    }
    const limit = queryLimitHit(err);
    if (limit) {
      request.log.warn({ limit }, 'query stopped by its limit');
      return sendProblem(
        reply,
        422,
        `the query went over its ${limit} limit (API_QUERY_TIMEOUT_SECONDS, API_QUERY_MAX_MEMORY_BYTES, API_QUERY_MAX_RESULT_ROWS): ask for a shorter range or fewer groups`,
        { code: 'query_limit' },
      );
    }
    const status = (err as { statusCode?: number }).statusCode;
    if (status && status >= 400 && status < 500) {
      // fastify's own client errors (bad JSON, body too large, unsupported media type) carry safe messages.
      // Their code stays bad_request whatever the status (the query API's `error.type` before RFC 9457).
      return sendProblem(reply, status, (err as Error).message, { code: 'bad_request' });
    }
    // The store's message may quote the statement (and with it the parameters' values): never logged as is.
    request.log.error({ err: { type: (err as Error).name, code: (err as { code?: unknown }).code, message: redactStatement((err as Error).message ?? '') } }, 'request failed');
    return sendProblem(reply, 500, opts.failed ?? 'the request failed; see the service log', { code: 'internal_error', requestId: request.id });
  });
}

/**
 * An error message without the SQL it may quote: ClickHouse's messages carry the failing statement ("while
 * executing ... SELECT ..."), the embedded engine's too. Everything from the first statement keyword on is cut.
 */
export function redactStatement(message: string): string {
  const cut = message.search(/\b(SELECT|WITH|INSERT|ALTER|CREATE|DELETE|OPTIMIZE|SYSTEM|DROP)\b/);
  return (cut === -1 ? message : `${message.slice(0, cut)}[statement redacted]`).slice(0, 500);
}

/**
 * fastify's clientErrorHandler: what Node refuses before a request exists (a request not whole within
 * PUSH_BODY_TIMEOUT_MS: 408; headers over the size limit: 431; a malformed request: 400) answered as a problem too
 * (fastify's default wrote `{"error", "message", "statusCode"}`). No `instance`: the request line may not have been read.
 */
export function problemClientErrorHandler(err: NodeJS.ErrnoException, socket: Socket): void {
  // A reset connection has gone: nothing to answer.
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, code, detail] =
    err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
      ? [408, 'request_timeout', 'the request was not received whole within PUSH_BODY_TIMEOUT_MS']
      : err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'request_header_fields_too_large', 'the request headers exceed the size limit']
        : [400, 'bad_request', 'the request is not valid HTTP'];
  const title = STATUS_CODES[status] ?? 'Error';
  const body = JSON.stringify({ type: `${PROBLEM_TYPE_PREFIX}${code}`, title, status, detail, error: { type: code, message: detail } });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${title}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}; charset=utf-8\r\nConnection: close\r\n\r\n${body}`,
    );
  }
  socket.destroy(err);
}

/** Fastify's router refusals (FST_ERR_BAD_URL, FST_ERR_MAX_PARAM_LENGTH, ...): a problem with a fixed detail. */
export function problemFrameworkError(err: Error & { code?: string; statusCode?: number }, _request: FastifyRequest, reply: FastifyReply): void {
  const status = err.statusCode && err.statusCode >= 400 && err.statusCode < 500 ? err.statusCode : 400;
  const detail =
    err.code === 'FST_ERR_MAX_PARAM_LENGTH'
      ? 'a path segment is longer than this service accepts'
      : err.code === 'FST_ERR_BAD_URL'
        ? 'the URL is not valid (a malformed percent-encoding)'
        : `the request could not be routed (${err.code ?? 'bad request'})`;
  void sendProblem(reply, status, detail, { code: 'bad_request' });
}
