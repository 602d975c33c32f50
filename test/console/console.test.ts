// The web console (issue 47) in a real browser: Debian's chromium-headless-shell driven by playwright-core (pinned
// to the release whose Chromium has the installed major; checked below, since with an executablePath Playwright does
// not check it). One service over a simulator collected at a fixed clock, with API_TOKENS and budgets, and a
// path-prefix proxy in front of it. Per page: no console error, failed request, request to another origin or CSP
// violation; the figures in the DOM equal the API's answer to the same query (money as its exact decimal text in
// data-value, and the shown text its rounding to cents by a second implementation here); the keyboard reaches every
// control; axe-core finds no serious or critical violation; a screenshot under test-results/console/.
// Skipped, with one line saying how to install the browser, when it is missing and CI is not set; under CI=true the
// tests run and fail without it (scripts/ensure-browser.mjs installs it in the pretest step).
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync } from 'node:fs';
import { createServer, request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { startSim, type Sim } from '../../src/sim/index.js';
import { startService, type Service } from '../../src/service.js';
import { apiExtension } from '../../src/api/index.js';
import { requestCostRoutes } from '../../src/api/request-cost-routes.js';
import { logsRoutes } from '../../src/api/logs-routes.js';
import { sessionRoutes } from '../../src/api/session-routes.js';
import { efficiencyRoutes } from '../../src/api/efficiency-routes.js';
import { anomalyRoutes } from '../../src/api/anomaly-routes.js';
import { fileURLToPath } from 'node:url';
import { readScenarioFile } from '../../src/sim/scenario.js';
import { consoleExtension, CONSOLE_CSP } from '../../src/console/index.js';
import { createLogger } from '../../src/log.js';
import { createRegistry } from '../../src/metrics.js';
import { runJob } from '../support/jobs.js';
import { testConfig } from '../support/store.js';
import { BROWSER, browserRequired, INSTALL_HINT, missingParts } from '../../scripts/ensure-browser.mjs';

// Used only inside page.evaluate callbacks, which run in the browser; the project's types have no DOM library.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const window: any, document: any, sessionStorage: any, performance: any;
type HTMLElement = any;
type HTMLButtonElement = any;
type Document = any;
type PerformanceNavigationTiming = any;
type PerformanceResourceTiming = any;

const require = createRequire(import.meta.url);
const CI = browserRequired();
const missing = missingParts();
if (missing.length > 0 && !CI) process.stderr.write(`console browser tests skipped: ${missing.join(' and ')} missing; ${INSTALL_HINT}\n`);
const run = missing.length === 0 || CI;

const NOW = '2026-11-20T15:00:00Z';
const TODAY = '2026-11-20';
const TOKEN = 'console-test-token-0123456789';
const OUT = resolve('test-results/console');
const PAGES = ['overview', 'changes', 'anomalies', 'budgets', 'efficiency', 'trace'] as const;
const PREFIX = '/tally';

let sim: Sim;
let service: Service;
let proxy: Server;
let proxyUrl = '';
const proxied: string[] = [];
let browser: Browser;

/** A reverse proxy on loopback that serves the service under /tally (stripped), as an ingress with a sub-path does. */
async function startPrefixProxy(target: () => string): Promise<Server> {
  const server = createServer((req, res) => {
    proxied.push(req.url ?? '');
    const url = req.url ?? '/';
    if (url !== PREFIX && !url.startsWith(`${PREFIX}/`)) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('outside the prefix');
      return;
    }
    const to = new URL(target());
    const upstream = httpRequest(
      { host: to.hostname, port: to.port, method: req.method, path: url.slice(PREFIX.length) || '/', headers: { ...req.headers, host: to.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    upstream.on('error', () => res.writeHead(502).end());
    req.pipe(upstream);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return server;
}

async function api<T>(path: string, params: Record<string, string> = {}): Promise<T> {
  const url = new URL(`${service.url}/api/v1/${path}`);
  for (const [k, v] of Object.entries(params)) if (v !== '') url.searchParams.set(k, v);
  const res = await fetch(url, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status, `${url}: ${await res.clone().text()}`).toBe(200);
  return (await res.json()) as T;
}

/**
 * Rounds decimal text to cents half away from zero and groups thousands: the second implementation the page's
 * text is checked against (the page's format.js pads digits; this one scales by 10^9 and divides).
 */
function cents(text: string): string {
  const negative = text.startsWith('-');
  const [whole, frac = ''] = text.replace('-', '').split('.');
  const nanos = BigInt(whole) * 1_000_000_000n + BigInt((frac + '000000000').slice(0, 9));
  const c = (nanos + 5_000_000n) / 10_000_000n;
  const s = `${c / 100n}`.replace(/\B(?=(\d{3})+(?!\d))/g, ',') + `.${`${c % 100n}`.padStart(2, '0')}`;
  return negative && c !== 0n ? `-${s}` : s;
}

interface Seen {
  errors: string[];
  failed: string[];
  foreign: string[];
  statuses: Array<{ url: string; status: number }>;
}

/** A tab with the token already in its session (the token flow itself is tested once, below), watched for trouble. */
async function watchedPage(context: BrowserContext, origin: string): Promise<{ page: Page; seen: Seen }> {
  const page = await context.newPage();
  const seen: Seen = { errors: [], failed: [], foreign: [], statuses: [] };
  page.on('console', (m) => {
    if (m.type() === 'error') seen.errors.push(m.text());
  });
  page.on('pageerror', (e) => seen.errors.push(e.message));
  page.on('requestfailed', (r) => seen.failed.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on('request', (r) => {
    const u = r.url();
    if (!u.startsWith('data:') && !u.startsWith('blob:') && new URL(u).origin !== origin) seen.foreign.push(u);
  });
  page.on('response', (r) => seen.statuses.push({ url: r.url(), status: r.status() }));
  return { page, seen };
}

async function openPage(page: Page, url: string, name: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector(`main[data-page="${name}"][data-ready="true"]`, { timeout: 60_000 });
}

async function expectClean(page: Page, seen: Seen): Promise<void> {
  expect(seen.errors).toEqual([]);
  expect(seen.failed).toEqual([]);
  expect(seen.foreign).toEqual([]);
  expect(seen.statuses.filter((s) => s.status >= 400)).toEqual([]);
  expect(await page.evaluate(() => (window as unknown as { __csp: string[] }).__csp)).toEqual([]);
  expect(await page.locator('main .error').allTextContents()).toEqual([]);
}

/** Every visible control, then Tab through the page: each must receive focus. */
async function expectKeyboardReachesAll(page: Page): Promise<number> {
  const count = await page.evaluate(() => {
    const controls = [...document.querySelectorAll('a[href], button, input, select, textarea, summary, [tabindex]:not([tabindex="-1"])')].filter(
      (e) => e.checkVisibility() && !(e as HTMLButtonElement).disabled && !e.closest('dialog:not([open])'),
    );
    controls.forEach((e, i) => e.setAttribute('data-kbd', String(i)));
    (document.activeElement as HTMLElement | null)?.blur();
    return controls.length;
  });
  const reached = new Set<string>();
  for (let i = 0; i < count + 3; i++) {
    await page.keyboard.press('Tab');
    const k = await page.evaluate(() => document.activeElement?.getAttribute('data-kbd') ?? null);
    if (k !== null) reached.add(k);
  }
  expect(reached.size, 'controls reached by Tab').toBe(count);
  return count;
}

async function expectAccessible(page: Page): Promise<void> {
  await page.evaluate(readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8'));
  const violations = await page.evaluate(async () => {
    const axe = (window as unknown as { axe: { run: (ctx: Document, opts: object) => Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: unknown }> }> }> } }).axe;
    const result = await axe.run(document, { resultTypes: ['violations'] });
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.map((n) => JSON.stringify(n.target)).join(' ')}`);
  });
  expect(violations).toEqual([]);
}

/** `data-value` and shown text of the money figures under `selector`, keyed by the nearest data-key. */
async function moneyIn(page: Page, selector: string, keyOf = '[data-key]'): Promise<Array<{ key: string; col: string; value: string; text: string; currency: string }>> {
  return page.$$eval(
    `${selector} .money`,
    (els, keySel) =>
      els.map((e) => ({
        key: e.closest(keySel)?.getAttribute('data-key') ?? e.getAttribute('data-key') ?? '',
        col: e.closest('td')?.getAttribute('data-col') ?? e.getAttribute('data-key') ?? '',
        value: e.getAttribute('data-value') ?? '',
        text: e.textContent ?? '',
        currency: e.getAttribute('data-currency') ?? '',
      })),
    keyOf,
  );
}

function expectShownAsRounded(figures: Array<{ value: string; text: string; currency: string }>): void {
  expect(figures.length).toBeGreaterThan(0);
  for (const f of figures) {
    const t = f.text.replace(/^\+/, '');
    const expected = f.value.startsWith('-') && cents(f.value) !== '0.00' ? `-${f.currency} ${cents(f.value).slice(1)}` : `${f.currency} ${cents(f.value)}`;
    expect(t, `${f.value} shown`).toBe(expected);
  }
}

/** What each page's figures must equal: the API's answer to the same query. */
const CHECKS: Record<(typeof PAGES)[number], (page: Page) => Promise<void>> = {
  async overview(page) {
    const range = { from: '2026-11-01', to: '2026-11-21', timezone: 'UTC' };
    for (const product of ['serverless', 'model_api']) {
      const answer = await api<{ rows: Array<{ currency: string; cost: string }> }>('cost', { ...range, product });
      const shown = await page.$$eval(`.kpi[data-product="${product}"] .money`, (els) => els.map((e) => [e.getAttribute('data-currency'), e.getAttribute('data-value')]));
      expect(answer.rows.length).toBeGreaterThan(0);
      expect(shown).toEqual(answer.rows.map((r) => [r.currency, r.cost]));
    }
    const apps = await api<{ rows: Array<{ app: string; currency: string; cost: string }> }>('cost', { ...range, product: 'serverless', group_by: 'app' });
    // Top 8 by cost: the API's rows ordered by exact decimal value (scaled BigInt here, string compare on the page).
    const scaled = (v: string) => BigInt(v.split('.')[0]) * 10n ** 12n + BigInt(((v.split('.')[1] ?? '') + '0'.repeat(12)).slice(0, 12));
    const top = [...apps.rows].sort((a, b) => (scaled(b.cost) > scaled(a.cost) ? 1 : scaled(b.cost) < scaled(a.cost) ? -1 : 0)).slice(0, 8);
    const shownApps = await moneyIn(page, 'section[aria-label="Top apps"]');
    expect(shownApps.map((f) => [f.key, f.value])).toEqual(top.map((r) => [`${r.app}|${r.currency}`, r.cost]));
    expectShownAsRounded(shownApps);
  },
  async changes(page) {
    const q = Object.fromEntries(await Promise.all(['from', 'to', 'baseline_from', 'baseline_to'].map(async (n) => [n, await page.inputValue(`#f-${n}`)] as const)));
    // The default: this month to date (the service's today, 2026-11-20) against the same days of last month.
    expect(q).toEqual({ from: '2026-11-01', to: '2026-11-21', baseline_from: '2026-10-01', baseline_to: '2026-10-21' });
    const answer = await api<{ totals: Array<Record<string, string>> }>('cost/changes', { ...q, product: 'all', group_by: 'app,endpoint', timezone: 'UTC', limit: '50' });
    expect(answer.totals.length).toBeGreaterThan(0);
    for (const t of answer.totals) {
      const shown = await moneyIn(page, `.waterfall[aria-label="Change in ${t.currency}"]`, '.never');
      expect(Object.fromEntries(shown.map((f) => [f.col, f.value]))).toEqual(Object.fromEntries(['baseline', 'volume', 'price', 'discount', 'new', 'gone', 'current'].map((k) => [k, t[k]])));
      expectShownAsRounded(shown.filter((f) => ['baseline', 'current'].includes(f.col)));
    }
  },
  async anomalies(page) {
    const answer = await api<{ rows: Array<{ finding_id: string }> }>('anomalies', { from: await page.inputValue('#f-from'), to: await page.inputValue('#f-to'), limit: '200' });
    expect(answer.rows.length).toBeGreaterThan(0);
    const shown = await page.$$eval('table tbody tr[data-key]', (rows) => rows.map((r) => r.getAttribute('data-key')));
    expect(shown).toEqual(answer.rows.map((r) => r.finding_id));
  },
  async budgets(page) {
    const answer = await api<{ budgets: Array<Record<string, string> & { interval: { low: string; high: string | null } }> }>('budgets', { month: '2026-11', timezone: 'UTC' });
    expect(answer.budgets.length).toBe(2);
    for (const b of answer.budgets) {
      const shown = await moneyIn(page, `section[data-key="${b.scope}|${b.name}|${b.currency}"]`);
      expect(Object.fromEntries(shown.map((f) => [f.col, f.value]))).toEqual({ amount: b.amount, spent: b.spent, forecast: b.forecast, low: b.interval.low, high: b.interval.high });
      expectShownAsRounded(shown);
    }
  },
  async efficiency(page) {
    const app = await page.inputValue('#f-app');
    const answer = await api<{ rows: Array<Record<string, string>> }>('efficiency', { from: '2026-11-01', to: '2026-11-21', timezone: 'UTC' });
    const mine = answer.rows.filter((r) => r.app === app);
    expect(mine.length).toBeGreaterThan(0);
    const shown = await moneyIn(page, `section[aria-label^="${app}:"] table`);
    const expected = mine.flatMap((r) => ['cost', 'busy_cost', 'idle_cost', 'draining_cost', 'unattributed_cost'].map((c) => [`${r.date}|${r.machine_type}|${r.currency}`, c, r[c]]));
    expect(shown.map((f) => [f.key, f.col, f.value]).sort()).toEqual(expected.sort());
    expectShownAsRounded(shown);
  },
  async trace() {
    // Checked in its own test: the page needs an id from the API first.
  },
};

describe.skipIf(!run)('web console in a browser', () => {
  beforeAll(async () => {
    // The demo's scenario (a runaway key, a price change, an error burst, ...): the Anomalies page has findings to show
    // whatever the detector's noise calibration makes of the random world around them.
    const scenario = readScenarioFile(fileURLToPath(new URL('../../src/sim/scenarios/demo.json', import.meta.url)));
    sim = await startSim({ seed: 47, now: NOW, days: 36, apps: 6, requestsPerHour: 2, scenario });
    proxy = await startPrefixProxy(() => service.url);
    proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    service = await startService(
      testConfig({
        PORT: '0',
        API_TOKENS: TOKEN,
        TIMEZONES: 'UTC',
        PUBLIC_URL: `${proxyUrl}${PREFIX}`,
        BUDGETS: JSON.stringify([
          { scope: 'product', name: 'serverless', amount: 60_000, currency: 'USD' },
          { scope: 'product', name: 'model_api', amount: 10, currency: 'USD' },
        ]),
      }),
      {
        logger: createLogger('silent'),
        registry: createRegistry({ defaultMetrics: false }),
        extensions: [apiExtension([requestCostRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes]), consoleExtension()],
        now: () => new Date(NOW),
      },
    );
    for (const job of ['apps', 'events', 'runner-metrics']) expect((await runJob(service, sim, job)).status).toBe('ok');
    // Four weeks and a week of history before the anomaly detector's days; the last week of requests and logs.
    for (const [job, from] of [['usage', '2026-10-16'], ['models', '2026-10-16'], ['runners', '2026-11-01'], ['requests', '2026-11-14'], ['logs', '2026-11-14']]) {
      const r = await runJob(service, sim, job, { from, to: '2026-11-21', timezone: 'UTC' });
      expect(r.status, `${job}: ${r.error}`).toBe('ok');
    }
    const anomalies = await runJob(service, sim, 'anomalies');
    expect(anomalies.status, anomalies.error).toBe('ok');
    const { chromium } = await import('playwright-core');
    browser = await chromium.launch({ executablePath: execFileSync('sh', ['-c', `command -v ${BROWSER}`], { encoding: 'utf8' }).trim(), args: ['--no-sandbox'] });
    mkdirSync(OUT, { recursive: true });
  }, 1_200_000);

  afterAll(async () => {
    await browser?.close();
    await service?.close();
    await sim?.close();
    await new Promise((ok) => proxy?.close(ok));
  });

  it('drives the Chromium major that the pinned playwright-core release was built for', async () => {
    const pkg = JSON.parse(readFileSync(resolve('package.json'), 'utf8')) as { devDependencies: Record<string, string> };
    const pinned = pkg.devDependencies['playwright-core'];
    expect(pinned, 'playwright-core is pinned to an exact release').toMatch(/^\d+\.\d+\.\d+$/);
    const installedPw = (JSON.parse(readFileSync(require.resolve('playwright-core/package.json'), 'utf8')) as { version: string }).version;
    expect(installedPw).toBe(pinned);
    const browsers = JSON.parse(readFileSync(join(dirname(require.resolve('playwright-core/package.json')), 'browsers.json'), 'utf8')) as { browsers: Array<{ name: string; browserVersion: string }> };
    const built = browsers.browsers.find((b) => b.name === 'chromium-headless-shell')!.browserVersion;
    const installed = /(\d+)\.\d+\.\d+\.\d+/.exec(execFileSync(BROWSER, ['--version'], { encoding: 'utf8' }))![1];
    const running = browser.version().split('.')[0];
    process.stdout.write(`console: playwright-core ${installedPw} (built for Chromium ${built}) drives ${BROWSER} ${browser.version()}\n`);
    expect([installed, running]).toEqual([built.split('.')[0], built.split('.')[0]]);
  });

  it('serves the pages under a strict Content-Security-Policy, redirects / to the console, and sets no cookie', async () => {
    const root = await fetch(`${service.url}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, 'console/']);
    for (const path of ['/console/', '/console/app.js', '/console/vendor/uPlot.iife.min.js']) {
      const res = await fetch(`${service.url}${path}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-security-policy')).toBe(CONSOLE_CSP);
      expect(res.headers.get('set-cookie')).toBeNull();
    }
    expect(CONSOLE_CSP).toContain("default-src 'self'");
    expect(CONSOLE_CSP).not.toContain('unsafe');
    expect((await fetch(`${service.url}/console/../package.json`)).status).toBe(404);
    expect((await fetch(`${service.url}/console/nope.js`)).status).toBe(404);
  });

  it('asks for a token once: a wrong one gets a clear message, the right one the data', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${service.url}/console/#budgets`);
    await page.waitForSelector('#token-dialog[open]');
    await expect.poll(() => page.locator('main [data-error="auth"]').textContent()).toContain('needs an API token');
    await page.fill('#token-input', 'wrong-token-0123456789');
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('#token-dialog[open] #token-error:not([hidden])');
    expect(await page.textContent('#token-error')).toContain('refused that token');
    expect(await page.textContent('main [data-error="auth"]')).toContain('The API token was refused (401)');
    await page.fill('#token-input', TOKEN);
    await page.click('#token-form button[type="submit"]');
    await page.waitForSelector('main[data-page="budgets"][data-ready="true"] section[data-key]');
    // Kept for this tab's session only, never as a cookie.
    expect(await page.evaluate(() => sessionStorage.getItem('tallyhouse.apiToken'))).toBe(TOKEN);
    expect(await context.cookies()).toEqual([]);
    // Other pages of the tab use it without asking again.
    await page.click('#nav a[href="#changes"]');
    await page.waitForSelector('main[data-page="changes"][data-ready="true"] .waterfall');
    expect(await page.isVisible('#token-dialog[open]')).toBe(false);
    await context.close();
  });

  describe('each page', () => {
    let context: BrowserContext;
    beforeAll(async () => {
      context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      await context.addInitScript(`sessionStorage.setItem('tallyhouse.apiToken', ${JSON.stringify(TOKEN)});
        window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));`);
    });
    afterAll(async () => context?.close());

    it.each(PAGES)('%s: renders with data equal to the API, cleanly, reachable by keyboard, accessible', async (name) => {
      const { page, seen } = await watchedPage(context, new URL(service.url).origin);
      await openPage(page, `${service.url}/console/#${name}`, name);
      if (name === 'overview') {
        // Page weight (every response, headers included, as transferred) and time to first data, on a fresh load.
        const sizes = await Promise.all(seen.statuses.map(async (s) => s));
        const requests = await page.evaluate(() => performance.getEntriesByType('resource').length);
        const bytes = await page.evaluate(() => (performance.getEntriesByType('navigation')[0] as PerformanceNavigationTiming).transferSize + performance.getEntriesByType('resource').reduce((n: number, r: PerformanceResourceTiming) => n + r.transferSize, 0));
        const firstDataMs = await page.evaluate(() => performance.getEntriesByName('tallyhouse:data:overview')[0]?.startTime ?? -1);
        process.stdout.write(`console: overview page weight ${bytes} bytes transferred in ${requests + 1} requests (${sizes.length} responses); first data drawn ${Math.round(firstDataMs)} ms after navigation start\n`);
        expect(bytes).toBeLessThan(300_000);
        expect(firstDataMs).toBeGreaterThan(0);
      }
      if (name === 'trace') {
        const logs = await api<{ lines: Array<{ request_id: string; message: string }> }>('logs', { from: '2026-11-14T00:00:00Z', to: '2026-11-21T00:00:00Z', limit: '50' });
        const id = logs.lines.find((l) => l.request_id)!.request_id;
        await page.fill('#f-id', id);
        await page.press('#f-id', 'Enter');
        await page.waitForSelector('main pre.log');
        const mine = await api<{ lines: Array<{ message: string }> }>('logs', { request_id: id, from: '2026-11-14T00:00:00Z', to: '2026-11-21T00:00:00Z', limit: '200' });
        const text = await page.textContent('main pre.log');
        expect(mine.lines.length).toBeGreaterThan(0);
        for (const l of mine.lines) expect(text).toContain(l.message);
        expect(page.url()).toContain(`#trace?id=${id}`);
      }
      await CHECKS[name](page);
      await expectClean(page, seen);
      const controls = await expectKeyboardReachesAll(page);
      await expectAccessible(page);
      await page.screenshot({ path: join(OUT, `${name}.png`), fullPage: true });
      expect(controls).toBeGreaterThan(6);
      await page.close();
    });

    it('keeps each page state in the address: a shared link opens the same view', async () => {
      const { page, seen } = await watchedPage(context, new URL(service.url).origin);
      await openPage(page, `${service.url}/console/#changes?from=2026-11-10&to=2026-11-17&baseline_from=2026-11-03&baseline_to=2026-11-10&product=serverless`, 'changes');
      expect(await page.inputValue('#f-from')).toBe('2026-11-10');
      expect(await page.inputValue('#f-product')).toBe('serverless');
      const answer = await api<{ totals: Array<{ currency: string; difference: string }> }>('cost/changes', { from: '2026-11-10', to: '2026-11-17', baseline_from: '2026-11-03', baseline_to: '2026-11-10', product: 'serverless', group_by: 'app,endpoint', timezone: 'UTC', limit: '50' });
      const shown = await page.$$eval('[data-figures="totals"] section h2 .money', (els) => els.map((e) => [e.getAttribute('data-currency'), e.getAttribute('data-value')]));
      expect(shown).toEqual(answer.totals.map((t) => [t.currency, t.difference]));
      // The CSV link is the same query's CSV from the API.
      const csv = await page.getAttribute('main a[data-export="csv"]', 'href');
      expect(new URL(csv!).searchParams.get('from')).toBe('2026-11-10');
      expect(new URL(csv!).searchParams.get('format')).toBe('csv');
      await expectClean(page, seen);
      await page.close();
    });
  });

  it('behind a proxy with a path prefix, every page and asset loads under the prefix', async () => {
    const context = await browser.newContext();
    await context.addInitScript(`sessionStorage.setItem('tallyhouse.apiToken', ${JSON.stringify(TOKEN)}); window.__csp = []; document.addEventListener('securitypolicyviolation', (e) => window.__csp.push(e.violatedDirective));`);
    proxied.length = 0;
    const { page, seen } = await watchedPage(context, proxyUrl);
    await page.goto(`${proxyUrl}${PREFIX}/`);
    await page.waitForSelector('main[data-page="overview"][data-ready="true"]');
    expect(page.url()).toBe(`${proxyUrl}${PREFIX}/console/`);
    for (const name of PAGES) {
      await page.click(`#nav a[href="#${name}"]`);
      await page.waitForSelector(`main[data-page="${name}"][data-ready="true"]`);
      expect(await page.locator('main h1').count()).toBe(1);
    }
    await expectClean(page, seen);
    expect(proxied.filter((u) => !u.startsWith(`${PREFIX}/`))).toEqual([]);
    expect(proxied.filter((u) => u.startsWith(`${PREFIX}/api/v1/`)).length).toBeGreaterThan(6);
    expect(proxied.filter((u) => u.startsWith(`${PREFIX}/console/vendor/`)).length).toBe(2);
    await context.close();
  });
});
