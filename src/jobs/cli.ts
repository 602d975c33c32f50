import { parseArgs } from 'node:util';
import { IANAZone } from 'luxon';
import { getConfig } from '../config.js';
import { createLogger } from '../log.js';
import { closeRuntime, openRuntime } from '../service.js';
import type { JobDefinition } from './job.js';
import { openPlatformSource } from './platform-source.js';
import { consoleProgress } from './progress.js';
import { Scheduler } from './scheduler.js';

export function collectUsage(allJobs: JobDefinition[]): string {
  const lines = allJobs.map((j) => {
    const extra = Object.entries(j.options ?? {}).map(([k, o]) => `\n      --${k}  ${o.description}`).join('');
    return `  ${j.name.padEnd(10)} ${j.description}${extra}`;
  });
  return `tallyhouse collect <job> [--from YYYY-MM-DD --to YYYY-MM-DD] [--timezone ZONE] [job options]\n\nRuns one job now. --to is exclusive. Jobs:\n${lines.join('\n')}\n`;
}

/** `tallyhouse collect <job> [...]`: runs one job now, with progress on stderr; exit 1 when it fails. */
export async function collectCommand(allJobs: JobDefinition[], argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  const job = allJobs.find((j) => j.name === name);
  if (!job) {
    process.stderr.write(`tallyhouse collect: ${name ? `unknown job ${JSON.stringify(name)}` : 'which job?'}\n\n${collectUsage(allJobs)}`);
    return 2;
  }
  let values: Record<string, string | boolean | undefined>;
  try {
    const jobOptions = Object.fromEntries(Object.entries(job.options ?? {}).map(([k, o]) => [k, { type: o.type }]));
    ({ values } = parseArgs({
      args: rest,
      options: { from: { type: 'string' }, to: { type: 'string' }, timezone: { type: 'string' }, ...jobOptions },
      strict: true,
      allowPositionals: false,
    }));
  } catch (err) {
    process.stderr.write(`tallyhouse collect ${name}: ${(err as Error).message}\n\n${collectUsage(allJobs)}`);
    return 2;
  }
  const config = getConfig();
  // Any valid zone may be collected on demand (the query API answers in the zones it finds collected).
  if (typeof values.timezone === 'string' && !IANAZone.isValidZone(values.timezone)) {
    process.stderr.write(`tallyhouse collect ${name}: --timezone: unknown IANA time zone ${JSON.stringify(values.timezone)}\n`);
    return 2;
  }
  const logger = createLogger(config.LOG_LEVEL);
  const rt = await openRuntime(config, { logger });
  const source = await openPlatformSource(config, logger);
  try {
    const scheduler = new Scheduler({ runtime: rt, platform: source.platform, jobs: allJobs, now: source.now });
    const args = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, v === undefined ? undefined : String(v)]));
    const result = await scheduler.run(job.name, 'manual', args, consoleProgress());
    if (result.status !== 'ok') {
      process.stderr.write(`tallyhouse collect ${name}: ${result.error}\n`);
      return 1;
    }
    process.stderr.write(`${name}: ${result.rows} rows in ${(result.durationMs / 1000).toFixed(1)} s (${result.retries} retried calls)\n`);
    return 0;
  } finally {
    await source.close();
    await closeRuntime(rt);
  }
}
