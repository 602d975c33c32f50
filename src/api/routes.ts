import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { PROBLEM_CONTENT_TYPE, PROBLEM_SCHEMA } from '../http/problem.js';
import { createHash } from 'node:crypto';
import type { Config } from '../config.js';
import { AddressRanges, clientAddress } from '../ip-ranges.js';
import { inReadLane } from '../store/read-lanes.js';

/** Aborted when the client leaves before its answer is written: its reads not yet started are dropped. */
export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableFinished) controller.abort();
  });
  return controller.signal;
}

/**
 * Who a request is, for every per-client limit (log streams, MCP streams, the interactive share): with API_TOKENS,
 * its bearer token's digest (the authentication hook checked it); without, its address (clientAddress: the peer, or
 * what a trusted proxy says). Without tokens a bearer header is ignored: any made-up value would be a new client.
 */
export function clientKeyer(config: Pick<Config, 'API_TOKENS' | 'TRUSTED_PROXIES'>): (request: FastifyRequest) => string {
  const tokens = (config.API_TOKENS ?? []).length > 0;
  const trusted = config.TRUSTED_PROXIES.length > 0 ? new AddressRanges(config.TRUSTED_PROXIES) : undefined;
  return (request) => {
    const bearer = tokens ? /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '')?.[1]?.trim() : undefined;
    return bearer ? `token:${createHash('sha256').update(bearer).digest('hex')}` : `address:${clientAddress(request.raw, trusted)}`;
  };
}

/** A query-API route: its query schema is used both to validate requests and to write the OpenAPI document. */
export interface RouteSpec<Q extends z.ZodType> {
  path: string;
  /** The OpenAPI operationId: what a generated client calls the method. */
  operationId: string;
  summary: string;
  description?: string;
  query: Q;
  /** Path parameters (`:name` in `path`), checked like the query; the handler reads them from request.params. */
  params?: z.ZodObject;
  /** Shape of the JSON answer (src/api/responses.ts), for the document. */
  response: z.ZodType;
  csv?: boolean;
  /** The answer is Server-Sent Events of `response` objects (one per `data:` line), not one JSON document. */
  eventStream?: boolean;
  /** Error statuses this route sends beyond those of every route (400, 401, 421, 422, 500), with what each means. */
  errors?: Record<number, string>;
  /**
   * The route reads a lot (a session of thousands of requests, a month's report): its queries wait behind
   * interactive ones for one of EMBEDDED_HEAVY_READS_MAX slots (src/store/read-lanes.ts).
   */
  heavy?: boolean;
  /** Headers of the 200 answer, by name: what each carries. */
  responseHeaders?: Record<string, string>;
  handler: (query: z.output<Q>, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export class RouteRegistry {
  readonly routes: Array<RouteSpec<z.ZodType>> = [];

  constructor(
    private readonly parse: <S extends z.ZodType>(schema: S, request: FastifyRequest) => z.output<S>,
    /** A client's share of interactive work (API_INTERACTIVE_PER_CLIENT) and who a request is; none: no share. */
    private readonly share?: { maxPerClient: number; clientOf: (request: FastifyRequest) => string },
  ) {}

  get<Q extends z.ZodType>(app: FastifyInstance, spec: RouteSpec<Q>): void {
    this.routes.push(spec as unknown as RouteSpec<z.ZodType>);
    app.get(spec.path, async (request, reply) => {
      if (spec.params) request.params = this.parse(spec.params, { query: request.params } as FastifyRequest);
      const query = this.parse(spec.query, request);
      return inReadLane(spec.heavy ? 'heavy' : 'interactive', () => spec.handler(query, request, reply), {
        signal: clientGone(reply),
        client: this.share?.clientOf(request),
        maxPerClient: this.share?.maxPerClient,
      });
    });
  }

  /** OpenAPI 3.1 document generated from the same zod schemas that validate the requests. */
  openapi(prefix: string, info: { title: string; version: string; description?: string }, serverUrl: string) {
    const paths: Record<string, unknown> = {};
    for (const r of this.routes) {
      const schema = z.toJSONSchema(r.query, { io: 'input', unrepresentable: 'any' }) as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      const pathSchema = r.params ? (z.toJSONSchema(r.params, { io: 'input', unrepresentable: 'any' }) as { properties?: Record<string, unknown> }) : {};
      const pathParameters = Object.entries(pathSchema.properties ?? {}).map(([name, s]) => ({ name, in: 'path', required: true, schema: s }));
      const parameters = [...pathParameters, ...Object.entries(schema.properties ?? {}).map(([name, s]) => ({
        name,
        in: 'query',
        required: (schema.required ?? []).includes(name),
        schema: s,
        ...(typeof (s as { description?: unknown }).description === 'string' ? { description: (s as { description: string }).description } : {}),
      }))];
      const responseSchema = z.toJSONSchema(r.response, { io: 'output', unrepresentable: 'any' });
      const content: Record<string, unknown> = r.eventStream
        ? { 'text/event-stream': { schema: { type: 'string', description: 'Server-Sent Events; each data line is a JSON object of this shape', contentSchema: responseSchema } } }
        : { 'application/json': { schema: responseSchema } };
      if (r.csv) content['text/csv'] = { schema: { type: 'string', description: 'RFC 4180 CSV with a header row (format=csv or Accept: text/csv)' } };
      const error = (description: string) => ({ description, content: { [PROBLEM_CONTENT_TYPE]: { schema: { $ref: '#/components/schemas/Problem' } } } });
      const errors: Record<number, string> = { ...ROUTE_ERRORS, ...r.errors };
      paths[`${prefix}${r.path.replace(/:(\w+)/g, '{$1}')}`] = {
        get: {
          operationId: r.operationId,
          summary: r.summary,
          ...(r.description ? { description: r.description } : {}),
          parameters,
          security: [{ bearer: [] }],
          responses: {
            '200': {
              description: 'OK',
              content,
              ...(r.responseHeaders
                ? { headers: Object.fromEntries(Object.entries(r.responseHeaders).map(([name, description]) => [name, { description, schema: { type: 'string' } }])) }
                : {}),
            },
            ...Object.fromEntries(
              Object.keys(errors)
                .map(Number)
                .sort((a, b) => a - b)
                .map((status) => [String(status), error(errors[status])]),
            ),
          },
        },
      };
    }
    return {
      openapi: '3.1.0',
      info: { ...info, license: { name: 'Apache-2.0', identifier: 'Apache-2.0' } },
      servers: [{ url: serverUrl, description: 'this Tallyhouse service' }],
      paths,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } }, schemas: { Problem: PROBLEM_SCHEMA } },
    };
  }
}

/** The statuses every route of the query API can answer besides 200 (src/http/problem.ts answers them all). */
const ROUTE_ERRORS: Record<number, string> = {
  400: 'A parameter is invalid; `error.parameter` names it and `detail` what it expects',
  401: 'Missing or wrong bearer token (when API_TOKENS is set)',
  421: 'The Host header is not a name of this service (loopback, TALLYHOUSE_HOST or ALLOWED_HOSTS)',
  422: 'The query went over its time, memory or result-size limit',
  500: 'The service failed; `request_id` finds it in the service log',
};
