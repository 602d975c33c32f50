/**
 * `tallyhouse mcp`: the MCP server on stdin/stdout for a desktop assistant. Nothing but JSON-RPC goes to stdout
 * (logs go to stderr). When a service holds DATA_DIR (the embedded store allows one process), the command bridges
 * stdio to that service's POST /mcp on the loopback address it published (src/cli/remote.ts finds it), with the
 * first API_TOKENS token when tokens are configured; otherwise it opens the store itself and answers from the query
 * API's routes built in this process, never listening on a port.
 */
import Fastify from 'fastify';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { getConfig, type Config } from '../config.js';
import { MCP_PATH } from '../mcp/extension.js';

/** Resolves when the assistant closes stdin (or the transport closes). */
function untilClosed(transport: StdioServerTransport): Promise<void> {
  return new Promise((resolve) => {
    transport.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
}

/** Bridges stdio to a running service's /mcp: each JSON-RPC message one way or the other, unchanged. */
async function bridge(url: string, config: Config): Promise<number> {
  const token = config.API_TOKENS?.[0];
  const http = new StreamableHTTPClientTransport(new URL(`${url}${MCP_PATH}`), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : undefined,
  });
  const stdio = new StdioServerTransport();
  let failed = false;
  stdio.onmessage = (message: JSONRPCMessage) => {
    http.send(message).catch((err: Error) => {
      failed = true;
      process.stderr.write(`tallyhouse mcp: the service at ${url} did not take a message (${err.message})\n`);
      if ('id' in message && message.id !== undefined) {
        void stdio.send({ jsonrpc: '2.0', id: message.id, error: { code: -32603, message: `the service at ${url} did not answer: ${err.message}` } });
      }
    });
  };
  http.onmessage = (message) => void stdio.send(message);
  http.onerror = (err) => process.stderr.write(`tallyhouse mcp: ${err.message}\n`);
  await http.start();
  await stdio.start();
  process.stderr.write(`tallyhouse mcp: answering through the service at ${url}${MCP_PATH}\n`);
  await untilClosed(stdio);
  await http.close();
  return failed ? 1 : 0;
}

export async function mcpCommand(version: string): Promise<number> {
  const config = getConfig();
  const { findService } = await import('./remote.js');
  const target = await findService(config.DATA_DIR);
  if (target) return bridge(target.url, config);
  const [{ withCommandRuntime }, { apiExtension }, routes, { mcpOptions }, { createMcpServer }] = await Promise.all([
    import('../service.js'),
    import('../api/index.js'),
    queryRoutes(),
    import('../mcp/host.js'),
    import('../mcp/server.js'),
  ]);
  return withCommandRuntime(config, async (rt) => {
    const app = Fastify({ logger: false });
    await apiExtension(routes)({ ...rt, app });
    await app.ready();
    const server = createMcpServer(mcpOptions(app, rt, version));
    const transport = new StdioServerTransport();
    const closed = untilClosed(transport);
    await server.connect(transport);
    rt.logger.info('tallyhouse mcp: answering on stdio from the store');
    await closed;
    await server.close();
    await app.close();
    return 0;
  });
}

/** The query API's route groups, as `serve` registers them (src/main.ts, serviceExtensions). */
async function queryRoutes() {
  const [{ requestCostRoutes }, { analyticsRoutes }, { logStreamRoutes }, { logsRoutes }, { sessionRoutes }, { efficiencyRoutes }, { anomalyRoutes }] = await Promise.all([
    import('../api/request-cost-routes.js'),
    import('../api/analytics-routes.js'),
    import('../api/log-stream-route.js'),
    import('../api/logs-routes.js'),
    import('../api/session-routes.js'),
    import('../api/efficiency-routes.js'),
    import('../api/anomaly-routes.js'),
  ]);
  return [requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes];
}
