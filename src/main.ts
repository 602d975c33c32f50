import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { ConfigError, getConfig, isDemoMode, type Config } from './config.js';
import { createLogger } from './log.js';
import { commandHost, commandIO } from './http/command-host.js';
import { describeArgsError, didYouMean, wantsHelp } from './suggest.js';
import type { Extension } from './runtime.js';
import type { DemoWiring, JobRunnerHandle } from './jobs/extension.js';

// Everything else is imported where a command needs it: `tallyhouse sim` or `--help` load neither the service
// nor the store (the simulator's own memory is measured standalone).

/** Commands a running service can run for a CLI beside it (src/http/admin.ts). */
const HOSTED_COMMANDS = new Set(['collect', 'report', 'migrate', 'scrape', 'spool']);

/** `tallyhouse migrate`: the store's schema brought up to date; the same line whether it ran here or in the service. */
async function migrateCommand(): Promise<number> {
  const [{ withCommandRuntime }, { migrate }] = await Promise.all([import('./service.js'), import('./store/migrate.js')]);
  return withCommandRuntime(getConfig(), async (rt) => {
    const result = await migrate(rt.store, {});
    commandIO().err(`schema up to date: ${result.applied.length + result.skipped} migrations applied\n`);
    return 0;
  });
}

/** A CLI command: its own options (parsed strictly) and what it does. Returns the exit code. */
interface Command {
  summary: string;
  usage: string;
  options?: ParseArgsConfig['options'];
  allowPositionals?: boolean;
  /** Commands that parse their own arguments (e.g. `sim`, which has subcommands). */
  raw?: (argv: string[]) => Promise<number>;
  run?: (args: { values: Record<string, unknown>; positionals: string[] }) => Promise<number>;
  /** The arguments as a running service is to run them (hosted commands whose arguments name local files). */
  handOff?: (argv: string[]) => Promise<string[]>;
}

const commands: Record<string, Command> = {
  serve: {
    summary: 'run the service: collectors on their schedules, log drain, query API, /metrics',
    usage: 'tallyhouse serve',
    run: () => serve(),
  },
  migrate: {
    summary: 'apply pending migrations from sql/ and exit',
    usage: 'tallyhouse migrate',
    run: () => migrateCommand(),
  },
  collect: {
    summary: 'run one collector now (backfills with --from/--to); `tallyhouse collect --help` lists them',
    usage: 'tallyhouse collect <job> [--from YYYY-MM-DD --to YYYY-MM-DD] [--timezone ZONE]',
    raw: async (argv) => {
      const [{ collectCommand }, { allJobs }] = await Promise.all([import('./cli/collect.js'), import('../jobs/index.js')]);
      return collectCommand(allJobs, argv);
    },
  },
  scrape: {
    summary: 'scrape a Prometheus exposition now (`--target URL`, `--dry-run` prints NDJSON and stores nothing)',
    usage: 'tallyhouse scrape [--target URL] [--job NAME] [--header "Name: value"]... [--dry-run]',
    raw: async (argv) => (await import('./cli/scrape.js')).scrapeCommand(argv),
  },
  logs: {
    summary: 'follow the platform\'s live log stream: `logs tail [--app] [--level] [--search] [--request-id] [--store]`',
    usage: 'tallyhouse logs tail [--app OWNER/APP] [--level LEVEL] [--search TEXT] [--request-id ID] [--store] [--json]',
    raw: async (argv) => (await import('./cli/logs-tail.js')).logsCommand(argv),
  },
  report: {
    summary: 'write a report from the store: `report finance --month YYYY-MM [--timezone ZONE] [--out file.csv]`, `report focus --month YYYY-MM`, `report efficiency --month YYYY-MM`',
    usage:
      'tallyhouse report finance --month YYYY-MM [--timezone ZONE] [--out file.csv] [--format csv|json]\n' +
      '       tallyhouse report focus --month YYYY-MM [--out file.csv]',
    raw: async (argv) => (await import('./cli/report.js')).reportCommand(argv),
  },
  spool: {
    summary: 'store the log lines still legible in a damaged drain spool file set aside: `spool salvage FILE`',
    usage: 'tallyhouse spool salvage FILE',
    raw: async (argv) => (await import('./cli/spool.js')).spoolCommand(argv),
    // The service runs in a folder of its own: the file goes by its absolute path.
    handOff: async (argv) => (await import('./cli/spool.js')).handOffArgs(argv),
  },
  sim: {
    summary: 'run the platform simulator (`tallyhouse sim --help`), or print its ground truth (`sim truth`)',
    usage: 'tallyhouse sim [--port N] [--seed N] [--now ISO] [--days N] [--apps N] [--fault-rate P] ...',
    raw: async (argv) => (await import('./sim/cli.js')).simCommand(argv),
  },
  mcp: {
    summary: 'the MCP server on stdio for a desktop assistant (read-only; through the running service when one holds DATA_DIR)',
    usage: 'tallyhouse mcp',
    run: async () => (await import('./cli/mcp.js')).mcpCommand(packageVersion()),
  },
  help: {
    summary: 'show this help',
    usage: 'tallyhouse help [command]',
    allowPositionals: true,
    run: async ({ positionals }) => {
      // `tallyhouse help collect usage` is `tallyhouse collect usage --help`.
      if (positionals.length > 0) return main([...positionals, '--help']);
      commandIO().out(usage());
      return 0;
    },
  },
};

