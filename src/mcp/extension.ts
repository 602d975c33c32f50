/**
 * POST/GET/DELETE /mcp: the MCP server over Streamable HTTP, stateless (a server and transport per request, JSON
 * answers), authenticated like the query API: a bearer token from API_TOKENS, or loopback only when none are
 * configured. The Host check is the service's (src/http/host-check.ts); here an Origin that is not one of this
 * service's own names is refused too (a browser page elsewhere must not drive tools with the user's loopback).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { hostAllowList } from '../http/host-check.js';
import { sendProblem } from '../http/problem.js';
import type { Extension } from '../runtime.js';
import { inReadLane } from '../store/read-lanes.js';
import { clientGone, clientKeyer } from '../api/routes.js';
import { mcpOptions } from './host.js';
import { createMcpServer } from './server.js';

export const MCP_PATH = '/mcp';

const isLoopback = (address: string | undefined) => !!address && /^(127\.|::1$|::ffff:127\.)/.test(address);

/** A refusal before JSON-RPC (token, Origin, stream limits): a problem document like every other HTTP error. */
const refuse = (reply: FastifyReply, status: number, type: string, message: string) => sendProblem(reply, status, message, { code: type });

export function mcpExtension(version: string): Extension {
  return async (rt) => {
    const digests = (rt.config.API_TOKENS ?? []).map((t) => createHash('sha256').update(t).digest());
    const port = () => {
      const address = rt.app.server.address();
      return typeof address === 'object' && address ? address.port : 0;
    };
    const hostAllowed = hostAllowList(rt.config, port);
    const originAllowed = (origin: string, host: string | undefined): boolean => {
      let u: URL;
      try {
        u = new URL(origin);
      } catch {
        return false;
      }
      if (u.protocol !== 'http:' && u.protocol !== 'https:') return false;
      const given = u.port ? u.host : `${u.hostname}:${u.protocol === 'https:' ? 443 : 80}`;
      if (hostAllowed) return hostAllowed(given) || hostAllowed(u.host);
      return u.host === host;
    };
    const options = mcpOptions(rt.app, rt, version);

    await rt.app.register(async (app) => {
      // Authenticate before work (CONTRIBUTING.md rule 17): before the body is read or parsed.
      app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
        const origin = request.headers.origin;
        if (origin !== undefined && !originAllowed(origin, request.headers.host)) {
          return refuse(reply, 403, 'forbidden', 'the Origin is not this service (a page elsewhere may not call /mcp)');
        }
        if (digests.length === 0) {
          if (!isLoopback(request.socket.remoteAddress)) return refuse(reply, 403, 'forbidden', '/mcp answers on loopback only when API_TOKENS is not set');
          return;
        }
        const m = /^Bearer\s+(.+)$/i.exec(request.headers.authorization ?? '');
        const given = m ? createHash('sha256').update(m[1].trim()).digest() : null;
        if (!given || !digests.some((d) => timingSafeEqual(d, given))) {
          return refuse(reply, 401, 'authorization_error', 'a valid "Authorization: Bearer <token>" header is required (API_TOKENS)');
        }
      });
      // Open GET streams, overall and per client (token digest, or address without API_TOKENS).
      let streams = 0;
      const streamsByClient = new Map<string, number>();
      const clientOf = clientKeyer(rt.config);
      const openStream = async (request: FastifyRequest, reply: FastifyReply) => {
        const { MCP_MAX_STREAMS, MCP_MAX_STREAMS_PER_CLIENT } = rt.config;
        if (streams >= MCP_MAX_STREAMS) {
          reply.header('retry-after', '30');
          return refuse(reply, 503, 'busy', `${MCP_MAX_STREAMS} GET /mcp streams are open already (MCP_MAX_STREAMS)`);
        }
        const client = clientOf(request);
        const mine = streamsByClient.get(client) ?? 0;
        if (mine >= MCP_MAX_STREAMS_PER_CLIENT) {
          reply.header('retry-after', '30');
          return refuse(reply, 429, 'too_many_streams', `${MCP_MAX_STREAMS_PER_CLIENT} GET /mcp streams are open already for this client (MCP_MAX_STREAMS_PER_CLIENT)`);
        }
        streams++;
        streamsByClient.set(client, mine + 1);
        reply.raw.once('close', () => {
          streams--;
          const left = (streamsByClient.get(client) ?? 1) - 1;
          if (left > 0) streamsByClient.set(client, left);
          else streamsByClient.delete(client);
        });
        return handle(request, reply);
      };
      const post = async (request: FastifyRequest, reply: FastifyReply) => {
        // A batch runs each of its calls; one request asking for a hundred tool answers (14 MB, and the embedded
        // engine busy for seconds) is refused before any runs.
        if (Array.isArray(request.body) && request.body.length > rt.config.MCP_MAX_BATCH_MESSAGES) {
          return reply.code(400).send({
            jsonrpc: '2.0',
            error: { code: -32600, message: `Invalid Request: a batch of ${request.body.length} messages exceeds MCP_MAX_BATCH_MESSAGES (${rt.config.MCP_MAX_BATCH_MESSAGES}); send fewer calls per request` },
            id: null,
          });
        }
        return handle(request, reply);
      };
      const handle = async (request: FastifyRequest, reply: FastifyReply) => {
        // Each request's answers share one byte budget. A POST's calls read in a lane (src/store/read-lanes.ts): a
        // batch in the heavy one, behind a person's single questions; a GET stream or a DELETE runs no tool and
        // takes none (an open stream counted as interactive work held every heavy read back for as long as it lasted).
        const lane = request.method !== 'POST' ? undefined : Array.isArray(request.body) && request.body.length > 1 ? 'heavy' : 'interactive';
        const limit = rt.config.MCP_MAX_RESPONSE_BYTES;
        const server = createMcpServer({ ...options, answerBytes: { left: limit, limit } });
        const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
        reply.hijack();
        // A client that leaves mid-call: the transport drops the answer it waited for without settling the call, so
        // the call ends with the socket too (else its interactive work never ended, and every heavy read waited).
        const closed = new Promise<void>((resolve) => reply.raw.once('close', resolve));
        const signal = clientGone(reply);
        reply.raw.on('close', () => {
          void transport.close();
          void server.close();
        });
        await server.connect(transport);
        const answer = () => Promise.race([transport.handleRequest(request.raw, reply.raw, request.body), closed]);
        // The client's share of interactive work is the query API's (single calls beyond it read as heavy ones).
        await (lane ? inReadLane(lane, answer, { signal, client: clientOf(request), maxPerClient: rt.config.API_INTERACTIVE_PER_CLIENT }) : answer());
      };
      app.post(MCP_PATH, { bodyLimit: 1024 * 1024 }, post);
      app.get(MCP_PATH, openStream);
      app.delete(MCP_PATH, handle);
    });
  };
}
