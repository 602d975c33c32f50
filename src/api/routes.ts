import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';

/** A query-API route: its query schema is used both to validate requests and to write the OpenAPI document. */
export interface RouteSpec<Q extends z.ZodType> {
  path: string;
  summary: string;
  description?: string;
  query: Q;
  /** Shape of a JSON answer, for the document only. */
  response?: z.ZodType;
  csv?: boolean;
  handler: (query: z.output<Q>, request: FastifyRequest, reply: FastifyReply) => Promise<unknown>;
}

export class RouteRegistry {
  readonly routes: Array<RouteSpec<z.ZodType>> = [];

  constructor(private readonly parse: <S extends z.ZodType>(schema: S, request: FastifyRequest) => z.output<S>) {}

  get<Q extends z.ZodType>(app: FastifyInstance, spec: RouteSpec<Q>): void {
    this.routes.push(spec as unknown as RouteSpec<z.ZodType>);
    app.get(spec.path, async (request, reply) => {
      const query = this.parse(spec.query, request);
      return spec.handler(query, request, reply);
    });
  }

  /** OpenAPI 3.1 document generated from the same zod schemas that validate the requests. */
  openapi(prefix: string, info: { title: string; version: string }) {
    const paths: Record<string, unknown> = {};
    for (const r of this.routes) {
      const schema = z.toJSONSchema(r.query, { io: 'input', unrepresentable: 'any' }) as {
        properties?: Record<string, unknown>;
        required?: string[];
      };
      const parameters = Object.entries(schema.properties ?? {}).map(([name, s]) => ({
        name,
        in: 'query',
        required: (schema.required ?? []).includes(name),
        schema: s,
        ...(typeof (s as { description?: unknown }).description === 'string' ? { description: (s as { description: string }).description } : {}),
      }));
      const content: Record<string, unknown> = {
        'application/json': { schema: r.response ? z.toJSONSchema(r.response, { unrepresentable: 'any' }) : { type: 'object' } },
      };
      if (r.csv) content['text/csv'] = { schema: { type: 'string' } };
      paths[`${prefix}${r.path}`] = {
        get: {
          summary: r.summary,
          ...(r.description ? { description: r.description } : {}),
          parameters,
          security: [{ bearer: [] }],
          responses: {
            '200': { description: 'OK', content },
            '400': { description: 'A parameter is invalid; the error names it and what it expects', content: { 'application/json': { schema: ERROR_SCHEMA } } },
            '401': { description: 'Missing or wrong bearer token' },
          },
        },
      };
    }
    return {
      openapi: '3.1.0',
      info,
      paths,
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
    };
  }
}

const ERROR_SCHEMA = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { type: { type: 'string' }, message: { type: 'string' }, parameter: { type: 'string' } },
      required: ['type', 'message'],
    },
  },
};