/** Lets other modules add their commands (collect, scrape, sim, report) without editing this table's shape. */
export function registerCommand(name: string, command: Command): void {
  commands[name] = command;
}

/** The version in package.json: one folder up from src/ when run from the sources, two from dist/src/ in the image. */
function packageVersion(): string {
  for (const path of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(path, import.meta.url), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'tallyhouse' && pkg.version) return pkg.version;
    } catch {
      // not there: the other layout
    }
  }
  return 'unknown';
}

function usage(): string {
  const width = Math.max(...Object.keys(commands).map((n) => n.length));
  const lines = Object.entries(commands).map(([name, c]) => `  ${name.padEnd(width)}  ${c.summary}`);
  return `Usage: tallyhouse <command> [options]   (tallyhouse <command> --help; tallyhouse --version)\n\nCommands:\n${lines.join('\n')}\n\nConfiguration is read from the environment; see README.md.\n`;
}

/**
 * `tallyhouse <command> [<subcommand>] --help`: the usage of what was named, exit 0; a misspelt subcommand is a
 * usage error (exit 2) with "did you mean", so `collect usgae --help` does not print help for something else.
 */
async function commandHelp(name: string, command: Command, rest: string[]): Promise<number> {
  const io = commandIO();
  const sub = rest[0] !== undefined && !rest[0].startsWith('-') ? rest[0] : undefined;
  if (name === 'collect') {
    const [{ collectHelp }, { allJobs }] = await Promise.all([import('./cli/collect.js'), import('../jobs/index.js')]);
    return collectHelp(allJobs, sub);
  }
  if (name === 'report') return (await import('./cli/report.js')).reportHelp(sub);
  if (name === 'logs') return (await import('./cli/logs-tail.js')).logsHelp(sub);
  if (name === 'spool') return (await import('./cli/spool.js')).spoolHelp(sub);
  if (name === 'sim') return (await import('./sim/cli.js')).simCommand(rest);
  if (name === 'help') return main(['--help']);
  io.out(`Usage: ${command.usage}\n\n${command.summary}\n`);
  return 0;
}

/**
 * The composition root: what `serve` runs besides the health routes, in start order (stopped in reverse).
 * Only this module imports the list of everything that runs (ARCHITECTURE.md, "Layers").
 */
