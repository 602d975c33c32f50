import { parseArgs } from 'node:util';
import { getConfig } from '../config.js';
import { commandIO } from '../cli/io.js';
import { sampleToJson } from '../promtext/index.js';
import { redactUrl, redactUrls } from '../redact.js';
import { withCommandRuntime } from '../service.js';
import { commandLineTarget, scrapeTarget, scrapeTargets, ScrapeError, type ScrapeTarget } from './scrape.js';
import { Scraper } from './scraper.js';

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
    io.err(`tallyhouse scrape: ${(err as Error).message}\n\nUsage: ${USAGE}`);
    return 2;
  }
  const config = getConfig();
  let targets: ScrapeTarget[];
  try {
    const headers: Record<string, string> = {};
    for (const h of values.header ?? []) {
      const i = h.indexOf(':');
      if (i <= 0) throw new Error(`--header ${JSON.stringify(h)}: expected "Name: value"`);
      headers[h.slice(0, i).trim().toLowerCase()] = h.slice(i + 1).trim();
    }
    targets = values.target
      ? [commandLineTarget(values.target, values.job, headers)]
      : scrapeTargets(config, { baseUrl: config.SVC_BASE_URL, apiKey: config.SVC_API_KEY });
  } catch (err) {
    io.err(`tallyhouse scrape: ${(err as Error).message}\n`);
    return 2;
  }
  if (targets.length === 0) {
    io.err('tallyhouse scrape: no target: give --target URL, or set SCRAPE_TARGETS or SVC_API_KEY\n');
    return 2;
  }
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
