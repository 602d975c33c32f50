// The console's routes without a browser: / and /console redirect (relatively, so a proxy's prefix holds), every
// file the pages load is served with the strict CSP and its type, nothing outside the fixed list is (no path
// reaches the file system), the Host check covers the console, and the pages reference only files of the list
// (every asset vendored: no other origin).
import { readFileSync } from 'node:fs';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { consoleExtension, CONSOLE_CSP, CONSOLE_DIR, CONSOLE_FILES } from '../../src/console/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { testConfig } from '../support/store.js';

let service: Service;

beforeAll(async () => {
  service = await startService(testConfig({ PORT: '0' }), {
    logger: createLogger('silent'),
    registry: createRegistry({ defaultMetrics: false }),
    extensions: [apiExtension(), consoleExtension()],
  });
}, 120_000);

afterAll(async () => {
  await service?.close();
});

const get = (path: string, headers: Record<string, string> = {}) => fetch(`${service.url}${path}`, { redirect: 'manual', headers });

describe('console routes', () => {
  it('redirects / and /console to console/ relatively', async () => {
    for (const path of ['/', '/console']) {
      const res = await get(path);
      expect([path, res.status, res.headers.get('location')]).toEqual([path, 302, 'console/']);
    }
  });

  it('serves each file with its type, the CSP and a validator; a repeat with the validator is a 304', async () => {
    const types: Record<string, string> = { html: 'text/html', js: 'text/javascript', css: 'text/css', svg: 'image/svg+xml' };
    for (const file of ['', ...CONSOLE_FILES.filter((f) => f !== 'index.html')]) {
      const res = await get(`/console/${file}`);
      expect([file, res.status]).toEqual([file, 200]);
      expect(res.headers.get('content-type')).toContain(types[(file || 'index.html').split('.').pop()!]);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      expect(res.headers.get('set-cookie')).toBeNull();
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(`${CONSOLE_DIR}${file || 'index.html'}`))).toBe(true);
      const again = await get(`/console/${file}`, { 'if-none-match': res.headers.get('etag')! });
      expect(again.status).toBe(304);
    }
    expect(CONSOLE_CSP.split('; ')).toEqual(expect.arrayContaining(["default-src 'self'", "script-src 'self'", "style-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"]));
    expect(CONSOLE_CSP).not.toMatch(/unsafe|\*/);
  });

  it('serves nothing outside its list of files', async () => {
    for (const path of ['/console/../package.json', '/console/%2e%2e/package.json', '/console/..%2fpackage.json', '/console/vendor/uPlot.LICENSE', '/console/nope.js', '/console/vendor/']) {
      const res = await get(path);
      expect([path, res.status]).toEqual([path, 404]);
    }
  });

  it('answers a foreign Host with 421, as every route', async () => {
    // fetch sets Host itself: a raw request carries the rebound name.
    const { port } = new URL(service.url);
    const status = await new Promise<number>((ok, fail) => {
      const req = request({ host: '127.0.0.1', port, path: '/console/', headers: { host: `attacker.example:${port}` } }, (res) => {
        res.resume();
        ok(res.statusCode ?? 0);
      });
      req.on('error', fail);
      req.end();
    });
    expect(status).toBe(421);
  });

  it('the pages load only files of the list, from this origin, with no inline script or style', () => {
    const html = readFileSync(`${CONSOLE_DIR}index.html`, 'utf8');
    const refs = [...html.matchAll(/(?:src|href)="([^"#]+)"/g)].map((m) => m[1]).filter((r) => !r.startsWith('../api/'));
    const imports = CONSOLE_FILES.filter((f) => f.endsWith('.js') && !f.startsWith('vendor/')).flatMap((f) => [...readFileSync(`${CONSOLE_DIR}${f}`, 'utf8').matchAll(/^import .* from '\.\/([^']+)';$/gm)].map((m) => m[1]));
    expect(refs.length).toBeGreaterThan(4);
    for (const ref of [...refs, ...imports]) expect(CONSOLE_FILES as readonly string[]).toContain(ref);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    expect(html).not.toMatch(/\sstyle=|\son\w+=/);
    for (const f of CONSOLE_FILES.filter((x) => x.endsWith('.js') && !x.startsWith('vendor/'))) expect(readFileSync(`${CONSOLE_DIR}${f}`, 'utf8')).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
  });
});