export async function serviceExtensions(config: Config): Promise<Extension[]> {
  const [
    { collectorsExtension },
    { apiExtension },
    { analyticsRoutes },
    { logsRoutes },
    { logStreamRoutes },
    { requestCostRoutes },
    { anomalyRoutes },
    { businessMetricsExtension },
    { logDrainExtension },
    { webhookExtension },
    { faroExtension },
    { sessionRoutes },
    { adminExtension },
    { allJobs },
    { efficiencyRoutes },
    { idleCostShare, unattributedCostShare },
    { DEFAULT_BUSINESS_GAUGES },
    { mcpExtension },
    { consoleExtension },
  ] = await Promise.all([
    import('./jobs/extension.js'),
    import('./api/index.js'),
    import('./api/analytics-routes.js'),
    import('./api/logs-routes.js'),
    import('./api/log-stream-route.js'),
    import('./api/request-cost-routes.js'),
    import('./api/anomaly-routes.js'),
    import('./http/business-metrics.js'),
    import('./ingest/drain/extension.js'),
    import('./ingest/webhooks.js'),
    import('./ingest/faro/extension.js'),
    import('./api/session-routes.js'),
    import('./http/admin.js'),
    import('../jobs/index.js'),
    import('./api/efficiency-routes.js'),
    import('./api/efficiency-gauges.js'),
    import('./http/business-metrics.js'),
    import('./mcp/extension.js'),
    import('./console/index.js'),
  ]);
  // Demo mode: the in-process simulator pushes drain lines signed with this secret, and signs webhooks with keys
  // the receiver fetches from the simulator.
  const demo: DemoWiring = isDemoMode(config)
    ? { drainSecret: randomBytes(32).toString('hex'), faroKey: randomBytes(24).toString('hex'), openDemo: (await import('./cli/demo-platform.js')).openDemoPlatform }
    : {};
  const jobRunner: JobRunnerHandle = {};
  return [
    businessMetricsExtension([...DEFAULT_BUSINESS_GAUGES, idleCostShare, unattributedCostShare]),
    apiExtension([requestCostRoutes, analyticsRoutes, logStreamRoutes, logsRoutes, sessionRoutes, efficiencyRoutes, anomalyRoutes]),
    mcpExtension(packageVersion()),
    consoleExtension(),
    logDrainExtension({ demoSecret: demo.drainSecret }),
    webhookExtension(demo.drainSecret ? { jwksUrl: () => `${demo.simUrl}/.well-known/jwks.json`, metaBaseUrl: () => demo.simUrl } : {}),
    faroExtension({ demoKey: config.FARO_APP_KEYS ? undefined : demo.faroKey }),
    collectorsExtension(allJobs, demo, jobRunner),
    adminExtension({
      commands: Object.fromEntries(
        [...HOSTED_COMMANDS].map((name) => [name, (argv: string[]) => main([name, ...argv])]),
      ),
      jobs: () => jobRunner.runner,
      reportFatal,
    }),
  ];
}

/** Files the configuration names are read at start-up: a bad one is a configuration error (exit 2), not a failure every run. */
async function checkConfiguredFiles(config: Config): Promise<void> {
  if (!config.PRICES_FILE) return;
  const { PricesFileError, readPricesFile } = await import('./collectors/prices.js');
  try {
    await readPricesFile(config.PRICES_FILE);
  } catch (err) {
    if (err instanceof PricesFileError) throw new ConfigError([{ variable: 'PRICES_FILE', expected: err.message.replace(/^PRICES_FILE /, 'a readable prices file; ') }]);
    throw err;
  }
}

async function serve(): Promise<number> {
  const [{ assertPortFree, startService }, { dataDirHolder }, { markServiceStarting }] = await Promise.all([
    import('./service.js'),
    import('./store/client.js'),
    import('./http/admin.js'),
  ]);
  const config = getConfig();
  await checkConfiguredFiles(config);
  const logger = createLogger(config.LOG_LEVEL);
  if (config.SVC_API_KEY && !config.SVC_ADMIN_KEY) {
    logger.warn('SVC_API_KEY is set without SVC_ADMIN_KEY: usage (the bill) needs an ADMIN-scope key, so the usage job will fail until SVC_ADMIN_KEY is set; the other jobs run');
  }
  // A stray rejection is a bug to log, never a reason to take the drain and webhooks down with it: the job that
  // met a store error has already failed with it (job_runs).
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason instanceof Error ? { type: reason.name, code: (reason as { code?: unknown }).code } : String(reason) }, 'unhandled rejection (a bug: please report it); the service carries on');
  });
  // Only the embedded store binds the directory; a CLI beside a starting service then waits for it.
  if (config.PORT !== 0) await assertPortFree(config.HOST, config.PORT);
  if (!config.CLICKHOUSE_URL && dataDirHolder(config.DATA_DIR) === undefined) markServiceStarting(config.DATA_DIR);
  const service = await startService(config, { logger, extensions: await serviceExtensions(config) });
  return new Promise<number>((resolve) => {
    let stopping = false;
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down');
      const deadline = setTimeout(() => {
        logger.error({ timeoutMs: config.SHUTDOWN_TIMEOUT_MS }, 'shutdown took too long; exiting');
        process.exit(1);
      }, config.SHUTDOWN_TIMEOUT_MS);
      deadline.unref();
      service.close().then(
        () => resolve(0),
        (err) => {
          logger.error({ err }, 'shutdown failed');
          resolve(1);
        },
      );
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
}

export async function main(argv: string[]): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h') {
    commandIO().out(usage());
    return name === undefined ? 2 : 0;
  }
  if (name === '--version' || name === '-v' || name === 'version') {
    commandIO().out(`tallyhouse ${packageVersion()} (node ${process.version})\n`);
    return 0;
  }
  const command = commands[name];
  if (!command) {
    // One line and the way on, as git and gh answer a typo (the whole list buried the suggestion).
    commandIO().err(`tallyhouse: unknown command ${JSON.stringify(name)}${didYouMean(name, Object.keys(commands))}\nRun 'tallyhouse --help' to list the commands.\n`);
    return 2;
  }
  // `--help` on any command and subcommand, answered before any configuration is read or store opened.
  if (wantsHelp(rest)) return commandHelp(name, command, rest);
  // While a service holds the data directory (or TALLYHOUSE_URL names one), it runs the command for us.
  if (HOSTED_COMMANDS.has(name) && !commandHost()) {
    const { findService, runInService } = await import('./cli/remote.js');
    const target = await findService(getConfig().DATA_DIR);
    if (target) return runInService(target, command.handOff ? [name, ...(await command.handOff(rest))] : argv);
  }
  if (command.raw) return command.raw(rest);
  let parsed: { values: Record<string, unknown>; positionals: string[] };
  try {
    parsed = parseArgs({
      args: rest,
      options: command.options ?? {},
      allowPositionals: command.allowPositionals ?? false,
      strict: true,
    });
  } catch (err) {
    commandIO().err(`tallyhouse ${name}: ${describeArgsError(err, Object.keys(command.options ?? {}))}\nUsage: ${command.usage}\n`);
    return 2;
  }
  return command.run!(parsed);
}

