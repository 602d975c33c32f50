// The built-in web console (issue 47): static pages under /console/ that call the query API under /api/v1 from the
// browser. It serves no figure of its own: every number on a page comes from an API answer, so the console, the API,
// the CLI, MCP and the dashboards agree by construction. The files hold no data, so they are served without a token
// (a browser cannot send one with a navigation); the page asks for one when the API answers 401, and the API checks
// it as for any client. The Host check (src/http/host-check.ts) covers these routes like every other.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { Extension } from '../runtime.js';
import { sendProblem } from '../http/problem.js';

export const CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));
export const CONSOLE_PATH = '/console/';

/**
 * Strict: scripts, styles, images and API calls from this origin only, no inline script or style attribute, no
 * plugin, no framing, no <base> rewrite, forms post nowhere. uPlot sets styles through the CSSOM (el.style.x = …),
 * which style-src does not govern.
 */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
};

/** Every file the console serves, by its path under /console/: a fixed list read once, so no request reaches the file system. */
export const CONSOLE_FILES = [
  'index.html',
  'app.js',
  'api.js',
  'format.js',
  'charts.js',
  'pages.js',
  'console.css',
  'favicon.svg',
  'vendor/uPlot.iife.min.js',
  'vendor/uPlot.min.css',
] as const;

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
}

function loadAssets(dir: string): Map<string, Asset> {
  const assets = new Map<string, Asset>();
  for (const file of CONSOLE_FILES) {
    const body = readFileSync(`${dir}${file}`);
    const ext = file.slice(file.lastIndexOf('.'));
    assets.set(file, { body, type: TYPES[ext] ?? 'application/octet-stream', etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return assets;
}

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin')
    .header('x-frame-options', 'DENY');
}

/** Registers /console/ (the pages and their vendored assets) on the service's fastify instance. */
export function consoleExtension(dir = CONSOLE_DIR): Extension {
  return async (rt) => {
    const assets = loadAssets(dir);
    const app: FastifyInstance = rt.app;
    const send = (file: string, ifNoneMatch: string | undefined, reply: FastifyReply) => {
      const asset = assets.get(file);
      if (!asset) return sendProblem(securityHeaders(reply), 404, `not a console file: ${file}`, { code: 'not_found' });
      securityHeaders(reply).header('etag', asset.etag).header('cache-control', 'no-cache');
      if (ifNoneMatch === asset.etag) return reply.code(304).send();
      return reply.type(asset.type).send(asset.body);
    };
    // Relative redirects: behind a proxy that strips a path prefix (PUBLIC_URL=https://ops.example/tally/) the
    // browser resolves them against the prefixed address it asked for.
    app.get('/console', async (_request, reply) => securityHeaders(reply).redirect('console/', 302));
    app.get('/console/', async (request, reply) => send('index.html', request.headers['if-none-match'], reply));
    app.get('/console/*', async (request, reply) => {
      const file = (request.params as { '*': string })['*'];
      return send(file, request.headers['if-none-match'], reply);
    });
    rt.logger.debug({ files: assets.size }, 'web console at /console/');
  };
}
