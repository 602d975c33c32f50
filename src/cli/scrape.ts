import { parseArgs } from 'node:util';
import { ZodError } from 'zod';
import { getConfig, isDemoMode } from '../config.js';
import { describeArgsError } from '../suggest.js';
import { createCommandLogger } from '../log.js';
import { openDemoPlatform } from './demo-platform.js';
import { claimStorePlatform } from '../jobs/store-platform.js';
import { openPlatformSource } from '../jobs/platform-source.js';
import { commandIO } from '../http/command-host.js';
import { sampleToJson } from '../promtext/index.js';
import { redactUrl, redactUrls } from '../redact.js';
import { withCommandRuntime } from '../service.js';
import { commandLineTarget, scrapeTarget, scrapeTargets, ScrapeError, type ScrapeTarget } from '../collectors/scrape.js';
import { Scraper } from '../collectors/scraper.js';

const USAGE = 'tallyhouse scrape [--target URL] [--job NAME] [--header "Name: value"]... [--dry-run]\n';

/**
 * `tallyhouse scrape`: one scrape now, of --target or of every configured target. --dry-run prints the
 * parsed samples as NDJSON and stores nothing. A failed scrape or a rejected exposition exits 1 with the
 * reason (and line number) on stderr.
 */
export async function scrapeCommand(argv: string[]): Promise<number> {
  const io = commandIO();
  let values: { target?: string; job?: string; header?: string[]; 'dry-run'?: boolean };
  try {
    ({ values } = parseArgs({
      args: argv,
      options: {
        target: { type: 'string' },
        job: { type: 'string' },
        header: { type: 'string', multiple: true },
        'dry-run': { type: 'boolean' },
      },
      strict: true,
    }));
  } catch (err) {
    io.err(`tallyhouse scrape: ${describeArgsError(err, ['target', 'job', 'header', 'dry-run'])}\nUsage: ${USAGE}`);
    return 2;
  }
  let targets: ScrapeTarget[];
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const i = h.indexOf(':');
    // A header's value may be a secret: only its name is echoed.
    if (i <= 0) return usageError(`--header: expected "Name: value" (got ${i < 0 ? 'no colon' : 'no name'})`);
    headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
  }
  if (values.target !== undefined) {
    // A zod issue list was printed raw here; a URL without its scheme gets the one it likely meant.
    const problem = targetProblem(values.target);
    if (problem) return usageError(problem);
    try {
      targets = [commandLineTarget(values.target, values.job, headers)];
    } catch (err) {
      if (!(err instanceof ZodError)) throw err;
      return usageError(`--target/--job/--header: ${err.issues.map((i) => `${i.path.join('.') || 'target'}: ${i.message}`).join('; ')}`);
    }
  } else {
    const config = getConfig();
    targets = scrapeTargets(config, { baseUrl: config.SVC_BASE_URL, apiKey: config.SVC_API_KEY });
    // Demo mode: the service scrapes its built-in simulator's exposition, and so does this command (it said to set
    // SVC_API_KEY, a key the demo does not need).
    if (targets.length === 0 && isDemoMode(config)) return scrapeDemo(values['dry-run'] ?? false);
    // The platform's own exposition goes through the platform client, as in the service (issue 50.5).
    if (!config.SCRAPE_TARGETS && targets.length > 0) return scrapePlatform(values['dry-run'] ?? false);
  }
  if (targets.length === 0) {
    io.err('tallyhouse scrape: no target: give --target URL, or set SCRAPE_TARGETS (or SVC_API_KEY for the platform\'s own exposition)\n');
    return 2;
  }
  return scrapeNow(targets, values['dry-run'] ?? false);
}

function usageError(message: string): number {
  commandIO().err(`tallyhouse scrape: ${message}\nUsage: ${USAGE}`);
  return 2;
}

/** What is wrong with a --target, or undefined: an http(s) URL, never one carrying credentials in the clear. */
export function targetProblem(target: string): string | undefined {
  let url: URL | undefined;
  try {
    url = new URL(target);
  } catch {
    url = undefined;
  }
  if (url && (url.protocol === 'http:' || url.protocol === 'https:')) return undefined;
  const guess = /^[\w.-]+(:\d+)?(\/|$)/.test(target) || /^\[[0-9a-f:]+\](:\d+)?(\/|$)/i.test(target) ? `; did you mean --target ${redactUrl(`http://${target}`)}?` : '';
  return `--target: expected an http(s) URL such as http://127.0.0.1:9100/metrics${guess}`;
}

/** Demo mode without targets: one scrape of a simulator started for this command, as the service scrapes its own. */
async function scrapeDemo(dryRun: boolean): Promise<number> {
  const config = getConfig();
  // The first line, before the simulator starts (issue 44.1: a keyless shell's command says it runs on the demo).
  commandIO().err('tallyhouse scrape: demo mode (no SVC_API_KEY): scraping the built-in platform simulator, as the service does\n');
  const source = await openPlatformSource(config, createCommandLogger(config.CLI_LOG_LEVEL), { demoNoticeLevel: 'info', openDemo: openDemoPlatform });
  try {
    return await scrapeNow(scrapeTargets(config, { baseUrl: source.sim!.url, apiKey: source.sim!.keys.api, client: source.platform }), dryRun, 'scrape');
  } finally {
    await source.close();
  }
}

async function scrapePlatform(dryRun: boolean): Promise<number> {
  const config = getConfig();
  const source = await openPlatformSource(config, createCommandLogger(config.CLI_LOG_LEVEL), { demoNoticeLevel: 'info' });
  try {
    return await scrapeNow(scrapeTargets(config, { baseUrl: config.SVC_BASE_URL, apiKey: config.SVC_API_KEY, client: source.platform }), dryRun);
  } finally {
    await source.close();
  }
}

/** `claimFor`: the command's name when it writes from the configured platform (demo mode), so the store's platform is checked. */
async function scrapeNow(targets: ScrapeTarget[], dryRun: boolean, claimFor?: string): Promise<number> {
  const io = commandIO();
  const config = getConfig();
  const values = { 'dry-run': dryRun };
  if (values['dry-run']) {
    let failed = 0;
    for (const target of targets) {
      try {
        const result = await scrapeTarget(target);
        const out: string[] = [];
        for (const s of result.samples) out.push(JSON.stringify(sampleToJson(s)));
        if (out.length > 0) io.out(`${out.join('\n')}\n`);
        io.err(`${target.job} ${target.instance}: ${result.samples.length} samples (not stored: dry run)\n`);
      } catch (err) {
        failed++;
        io.err(`tallyhouse scrape: ${redactUrl(target.url)}: ${redactUrls(err instanceof ScrapeError ? err.message : (err as Error).message)}\n`);
      }
    }
    return failed > 0 ? 1 : 0;
  }
  return withCommandRuntime(config, async (rt) => {
    if (claimFor) await claimStorePlatform(rt, claimFor);
    const scraper = new Scraper(rt, targets);
    let failed = 0;
    for (const target of targets) {
      const outcome = await scraper.scrape(target);
      if (outcome.up) io.err(`${target.job} ${target.instance}: ${outcome.samples} samples stored\n`);
      else {
        failed++;
        io.err(`tallyhouse scrape: ${redactUrl(target.url)}: ${redactUrls(outcome.error ?? '')}\n`);
      }
    }
    return failed > 0 ? 1 : 0;
  });
}