/**
 * Errors whose message says all a person needs (a conflict, an unreachable store, a migration refused): one line,
 * no stack. By the classes' names, which each sets, so this module need not load the store to recognise them.
 */
const ONE_LINE_ERRORS = new Set([
  'StoreUnavailableError',
  'MigrationError',
  'PortInUseError',
  'DataDirInUseError',
  'EmbeddedStoreMissingError',
  'ServiceUnreachableError',
  'UnrequestedFileError',
  'StorePlatformError',
]);

export function reportFatal(err: unknown, write: (text: string) => void = (t) => void process.stderr.write(t)): number {
  if (err instanceof ConfigError) {
    write(`tallyhouse: ${err.message}\n`);
    return 2;
  }
  if (err instanceof Error && ONE_LINE_ERRORS.has(err.name)) {
    write(`tallyhouse: ${err.message}\n`);
    // A conflict a retry resolves says so by its code (DataDirInUseError: 75, EX_TEMPFAIL); the others exit 1.
    const code = (err as { exitCode?: unknown }).exitCode;
    return typeof code === 'number' ? code : 1;
  }
  // Anything else is a bug: one line naming it, and the stack only when asked for (--debug, LOG_LEVEL=debug).
  if (err instanceof Error && !debugRequested()) {
    write(`tallyhouse: ${err.name}: ${err.message} (unexpected: run it again with --debug or LOG_LEVEL=debug for the stack, and report it)\n`);
    return 1;
  }
  write(`tallyhouse: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  return 1;
}

let debugFlag = false;
function debugRequested(): boolean {
  return debugFlag || ['debug', 'trace'].includes(process.env.LOG_LEVEL ?? '') || ['debug', 'trace'].includes(process.env.CLI_LOG_LEVEL ?? '');
}

export type { Config };

/** The process entry (bin/tallyhouse.js): runs a command and exits with its code. */
export async function run(argv: string[]): Promise<never> {
  const { EXIT_BROKEN_PIPE, flushStdio, stdoutClosed, watchStdio } = await import('./stdio.js');
  watchStdio();
  let code: number;
  // `--debug` anywhere: stacks of unexpected errors are printed (it is no command's option).
  if (argv.includes('--debug')) {
    debugFlag = true;
    argv = argv.filter((a) => a !== '--debug');
  }
  try {
    code = await main(argv);
  } catch (err) {
    code = reportFatal(err);
  }
  // Output goes out whole, also into a slow pipe: exiting with output still queued cut it at the pipe's 64 KiB.
  await flushStdio();
  if (stdoutClosed() && code === 0) code = EXIT_BROKEN_PIPE;
  process.exit(code);
}
