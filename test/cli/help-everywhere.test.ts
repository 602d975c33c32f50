// Issue 30.6: `--help` on every command and subcommand (exit 0, its usage on stdout, nothing opened), and a
// misspelt command, subcommand, job or option is one line with "did you mean" and exit 2 (it was `unknown job
// "--help"`, `Unknown option '--help'` exit 2, and the whole help with no suggestion for `reprot`). Run as a user
// runs the CLI (a child process), with a DATA_DIR that does not exist: help must not create or open it.
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runCli } from '../support/process.js';

// The job names of jobs/index.ts, written out (the oracle is the README's list, not the code's).
const JOBS = ['apps', 'usage', 'models', 'requests', 'analytics', 'runners', 'events', 'revisions', 'logs', 'queue', 'runner-metrics'];
const dataDir = join(mkdtempSync(join(tmpdir(), 'th-help-')), 'never-created');

async function cli(args: string[]) {
  const p = runCli(args, { DATA_DIR: dataDir, SVC_API_KEY: undefined, SVC_ADMIN_KEY: undefined });
  const { code } = await p.exited;
  return { code, out: p.stdout(), err: p.stderr() };
}

/** Runs the cases a few at a time (each is a process of its own). */
async function all<T, R>(items: T[], fn: (item: T) => Promise<R>, width = 4): Promise<R[]> {
  const results: R[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]);
      }
    }),
  );
  return results;
}

describe('--help on every command and subcommand', () => {
  const cases: Array<{ args: string[]; usage: RegExp }> = [
    { args: ['--help'], usage: /^Usage: tallyhouse <command>/ },
    { args: ['help'], usage: /^Usage: tallyhouse <command>/ },
    { args: ['serve', '--help'], usage: /^Usage: tallyhouse serve\n/ },
    { args: ['migrate', '--help'], usage: /^Usage: tallyhouse migrate\n/ },
    { args: ['collect', '--help'], usage: /^Usage: tallyhouse collect <job>[^]*\n {2}runner-metrics /m },
    { args: ['help', 'collect'], usage: /^Usage: tallyhouse collect <job>/ },
    ...JOBS.map((job) => ({ args: ['collect', job, '--help'], usage: new RegExp(`^Usage: tallyhouse collect ${job} \\[--from`) })),
    { args: ['collect', 'usage', '--from', '2026-01-01', '-h'], usage: /^Usage: tallyhouse collect usage / },
    { args: ['scrape', '--help'], usage: /^Usage: tallyhouse scrape \[--target URL\]/ },
    { args: ['logs', '--help'], usage: /^Usage: tallyhouse logs tail / },
    { args: ['logs', 'tail', '--help'], usage: /^Usage: tallyhouse logs tail [^]*--level LEVEL {7}only records of these levels: TRACE, DEBUG/ },
    { args: ['report', '--help'], usage: /^Usage: tallyhouse report finance [^]*report focus/ },
    { args: ['report', 'finance', '--help'], usage: /^Usage: tallyhouse report finance --month YYYY-MM \[--timezone ZONE\]/ },
    { args: ['report', 'focus', '--help'], usage: /^Usage: tallyhouse report focus --month YYYY-MM/ },
    { args: ['report', 'efficiency', '--help'], usage: /^Usage: tallyhouse report efficiency --month YYYY-MM/ },
    { args: ['sim', '--help'], usage: /^usage: tallyhouse sim \[--port N\]/ },
    { args: ['sim', 'truth', '--help'], usage: /tallyhouse sim truth --from DATE --to DATE/ },
  ];
  it('exits 0 with the usage of what was named on stdout, and opens nothing', async () => {
    const results = await all(cases, async (c) => ({ c, r: await cli(c.args) }));
    for (const { c, r } of results) {
      expect({ args: c.args, code: r.code, err: r.err }).toEqual({ args: c.args, code: 0, err: '' });
      expect(r.out, c.args.join(' ')).toMatch(c.usage);
    }
    expect(existsSync(dataDir)).toBe(false);
  }, 240_000);
});

describe('a misspelt command, subcommand, job or option', () => {
  const cases: Array<{ args: string[]; line: string }> = [
    { args: ['reprot'], line: 'tallyhouse: unknown command "reprot"; did you mean "report"?' },
    { args: ['colect', 'usage'], line: 'tallyhouse: unknown command "colect"; did you mean "collect"?' },
    { args: ['help', 'reprot'], line: 'tallyhouse: unknown command "reprot"; did you mean "report"?' },
    { args: ['collect', 'usgae'], line: 'tallyhouse collect: unknown job "usgae"; did you mean "usage"?' },
    { args: ['collect', 'usgae', '--help'], line: 'tallyhouse collect: unknown job "usgae"; did you mean "usage"?' },
    { args: ['collect', 'usage', '--form', '2026-01-01'], line: 'tallyhouse collect usage: unknown option --form; did you mean --from?' },
    { args: ['report', 'fiance', '--month', '2026-10'], line: 'tallyhouse report: unknown report "fiance"; did you mean "finance"?' },
    { args: ['report', 'efficency'], line: 'tallyhouse report: unknown report "efficency"; did you mean "efficiency"?' },
    { args: ['report', 'finance', '--mont', '2026-10'], line: 'tallyhouse report finance: unknown option --mont; did you mean --month?' },
    { args: ['report', 'focus', '--otu', 'x.csv'], line: 'tallyhouse report focus: unknown option --otu; did you mean --out?' },
    { args: ['logs', 'tial'], line: 'tallyhouse logs: unknown subcommand "tial"; did you mean "tail"?' },
    { args: ['logs', 'tail', '--levle', 'ERROR'], line: 'tallyhouse logs tail: unknown option --levle; did you mean --level?' },
    { args: ['scrape', '--taget', 'http://127.0.0.1:1/metrics'], line: 'tallyhouse scrape: unknown option --taget; did you mean --target?' },
    { args: ['sim', 'trth'], line: 'tallyhouse sim: unknown subcommand "trth"; did you mean "truth"?' },
    { args: ['sim', '--seeed', '2'], line: 'tallyhouse sim: unknown option --seeed; did you mean --seed?' },
    { args: ['migrate', '--dry'], line: 'tallyhouse migrate: unknown option --dry' },
  ];
  it('is exit 2 with one line naming it and the way on, before anything is opened', async () => {
    const results = await all(cases, async (c) => ({ c, r: await cli(c.args) }));
    for (const { c, r } of results) {
      expect({ args: c.args, code: r.code, first: r.err.split('\n')[0] }).toEqual({ args: c.args, code: 2, first: c.line });
      expect(r.out).toBe('');
    }
    expect(existsSync(dataDir)).toBe(false);
  }, 240_000);
});
